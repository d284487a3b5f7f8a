import { Cron } from 'croner';
import { EdgeError, invalidField } from '../../core/errors.js';
import { advanceCursor, deleteCursor, openCursor, readCursor, type LoggedChange } from '../../events/cursors.js';
import type { ProjectLease, ProjectRegistry } from '../../project/registry.js';
import { jobsStore, type ScheduleRow, type ScheduleStore } from './jobs-store.js';
import { SERVICE_CALLER, type JobsService } from './jobs.js';

/** A deploy option `schedules` entry: a 5-field cron pattern read in UTC, and the job's args. */
export interface ScheduleSpec {
  cron: string;
  args?: unknown;
}

export type TriggerEvent = 'insert' | 'update' | 'delete';

/** A deploy option `triggers` entry: changes of `table` of these kinds whose record has every `filter` field equal. */
export interface TriggerSpec {
  table: string;
  events: TriggerEvent[];
  filter?: Record<string, unknown>;
}

export const MAX_SCHEDULES = 10;
export const MAX_TRIGGERS = 10;
/** The consumer cursor triggers read the change log through. */
export const TRIGGER_CURSOR = 'triggers';
const EVENTS: readonly TriggerEvent[] = ['insert', 'update', 'delete'];
const TABLE = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

const cronOf = (pattern: string): Cron => new Cron(pattern, { timezone: 'UTC', mode: '5-part', paused: true });

/** The first firing of `pattern` after `afterMs` (null: it never fires again). */
export function nextFiring(pattern: string, afterMs: number): number | null {
  const d = cronOf(pattern).nextRun(new Date(afterMs));
  return d ? d.getTime() : null;
}

/** Validates the deploy option `schedules` (absent: none). */
export function parseSchedules(v: unknown): ScheduleSpec[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.length > MAX_SCHEDULES) throw invalidField('schedules', `an array of at most ${MAX_SCHEDULES} {cron, args?}`);
  return v.map((s: unknown, i) => {
    if (typeof s !== 'object' || s === null || Array.isArray(s)) throw invalidField(`schedules[${i}]`, 'an object {cron, args?}');
    const { cron, args, ...rest } = s as Record<string, unknown>;
    const extra = Object.keys(rest)[0];
    if (extra !== undefined) throw invalidField(`schedules[${i}].${extra}`, 'unknown field');
    if (typeof cron !== 'string' || cron.trim().split(/\s+/).length !== 5) throw invalidField(`schedules[${i}].cron`, 'a cron pattern of 5 fields (minute hour day month weekday), UTC');
    try {
      cronOf(cron.trim());
    } catch (err) {
      throw invalidField(`schedules[${i}].cron`, err instanceof Error ? err.message.replace(/^CronPattern: /, '') : 'not a cron pattern');
    }
    return args === undefined ? { cron: cron.trim() } : { cron: cron.trim(), args };
  });
}

/** Validates the deploy option `triggers` (absent: none). */
export function parseTriggers(v: unknown): TriggerSpec[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.length > MAX_TRIGGERS) throw invalidField('triggers', `an array of at most ${MAX_TRIGGERS} {table, events, filter?}`);
  return v.map((t: unknown, i) => {
    if (typeof t !== 'object' || t === null || Array.isArray(t)) throw invalidField(`triggers[${i}]`, 'an object {table, events, filter?}');
    const { table, events, filter, ...rest } = t as Record<string, unknown>;
    const extra = Object.keys(rest)[0];
    if (extra !== undefined) throw invalidField(`triggers[${i}].${extra}`, 'unknown field');
    if (typeof table !== 'string' || !TABLE.test(table)) throw invalidField(`triggers[${i}].table`, 'a table name');
    if (!Array.isArray(events) || events.length === 0 || !events.every((e) => EVENTS.includes(e as TriggerEvent))) {
      throw invalidField(`triggers[${i}].events`, 'a non-empty array of "insert", "update", "delete"');
    }
    if (filter !== undefined && (typeof filter !== 'object' || filter === null || Array.isArray(filter))) {
      throw invalidField(`triggers[${i}].filter`, 'an object of field: value (all must be equal)');
    }
    const spec: TriggerSpec = { table, events: [...new Set(events as TriggerEvent[])] };
    if (filter !== undefined) spec.filter = filter as Record<string, unknown>;
    return spec;
  });
}

