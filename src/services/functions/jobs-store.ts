import type Database from 'better-sqlite3';
import type { ProjectLease } from '../../project/registry.js';

/** A job row as stored (`_svc_functions.jobs`). */
export interface JobRow {
  id: string;
  function: string;
  args: string;
  status: JobStatus;
  run_at: string;
  due_ms: number | null;
  attempts: number;
  max_attempts: number;
  user_id: string | null;
  role: string;
  scopes: string | null;
  idem_key: string | null;
  created_ms: number;
  created_at: string;
  claim: string | null;
  result: string | null;
  logs: string | null;
  last_error: string | null;
  finished_at: string | null;
}

export type JobStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'dead' | 'cancelled';

export interface TriggerRow {
  function: string;
  idx: number;
  tbl: string;
  events: string;
  filter: string | null;
}

const T = '"_svc_functions.jobs"';
const TR = '"_svc_functions.triggers"';

/** The claim query: due claimable rows in due order, through the partial index `jobs_claim`. */
export const CLAIM_SQL = `SELECT id, function, status, attempts, max_attempts FROM ${T} WHERE status IN ('queued','failed','running') AND due_ms <= ? ORDER BY due_ms LIMIT ?`;

/** The SQL of jobs in a project file. */
export const jobsStore = {
  insert(p: ProjectLease, r: Omit<JobRow, 'claim' | 'result' | 'logs' | 'last_error' | 'finished_at'>): void {
    p.stmt(
      `INSERT INTO ${T} (id, function, args, status, run_at, due_ms, attempts, max_attempts, user_id, role, scopes, idem_key, created_ms, created_at)
       VALUES (@id, @function, @args, @status, @run_at, @due_ms, @attempts, @max_attempts, @user_id, @role, @scopes, @idem_key, @created_ms, @created_at)`,
    ).run(r);
  },

  get(p: ProjectLease, id: string): JobRow | null {
    return (p.stmt(`SELECT * FROM ${T} WHERE id = ?`).get(id) as JobRow | undefined) ?? null;
  },

  /** The newest job under an idempotency key created at or after `sinceMs`. */
  byIdempotencyKey(p: ProjectLease, key: string, sinceMs: number): JobRow | null {
    return (p.stmt(`SELECT * FROM ${T} WHERE idem_key = ? AND created_ms >= ? ORDER BY created_ms DESC LIMIT 1`).get(key, sinceMs) as JobRow | undefined) ?? null;
  },

  /** Releases an expired idempotency key (the index then stays small). */
  forgetIdempotencyKey(p: ProjectLease, key: string): void {
    p.stmt(`UPDATE ${T} SET idem_key = NULL WHERE idem_key = ?`).run(key);
  },

  /** A page of jobs, newest first, optionally of one status and one enqueuer (`user` undefined: all). */
  list(p: ProjectLease, status: JobStatus | null, user: string | null | undefined, limit: number, offset: number): JobRow[] {
    const where: string[] = [];
    const params: unknown[] = [];
    if (status !== null) {
      where.push('status = ?');
      params.push(status);
    }
    if (user !== undefined) {
      where.push(user === null ? 'user_id IS NULL' : 'user_id = ?');
      if (user !== null) params.push(user);
    }
    const sql = `SELECT * FROM ${T}${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ? OFFSET ?`;
    return p.stmt(sql).all(...params, limit, offset) as JobRow[];
  },

  /** Up to `limit` claimable jobs due at `nowMs` (CLAIM_SQL). */
  due(p: ProjectLease, nowMs: number, limit: number): Array<Pick<JobRow, 'id' | 'function' | 'status' | 'attempts' | 'max_attempts'>> {
    return p.stmt(CLAIM_SQL).all(nowMs, limit) as Array<Pick<JobRow, 'id' | 'function' | 'status' | 'attempts' | 'max_attempts'>>;
  },

  /** Marks a job running under `claim` until `leaseEndMs`, counting the attempt. */
  claim(p: ProjectLease, id: string, claim: string, leaseEndMs: number): void {
    p.stmt(`UPDATE ${T} SET status = 'running', attempts = attempts + 1, due_ms = ?, claim = ? WHERE id = ?`).run(leaseEndMs, claim, id);
  },

  /** The earliest due_ms of a claimable job, or null when none is left. */
  nextDue(p: ProjectLease): number | null {
    return (p.stmt(`SELECT min(due_ms) FROM ${T} WHERE status IN ('queued','failed','running')`).pluck().get() as number | null) ?? null;
  },

  /** Ends the attempt `claim` (only while it still holds the job); whether it did. */
  finish(
    p: ProjectLease,
    id: string,
    claim: string,
    f: { status: JobStatus; due_ms: number | null; result: string | null; logs: string | null; last_error: string | null; finished_at: string | null },
  ): boolean {
    return (
      p
        .stmt(
          `UPDATE ${T} SET status = @status, due_ms = @due_ms, result = @result, logs = @logs, last_error = @last_error, finished_at = @finished_at, claim = NULL
           WHERE id = @id AND claim = @claim AND status = 'running'`,
        )
        .run({ ...f, id, claim }).changes === 1
    );
  },

  /** Moves a job from one of `from` to `to` (cancel, retry, dead); whether it did. */
  transition(p: ProjectLease, id: string, from: readonly JobStatus[], set: { status: JobStatus; due_ms: number | null; attempts?: number; last_error?: string | null; finished_at: string | null }): boolean {
    const sets = ['status = @status', 'due_ms = @due_ms', 'finished_at = @finished_at', 'claim = NULL'];
    if (set.attempts !== undefined) sets.push('attempts = @attempts');
    if (set.last_error !== undefined) sets.push('last_error = @last_error');
    const sql = `UPDATE ${T} SET ${sets.join(', ')} WHERE id = @id AND status IN (${from.map((s) => `'${s}'`).join(',')})`;
    return p.stmt(sql).run({ attempts: null, last_error: null, ...set, id }).changes === 1;
  },

  /** Sends every waiting job of a function to `dead` (the function was deleted); how many. */
  killFunction(p: ProjectLease, fn: string, why: string, at: string): number {
    return p
      .stmt(`UPDATE ${T} SET status = 'dead', due_ms = NULL, last_error = ?, finished_at = ?, claim = NULL WHERE function = ? AND status IN ('queued','failed')`)
      .run(why, at, fn).changes;
  },

  /**
   * Deletes up to `limit` finished jobs (succeeded, cancelled, dead) whose id is below `beforeId`
   * (ids are UUIDv7: ordered by creation time), through the (status, id) index; how many.
   */
  pruneFinished(p: ProjectLease, beforeId: string, limit: number): number {
    let n = 0;
    for (const status of ['succeeded', 'cancelled', 'dead']) {
      if (n >= limit) break;
      n += p.stmt(`DELETE FROM ${T} WHERE id IN (SELECT id FROM ${T} WHERE status = ? AND id < ? ORDER BY id LIMIT ?)`).run(status, beforeId, limit - n).changes;
    }
    return n;
  },

  /** The query plan of the claim query (a test shows it uses the index). */
  claimPlan(db: Database.Database): string[] {
    return (db.prepare(`EXPLAIN QUERY PLAN ${CLAIM_SQL}`).all(0, 1) as Array<{ detail: string }>).map((r) => r.detail);
  },

  // --- triggers

  setTriggers(p: ProjectLease, fn: string, rows: Array<Omit<TriggerRow, 'function'>>): void {
    p.stmt(`DELETE FROM ${TR} WHERE function = ?`).run(fn);
    const ins = p.stmt(`INSERT INTO ${TR} (function, idx, tbl, events, filter) VALUES (@function, @idx, @tbl, @events, @filter)`);
    for (const r of rows) ins.run({ ...r, function: fn });
  },

  triggers(p: ProjectLease): TriggerRow[] {
    return p.stmt(`SELECT function, idx, tbl, events, filter FROM ${TR} ORDER BY function, idx`).all() as TriggerRow[];
  },
};

