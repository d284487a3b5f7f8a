import { existsSync } from 'node:fs';
import { EdgeError } from '../edge/errors.js';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Config } from '../config.js';
import { schemaDir } from '../paths.js';
import { loadMigrations, migrate } from './migrate.js';
import { applyPragmas } from './pragmas.js';

/** A leased handle on one project's database; release it when the request is done. */
export interface ProjectLease {
  readonly projectId: string;
  readonly db: Database.Database;
  /** A prepared statement from the project's bounded cache. */
  stmt(sql: string): Database.Statement;
  release(): void;
}

interface Entry {
  readonly db: Database.Database;
  readonly stmts: Map<string, Database.Statement>;
  lastUsed: number;
  leases: number;
}

const MAX_STMTS = 256;

/**
 * Opens each project's SQLite file once and caches it (STYLE.md 3.5). The open path
 * is synchronous, so two concurrent first requests cannot open a file twice.
 */
export class ProjectRegistry {
  readonly #config: Config;
  readonly #entries = new Map<string, Entry>();
  readonly #timer: NodeJS.Timeout;
  readonly #now: () => number;

  constructor(config: Config, now: () => number = Date.now) {
    this.#config = config;
    this.#now = now;
    this.#timer = setInterval(() => this.closeIdle(), Math.max(1000, Math.min(config.projectIdleMs, 60_000)));
    this.#timer.unref();
  }

  dir(projectId: string): string {
    return join(this.#config.dataDir, 'projects', projectId);
  }

  acquire(projectId: string): ProjectLease {
    let entry = this.#entries.get(projectId);
    if (!entry) entry = this.#open(projectId);
    else {
      // note: re-insert to keep the Map in least-recently-used order.
      this.#entries.delete(projectId);
      this.#entries.set(projectId, entry);
    }
    entry.leases++;
    entry.lastUsed = this.#now();
    const e = entry;
    let released = false;
    return {
      projectId,
      db: e.db,
      stmt: (sql) => {
        let s = e.stmts.get(sql);
        if (!s) {
          if (e.stmts.size >= MAX_STMTS) e.stmts.delete(e.stmts.keys().next().value!);
          s = e.db.prepare(sql);
          e.stmts.set(sql, s);
        }
        return s;
      },
      release: () => {
        if (released) return;
        released = true;
        e.leases--;
        e.lastUsed = this.#now();
      },
    };
  }

  get openCount(): number {
    return this.#entries.size;
  }

  #open(projectId: string): Entry {
    const dir = this.dir(projectId);
    // note: the folder is made when the project is created; a missing one means a deleted project.
    if (!existsSync(dir)) throw new EdgeError('not_found', `project ${projectId} does not exist`);
    const trace = this.#config.sqlTrace;
    const db = new Database(join(dir, 'project.db'), trace ? { verbose: (sql) => trace(String(sql)) } : {});
    try {
      applyPragmas(db, this.#config.durability);
      migrate(db, loadMigrations(join(schemaDir(), 'project')), '"_svc_meta.migrations"');
    } catch (err) {
      db.close();
      throw err;
    }
    const entry: Entry = { db, stmts: new Map(), lastUsed: this.#now(), leases: 0 };
    this.#entries.set(projectId, entry);
    this.#evictOverflow();
    return entry;
  }

  #evictOverflow(): void {
    for (const [id, e] of this.#entries) {
      if (this.#entries.size <= this.#config.maxOpenProjects) return;
      if (e.leases === 0) this.#close(id, e);
    }
  }

  /** Closes projects idle longer than the configured time and not leased. */
  closeIdle(): void {
    const cutoff = this.#now() - this.#config.projectIdleMs;
    for (const [id, e] of this.#entries) {
      if (e.leases === 0 && e.lastUsed <= cutoff) this.#close(id, e);
    }
  }

  /** Closes one project's database (e.g. before deleting its folder). */
  forget(projectId: string): void {
    const e = this.#entries.get(projectId);
    if (e) this.#close(projectId, e);
  }

  openIds(): string[] {
    return [...this.#entries.keys()];
  }

  isOpen(projectId: string): boolean {
    return this.#entries.has(projectId);
  }

  #close(id: string, e: Entry): void {
    this.#entries.delete(id);
    try {
      e.db.pragma('optimize');
      e.db.pragma('wal_checkpoint(TRUNCATE)');
    } catch {
      // note: closing must not fail because a maintenance pragma did.
    }
    e.db.close();
  }

  closeAll(): void {
    clearInterval(this.#timer);
    for (const [id, e] of this.#entries) this.#close(id, e);
  }
}
