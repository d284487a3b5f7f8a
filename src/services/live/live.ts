import type { Config } from '../../config.js';
import type { ProjectRegistry } from '../../project/registry.js';
import { isoAt } from '../../clock.js';
import { liveStore } from './store.js';
import type { EdgeStats, LiveEvent, LiveStats } from './types.js';

type Listener = (e: LiveEvent) => void;

const WINDOW_S = 10;
/** At most this many events per project reach the table per flush; the rest live only in the ring. */
const MAX_PERSIST_PER_FLUSH = 200;
const MAX_SNAPSHOT_EVENTS = 500;

class ProjectLog {
  readonly ring: LiveEvent[] = [];
  head = 0;
  seq: number;
  pending: LiveEvent[] = [];
  dropped = 0;
  readonly listeners = new Set<Listener>();
  requests = 0;
  errors = 0;
  clientErrors = 0;
  changes = 0;
  readonly buckets = new Array<number>(WINDOW_S).fill(0);
  readonly bucketSecond = new Array<number>(WINDOW_S).fill(0);

  constructor(seq: number) {
    this.seq = seq;
  }
}

/**
 * Per-project live log: a bounded in-memory ring (what /live and /live/stream serve)
 * plus a capped table written in batches, so memory stays flat and the hot path
 * never waits on SQLite.
 */
export class LiveLog {
  readonly #config: Config;
  readonly #projects: ProjectRegistry;
  readonly #edge: () => EdgeStats;
  readonly #logs = new Map<string, ProjectLog>();
  readonly #timer: NodeJS.Timeout;
  readonly #now: () => number;

  constructor(config: Config, projects: ProjectRegistry, edge: () => EdgeStats, now: () => number = Date.now) {
    this.#config = config;
    this.#projects = projects;
    this.#edge = edge;
    this.#now = now;
    this.#timer = setInterval(() => this.flush(), 1000);
    this.#timer.unref();
  }

  recordRequest(projectId: string, method: string, route: string, status: number, durationMs: number): void {
    const log = this.#log(projectId);
    log.requests++;
    if (status >= 500) log.errors++;
    else if (status >= 400) log.clientErrors++;
    const t = this.#now();
    const second = Math.floor(t / 1000);
    const i = second % WINDOW_S;
    if (log.bucketSecond[i] !== second) {
      log.bucketSecond[i] = second;
      log.buckets[i] = 0;
    }
    log.buckets[i]!++;
    this.#push(log, {
      seq: ++log.seq,
      at: isoAt(t),
      kind: 'request',
      method,
      route,
      status,
      duration_ms: Math.round(durationMs * 1000) / 1000,
    });
  }

  recordChange(projectId: string, label: string): void {
    const log = this.#log(projectId);
    log.changes++;
    this.#push(log, { seq: ++log.seq, at: isoAt(this.#now()), kind: 'change', label });
  }

  #push(log: ProjectLog, e: LiveEvent): void {
    const size = this.#config.liveRingSize;
    if (log.ring.length < size) log.ring.push(e);
    else {
      log.ring[log.head] = e;
      log.head = (log.head + 1) % size;
    }
    // note: past the cap, the newest overwrites the oldest pending event in place (no shift()).
    if (log.pending.length < MAX_PERSIST_PER_FLUSH) log.pending.push(e);
    else log.pending[log.dropped++ % MAX_PERSIST_PER_FLUSH] = e;
    for (const fn of log.listeners) fn(e);
  }

  #log(projectId: string): ProjectLog {
    let log = this.#logs.get(projectId);
    if (!log) {
      const lease = this.#projects.acquire(projectId);
      try {
        log = new ProjectLog(liveStore.maxSeq(lease));
      } finally {
        lease.release();
      }
      this.#logs.set(projectId, log);
    }
    return log;
  }

  /** Events after `since` (from the ring, or the table when the ring no longer holds them), the stats and the edge. */
  snapshot(projectId: string, since: number): { seq: number; events: LiveEvent[]; stats: LiveStats; edge: EdgeStats } {
    const log = this.#log(projectId);
    const ordered = this.#ordered(log);
    let events: LiveEvent[];
    if (ordered.length > 0 && since < ordered[0]!.seq - 1) {
      this.flush();
      const lease = this.#projects.acquire(projectId);
      try {
        events = liveStore.since(lease, since, MAX_SNAPSHOT_EVENTS);
      } finally {
        lease.release();
      }
    } else {
      events = ordered.filter((e) => e.seq > since).slice(0, MAX_SNAPSHOT_EVENTS);
    }
    return { seq: log.seq, events, stats: this.stats(projectId), edge: this.#edge() };
  }

  stats(projectId: string): LiveStats {
    const log = this.#log(projectId);
    const second = Math.floor(this.#now() / 1000);
    let recent = 0;
    for (let i = 0; i < WINDOW_S; i++) if (second - log.bucketSecond[i]! < WINDOW_S) recent += log.buckets[i]!;
    const durations = log.ring
      .filter((e): e is Extract<LiveEvent, { kind: 'request' }> => e.kind === 'request')
      .map((e) => e.duration_ms)
      .sort((a, b) => a - b);
    const pct = (p: number): number | null => (durations.length ? durations[Math.min(durations.length - 1, Math.floor(p * durations.length))]! : null);
    return {
      requests: log.requests,
      errors: log.errors,
      client_errors: log.clientErrors,
      changes: log.changes,
      rps: Math.round((recent / WINDOW_S) * 10) / 10,
      p50_ms: pct(0.5),
      p95_ms: pct(0.95),
    };
  }

  edge(): EdgeStats {
    return this.#edge();
  }

  subscribe(projectId: string, fn: Listener): () => void {
    const log = this.#log(projectId);
    log.listeners.add(fn);
    return () => log.listeners.delete(fn);
  }

  #ordered(log: ProjectLog): LiveEvent[] {
    return log.ring.length < this.#config.liveRingSize ? log.ring.slice() : [...log.ring.slice(log.head), ...log.ring.slice(0, log.head)];
  }

  /** Writes pending events to each project's capped table. */
  flush(): void {
    for (const [projectId, log] of this.#logs) {
      if (log.pending.length === 0) continue;
      const batch = log.pending.sort((a, b) => a.seq - b.seq);
      log.pending = [];
      log.dropped = 0;
      try {
        const lease = this.#projects.acquire(projectId);
        try {
          liveStore.append(lease, batch, this.#config.liveTableCap);
        } finally {
          lease.release();
        }
      } catch {
        // note: a project deleted meanwhile has nowhere to write; its ring is dropped by forget().
      }
    }
  }

  forget(projectId: string): void {
    this.#logs.delete(projectId);
  }

  close(): void {
    clearInterval(this.#timer);
    this.flush();
  }
}