/** The args of a trigger's job: the webhook payload of the change (docs/api.md "Webhook delivery"). */
export function triggerPayload(c: LoggedChange): Record<string, unknown> {
  return { id: String(c.seq), type: `db.${c.op}`, table: c.table, record: c.data, old_record: c.old, occurred_at: c.at };
}

function matches(c: LoggedChange, t: { tbl: string; events: TriggerEvent[]; filter: Record<string, unknown> | null }): boolean {
  if (c.table !== t.tbl || !t.events.includes(c.op)) return false;
  if (t.filter === null) return true;
  const rec = (c.op === 'delete' ? c.old : c.data) ?? {};
  for (const [k, v] of Object.entries(t.filter)) {
    if (JSON.stringify(rec[k] ?? null) !== JSON.stringify(v)) return false;
  }
  return true;
}

/**
 * Schedules and change triggers of functions. Schedules live in the control index (so a closed
 * project's cron fires); each firing enqueues one service-role job, and firings missed while
 * the process was down fire once, never as a backlog. Triggers live in the project file and read
 * its change log through the `triggers` cursor: each matching change enqueues one job, in the
 * same transaction that moves the cursor on, so none is lost or doubled.
 */
export class FunctionScheduler {
  readonly #jobs: JobsService;
  readonly #registry: ProjectRegistry;
  readonly #index: ScheduleStore;
  readonly #log: (msg: string, err?: unknown) => void;
  readonly #triggerProjects: Set<string>;
  readonly #pending = new Set<string>();

  constructor(jobs: JobsService, registry: ProjectRegistry, log: (msg: string, err?: unknown) => void = () => {}) {
    this.#jobs = jobs;
    this.#registry = registry;
    this.#index = jobs.index;
    this.#log = log;
    this.#triggerProjects = new Set(this.#index.triggerProjects());
  }

  /** Replaces a function's schedules (deploy); each first fires at its next firing from now. */
  setSchedules(projectId: string, fn: string, specs: readonly ScheduleSpec[]): void {
    const now = this.#jobs.clock.now();
    const rows: Array<Omit<ScheduleRow, 'project_id' | 'function'>> = [];
    specs.forEach((s, idx) => {
      const next = nextFiring(s.cron, now);
      if (next !== null) rows.push({ idx, cron: s.cron, args: JSON.stringify(s.args ?? null), next_ms: next });
    });
    this.#index.replace(projectId, fn, rows);
  }

  schedules(projectId: string, fn: string): Array<{ cron: string; args: unknown; next_run_at: string }> {
    return this.#index.list(projectId, fn).map((r) => ({ cron: r.cron, args: JSON.parse(r.args) as unknown, next_run_at: new Date(r.next_ms).toISOString() }));
  }

  /** Replaces a function's change triggers (deploy); they see changes committed from now on. */
  setTriggers(p: ProjectLease, fn: string, specs: readonly TriggerSpec[]): void {
    // note: catch the cursor up first, so changes before this deploy go to the triggers that were there then.
    this.processTriggers(p);
    p.db.transaction(() => {
      jobsStore.setTriggers(
        p,
        fn,
        specs.map((t, idx) => ({ idx, tbl: t.table, events: JSON.stringify(t.events), filter: t.filter === undefined ? null : JSON.stringify(t.filter) })),
      );
      const any = jobsStore.triggers(p).length > 0;
      // note: without triggers the cursor goes, so it no longer holds the change log's retention back
      // (and triggers deployed later start from their deploy, not from where it stopped).
      if (any) openCursor(p, TRIGGER_CURSOR, { from: 'now' });
      else deleteCursor(p, TRIGGER_CURSOR);
      this.#index.setTriggerProject(p.projectId, any);
      if (any) this.#triggerProjects.add(p.projectId);
      else this.#triggerProjects.delete(p.projectId);
    })();
  }

  /** A function was deleted: its schedules and triggers go, its waiting jobs go `dead`. */
  functionDeleted(p: ProjectLease, fn: string): void {
    this.#index.forgetFunction(p.projectId, fn);
    this.setTriggers(p, fn, []);
    this.#jobs.functionDeleted(p, fn);
  }