/** The SQL of the control plane's function indexes (`control.db`: fn_schedules, fn_job_wakeups, fn_trigger_projects). */
export interface ScheduleRow {
  project_id: string;
  function: string;
  idx: number;
  cron: string;
  args: string;
  next_ms: number;
}

export class ScheduleStore {
  /**
   * Each project's wakeup as this process last wrote it (undefined: not known): a write that
   * would change nothing is skipped — enqueueing into a project that already has an earlier
   * job due then costs no control.db transaction.
   */
  readonly #wakeups = new Map<string, number | null>();

  constructor(readonly db: Database.Database) {}

  replace(projectId: string, fn: string, rows: Array<Omit<ScheduleRow, 'project_id' | 'function'>>): void {
    this.db.transaction(() => {
      this.db.prepare('DELETE FROM fn_schedules WHERE project_id = ? AND function = ?').run(projectId, fn);
      const ins = this.db.prepare('INSERT INTO fn_schedules (project_id, function, idx, cron, args, next_ms) VALUES (?, ?, ?, ?, ?, ?)');
      for (const r of rows) ins.run(projectId, fn, r.idx, r.cron, r.args, r.next_ms);
    })();
  }

  list(projectId: string, fn: string): ScheduleRow[] {
    return this.db.prepare('SELECT * FROM fn_schedules WHERE project_id = ? AND function = ? ORDER BY idx').all(projectId, fn) as ScheduleRow[];
  }

