import type { ProjectLease, ProjectRegistry } from '../../project/registry.js';
import type { LocalObjectStore } from './object-store.js';
import type { UploadService } from './uploads.js';

/** A temp file of `objects/.tmp/` untouched this long is a crash's leftover (docs/api.md "Storage housekeeping"). */
export const STALE_TEMP_MS = 60 * 60 * 1000;
/** Entries looked at (temp files) and expired uploads removed per project and sweep. */
export const SWEEP_BATCH = 1000;

export interface HousekeepingOptions {
  /** A project is swept at most once per this many ms (default 10 min). */
  readonly everyMs?: number;
  readonly staleTempMs?: number;
  readonly now?: () => number;
  readonly log?: (msg: string, err?: unknown) => void;
}

/**
 * Storage upkeep per project, off the request path: temp files a crash left in `objects/.tmp/`
 * and expired multipart/TUS uploads (row and file). Asked for as a project opens and on the
 * maintenance timer (server.ts); each project at most once per `everyMs`, one sweep at a time,
 * bounded work per sweep (the rest is left for the next one).
 */
export class StorageHousekeeper {
  readonly #registry: ProjectRegistry;
  readonly #objects: LocalObjectStore;
  readonly #uploads: UploadService;
  readonly #everyMs: number;
  readonly #staleMs: number;
  readonly #now: () => number;
  readonly #log: (msg: string, err?: unknown) => void;
  readonly #last = new Map<string, number>();
  readonly #running = new Set<string>();
  #closed = false;

  constructor(registry: ProjectRegistry, objects: LocalObjectStore, uploads: UploadService, opts: HousekeepingOptions = {}) {
    this.#registry = registry;
    this.#objects = objects;
    this.#uploads = uploads;
    this.#everyMs = opts.everyMs ?? 10 * 60 * 1000;
    this.#staleMs = opts.staleTempMs ?? STALE_TEMP_MS;
    this.#now = opts.now ?? Date.now;
    this.#log = opts.log ?? (() => {});
  }

  /** Asks for a sweep of the project; it runs on a later turn (never inside an open or a request). Resolves when done or skipped. */
  schedule(projectId: string): Promise<void> {
    const now = this.#now();
    const last = this.#last.get(projectId);
    if (this.#closed || this.#running.has(projectId) || (last !== undefined && now - last < this.#everyMs)) return Promise.resolve();
    this.#last.set(projectId, now);
    this.#running.add(projectId);
    return new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.#sweep(projectId))
      .finally(() => this.#running.delete(projectId));
  }

  async #sweep(projectId: string): Promise<void> {
    if (this.#closed) return;
    let lease: ProjectLease;
    try {
      lease = this.#registry.acquire(projectId);
    } catch {
      return; // note: deleted meanwhile: its folder went with it.
    }
    try {
      await this.#uploads.sweep(lease, SWEEP_BATCH);
      await this.#objects.sweepTemp(projectId, this.#now() - this.#staleMs, SWEEP_BATCH);
    } catch (err) {
      this.#log(`storage housekeeping of project ${projectId} failed`, err);
    } finally {
      lease.release();
    }
  }

  forget(projectId: string): void {
    this.#last.delete(projectId);
  }

  close(): void {
    this.#closed = true;
  }
}