  projectDeleted(projectId: string): void {
    this.#index.forgetProject(projectId);
    this.#triggerProjects.delete(projectId);
  }

  /** Enqueues one job for every schedule due now and moves each to its next firing after now. */
  fireDue(): number {
    const now = this.#jobs.clock.now();
    let fired = 0;
    for (const r of this.#index.due(now, 100)) {
      const next = nextFiring(r.cron, now);
      let lease: ProjectLease | null = null;
      try {
        lease = this.#registry.acquire(r.project_id);
        // note: the key makes a firing enqueue once even when moving the schedule on fails after it.
        this.#jobs.enqueue(lease, SERVICE_CALLER, { function: r.function, args: JSON.parse(r.args) as unknown, idempotency_key: `schedule:${r.function}:${r.idx}:${r.next_ms}` });
        fired++;
      } catch (err) {
        if (err instanceof EdgeError && err.code === 'not_found' && lease === null) {
          this.projectDeleted(r.project_id);
          continue;
        }
        this.#log(`schedule ${r.idx} of function ${r.function} (project ${r.project_id}) did not enqueue`, err);
      } finally {
        lease?.release();
      }
      if (next === null) this.#index.forgetFunction(r.project_id, r.function);
      else this.#index.advance(r, next);
    }
    return fired;
  }

  /** A change was committed in a project: its triggers read it on the next turn (coalesced). */
  changed(projectId: string): void {
    if (!this.#triggerProjects.has(projectId) || this.#pending.has(projectId)) return;
    this.#pending.add(projectId);
    setImmediate(() => {
      this.#pending.delete(projectId);
      this.#withProject(projectId, (p) => this.processTriggers(p));
    });
  }

  /** Reads every project with triggers up to its newest change (at start: changes made while down). */
  catchUp(): void {
    for (const id of [...this.#triggerProjects]) this.#withProject(id, (p) => this.processTriggers(p));
  }

  #withProject(id: string, fn: (p: ProjectLease) => void): void {
    let p: ProjectLease;
    try {
      p = this.#registry.acquire(id);
    } catch (err) {
      if (err instanceof EdgeError && err.code === 'not_found') this.projectDeleted(id);
      else this.#log(`triggers of project ${id} not read`, err);
      return;
    }
    try {
      fn(p);
    } catch (err) {
      this.#log(`triggers of project ${id} not read`, err);
    } finally {
      p.release();
    }
  }

  /** Enqueues a job per (change, matching trigger) after the `triggers` cursor; how many. */
  processTriggers(p: ProjectLease): number {
    const rows = jobsStore.triggers(p);
    if (rows.length === 0) return 0;
    const triggers = rows.map((r) => ({ function: r.function, tbl: r.tbl, events: JSON.parse(r.events) as TriggerEvent[], filter: r.filter === null ? null : (JSON.parse(r.filter) as Record<string, unknown>) }));
    openCursor(p, TRIGGER_CURSOR, { from: 'now' });
    let enqueued = 0;
    for (;;) {
      const read = readCursor(p, TRIGGER_CURSOR, 500);
      if (read.gap) {
        this.#log(`triggers of project ${p.projectId} missed changes before seq ${read.oldest_seq} (change log cap)`);
        advanceCursor(p, TRIGGER_CURSOR, read.oldest_seq - 1);
        continue;
      }
      if (read.changes.length === 0) return enqueued;
      p.db.transaction(() => {
        for (const c of read.changes) {
          for (const t of triggers) {
            if (!matches(c, t)) continue;
            try {
              this.#jobs.enqueue(p, SERVICE_CALLER, { function: t.function, args: triggerPayload(c) });
              enqueued++;
            } catch (err) {
              // note: one trigger that cannot enqueue (its function went) must not hold the cursor back for the others.
              this.#log(`trigger of function ${t.function} (project ${p.projectId}) did not enqueue`, err);
            }
          }
        }
        advanceCursor(p, TRIGGER_CURSOR, read.changes.at(-1)!.seq);
      })();
    }
  }
}