  due(nowMs: number, limit: number): ScheduleRow[] {
    return this.db.prepare('SELECT * FROM fn_schedules WHERE next_ms <= ? ORDER BY next_ms LIMIT ?').all(nowMs, limit) as ScheduleRow[];
  }

  /** Moves one schedule on from the firing `fromMs` (only if nobody else did); whether it did. */
  advance(r: ScheduleRow, nextMs: number): boolean {
    return (
      this.db
        .prepare('UPDATE fn_schedules SET next_ms = ? WHERE project_id = ? AND function = ? AND idx = ? AND next_ms = ?')
        .run(nextMs, r.project_id, r.function, r.idx, r.next_ms).changes === 1
    );
  }

  nextFiring(): number | null {
    return (this.db.prepare('SELECT min(next_ms) FROM fn_schedules').pluck().get() as number | null) ?? null;
  }

  /** Lowers a project's wakeup to `dueMs` (never raises it). */
  wake(projectId: string, dueMs: number): void {
    const known = this.#wakeups.get(projectId);
    if (known !== undefined && known !== null && known <= dueMs) return;
    this.db
      .prepare('INSERT INTO fn_job_wakeups (project_id, due_ms) VALUES (?, ?) ON CONFLICT(project_id) DO UPDATE SET due_ms = excluded.due_ms WHERE excluded.due_ms < due_ms')
      .run(projectId, dueMs);
    // note: known (later, or none): the row now holds dueMs; unknown: it holds the smaller of both, still unknown.
    if (known !== undefined) this.#wakeups.set(projectId, dueMs);
  }

  /** Sets a project's wakeup to exactly `dueMs` (null: nothing waits). */
  setWakeup(projectId: string, dueMs: number | null): void {
    if (this.#wakeups.get(projectId) === dueMs) return;
    this.#wakeups.set(projectId, dueMs);
    if (dueMs === null) this.db.prepare('DELETE FROM fn_job_wakeups WHERE project_id = ?').run(projectId);
    else this.db.prepare('INSERT INTO fn_job_wakeups (project_id, due_ms) VALUES (?, ?) ON CONFLICT(project_id) DO UPDATE SET due_ms = excluded.due_ms').run(projectId, dueMs);
  }

  dueProjects(nowMs: number, limit: number): string[] {
    return this.db.prepare('SELECT project_id FROM fn_job_wakeups WHERE due_ms <= ? ORDER BY due_ms LIMIT ?').pluck().all(nowMs, limit) as string[];
  }

  nextWakeup(): number | null {
    return (this.db.prepare('SELECT min(due_ms) FROM fn_job_wakeups').pluck().get() as number | null) ?? null;
  }

  setTriggerProject(projectId: string, on: boolean): void {
    if (on) this.db.prepare('INSERT OR IGNORE INTO fn_trigger_projects (project_id) VALUES (?)').run(projectId);
    else this.db.prepare('DELETE FROM fn_trigger_projects WHERE project_id = ?').run(projectId);
  }

  triggerProjects(): string[] {
    return this.db.prepare('SELECT project_id FROM fn_trigger_projects').pluck().all() as string[];
  }

  /** Forgets a deleted project. */
  forgetProject(projectId: string): void {
    this.#wakeups.delete(projectId);
    this.db.transaction(() => {
      this.db.prepare('DELETE FROM fn_schedules WHERE project_id = ?').run(projectId);
      this.db.prepare('DELETE FROM fn_job_wakeups WHERE project_id = ?').run(projectId);
      this.db.prepare('DELETE FROM fn_trigger_projects WHERE project_id = ?').run(projectId);
    })();
  }

  forgetFunction(projectId: string, fn: string): void {
    this.db.prepare('DELETE FROM fn_schedules WHERE project_id = ? AND function = ?').run(projectId, fn);
  }
}
