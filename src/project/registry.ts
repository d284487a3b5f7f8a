import { existsSync } from 'node:fs';
import { EdgeError } from '../core/errors.js';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Config } from '../config.js';
import { schemaDir } from '../paths.js';
import { type CallerSlot, type CallerValues, withCaller } from '../sql/caller.js';
import { registerProjectSql } from '../sql/register.js';
import { applyRecursion } from '../sql/trigger-bound.js';
import { loadMigrations, migrate } from './migrate.js';
import { applyPragmas, applySizeCap } from './pragmas.js';

/** A leased handle on one project's database; release it when the request is done. */
export interface ProjectLease {
  readonly projectId: string;
  readonly db: Database.Database;
  /** A prepared statement from the project's bounded cache; `raw` ones return rows as arrays. */
  stmt(sql: string, raw?: boolean): Database.Statement;
  /**
   * A value kept for this open connection under `key` (a module-named constant, e.g.
   * 'query.schemas'): built by `build` on first use, then returned as is until the project
   * closes (the value dies with the connection). Pass a module-level `build`, not a new
   * closure per call: the hot path then makes one Map lookup and allocates nothing.
   */
  cache<T>(key: string, build: (lease: ProjectLease) => T): T;
  /**
   * Runs a write as `who`: what a stored default's `auth.uid()` (`pe_caller_uid()`) reads on this
   * connection meanwhile (src/sql/caller.ts); null, or outside, reads NULL. Synchronous only.
   */
  asCaller<T>(who: CallerValues | null, fn: () => T): T;
  release(): void;
}

interface Entry {
  readonly db: Database.Database;
  readonly stmts: Map<string, Database.Statement>;
  /** Statements in raw mode (rows as arrays: no per-row key strings), cached apart. */
  readonly rawStmts: Map<string, Database.Statement>;
  /** Per-connection state of other modules (`ProjectLease.cache`), by key; gone when the connection closes. */
  readonly cache: Map<string, unknown>;
  /** Who runs the write now running on this connection (`ProjectLease.asCaller`). */
  readonly caller: CallerSlot;
  lastUsed: number;
  /** A counter taken on each acquire: the least recently used entry has the smallest. */
  lastSeq: number;
  leases: number;
}

const MAX_STMTS = 256;

/**
 * Opens each project's SQLite file once and caches it (docs/architecture.md "One request's path", step 4). The open path
 * is synchronous, so two concurrent first requests cannot open a file twice.
 */
export class ProjectRegistry {
  readonly #config: Config;
  readonly #entries = new Map<string, Entry>();
  readonly #timer: NodeJS.Timeout;
  readonly #now: () => number;
  #seq = 0;
  #maintain: ((lease: ProjectLease, when: 'open' | 'close') => void) | null = null;

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
    const entry = this.#entries.get(projectId) ?? this.#open(projectId);
    entry.leases++;
    entry.lastUsed = this.#now();
    entry.lastSeq = ++this.#seq;
    return new Lease(projectId, entry, this.#now);
  }

  /**
   * Registers upkeep run on a project right after it opens and right before it closes
   * (idle, over the cap, shutdown; not when forgotten for deletion) — e.g. change-log
   * retention, so it also reaches projects that are not open (server.ts). A failure
   * is the callback's to report; it never fails the open or the close.
   */
  onMaintain(fn: (lease: ProjectLease, when: 'open' | 'close') => void): void {
    this.#maintain = fn;
  }

  #runMaintain(projectId: string, entry: Entry, when: 'open' | 'close'): void {
    if (!this.#maintain) return;
    entry.leases++;
    const lease = new Lease(projectId, entry, this.#now);
    try {
      this.#maintain(lease, when);
    } catch {
      // note: upkeep must not fail an open or a close.
    } finally {
      lease.release();
    }
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
    const caller: CallerSlot = { current: null };
    try {
      applyPragmas(db, this.#config.durability);
      // note: the translator's SQL functions on the project's own connection too (the workers have them), so a
      // CHECK or trigger that calls one (`check (slug ~ '^[a-z0-9-]+$')`, a sign-up trigger reading
      // `new.raw_user_meta_data ->> 'full_name'`) holds on every write path. Never past a deadline here.
      registerProjectSql(db, caller);
      migrate(db, loadMigrations(join(schemaDir(), 'project')), '"_svc_meta.migrations"');
      // note: recursive triggers as Postgres, with the bound above (docs/sql.md "Recursion").
      applyRecursion(db);
      applySizeCap(db, this.#config.maxProjectDbBytes);
    } catch (err) {
      db.close();
      throw err;
    }
    const entry: Entry = { db, stmts: new Map(), rawStmts: new Map(), cache: new Map(), caller, lastUsed: this.#now(), lastSeq: ++this.#seq, leases: 0 };
    this.#entries.set(projectId, entry);
    this.#runMaintain(projectId, entry, 'open');
    this.#evictOverflow();
    return entry;
  }

  /** Closes the least recently used unleased projects past the cap (ordered by `lastSeq`, so acquiring stays O(1)). */
  #evictOverflow(): void {
    const over = this.#entries.size - this.#config.maxOpenProjects;
    if (over <= 0) return;
    const idle = [...this.#entries].filter(([, e]) => e.leases === 0).sort((a, b) => a[1].lastSeq - b[1].lastSeq);
    for (const [id, e] of idle.slice(0, over)) this.#close(id, e);
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
    if (e) this.#close(projectId, e, false);
  }

  openIds(): string[] {
    return [...this.#entries.keys()];
  }

  isOpen(projectId: string): boolean {
    return this.#entries.has(projectId);
  }

  #close(id: string, e: Entry, maintain = true): void {
    if (maintain) this.#runMaintain(id, e, 'close');
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

/** One lease; a class (methods on the prototype), so taking a lease allocates one small object. */
class Lease implements ProjectLease {
  readonly db: Database.Database;
  #released = false;

  constructor(
    readonly projectId: string,
    private readonly entry: Entry,
    private readonly now: () => number,
  ) {
    this.db = entry.db;
  }

  stmt(sql: string, raw = false): Database.Statement {
    const stmts = raw ? this.entry.rawStmts : this.entry.stmts;
    let s = stmts.get(sql);
    if (!s) {
      if (stmts.size >= MAX_STMTS) stmts.delete(stmts.keys().next().value!);
      s = this.entry.db.prepare(sql);
      if (raw) s.raw(true);
      stmts.set(sql, s);
    }
    return s;
  }

  cache<T>(key: string, build: (lease: ProjectLease) => T): T {
    const cache = this.entry.cache;
    let v = cache.get(key) as T | undefined;
    if (v === undefined && !cache.has(key)) {
      v = build(this);
      cache.set(key, v);
    }
    return v as T;
  }

  asCaller<T>(who: CallerValues | null, fn: () => T): T {
    return withCaller(this.entry.caller, who, fn);
  }

  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.entry.leases--;
    this.entry.lastUsed = this.now();
  }
}
