import { randomBytes } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { EdgeError, invalidField, notFound } from '../../core/errors.js';
import type { ProjectLease, ProjectRegistry } from '../../project/registry.js';
import { jobsStore, type JobRow, type JobStatus, type ScheduleStore } from './jobs-store.js';

/** Time and chance, injectable so backoff and cron are tested without waiting. */
export interface JobClock {
  now(): number;
  /** A number in [0, 1) (the backoff's jitter). */
  random(): number;
}
export const systemClock: JobClock = { now: () => Date.now(), random: () => Math.random() };

/**
 * Who enqueued a job, and so as whom it runs: a user id (never a token), a role, and the
 * enqueuing key's scopes (null: the role's: every scope for the service role, else the
 * publishable key's), so a job can do no more than its enqueuer could.
 */
export interface JobCaller {
  userId: string | null;
  role: string;
  scopes: readonly string[] | null;
}
export const SERVICE_CALLER: JobCaller = { userId: null, role: 'service_role', scopes: null };

/** One attempt of a job, as the runner gets it. */
export interface JobRun {
  id: string;
  function: string;
  args: unknown;
  caller: JobCaller;
  /** 1 for the first attempt. */
  attempt: number;
}

/** What a successful attempt returns. */
export interface JobOutcome {
  result: unknown;
  logs: unknown[];
}

/**
 * Runs one attempt (the functions service's invoke path, wired in server.ts). A throw is a
 * failed attempt: its message becomes `last_error`, an array `logs` on it is kept, and
 * `permanent: true` (or a `not_found` EdgeError: the function is gone) skips the retries.
 */
export type JobRunner = (lease: ProjectLease, job: JobRun) => Promise<JobOutcome>;

export interface JobsOptions {
  /** Jobs run at once in this process. */
  concurrency: number;
  /** Jobs of one project run at once. */
  perProject: number;
  /** Added to a function's timeout to make the lease of a claimed job, ms (30 s). */
  leaseGraceMs: number;
  /** The longest the loop sleeps between looks at the control index, ms. */
  pollMs: number;
  /** A function's timeout, ms (the lease is this plus the grace); null: unknown, the longest. */
  timeoutOf?: (lease: ProjectLease, fn: string) => number | null;
  /** Checks that `caller` may enqueue a job of `fn` (throws: 404 unknown function, 401/403 its `access`); absent: not checked. */
  admit?: (lease: ProjectLease, fn: string, caller: JobCaller) => void;
}

export const MAX_ATTEMPTS = 20;
export const DEFAULT_ATTEMPTS = 3;
export const IDEMPOTENCY_WINDOW_MS = 24 * 3600_000;
export const BACKOFF_BASE_MS = 10_000;
export const BACKOFF_CAP_MS = 3600_000;
/** The timeout assumed for a function whose own is unknown (the largest allowed). */
export const LONGEST_TIMEOUT_MS = 30_000;
export const MAX_LIST = 1000;
/** Finished jobs (succeeded, cancelled, dead) are deleted this long after they were created. */
export const RETENTION_MS = 7 * 86_400_000;
/** Each project's finished jobs are pruned at most this often, at most PRUNE_BATCH × PRUNE_ROUNDS at a time. */
const PRUNE_EVERY_MS = 60_000;
const PRUNE_BATCH = 500;
const PRUNE_ROUNDS = 10;

/** The smallest UUIDv7 of the millisecond `ms`: every id made before it sorts below. */
export function v7Floor(ms: number): string {
  const hex = Math.max(0, Math.floor(ms)).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}
const NAME = /^[a-z][a-z0-9_-]{0,62}$/;
const STATUSES: readonly JobStatus[] = ['queued', 'running', 'succeeded', 'failed', 'dead', 'cancelled'];

/**
 * The wait before attempt `failed + 1` after `failed` failed attempts: 10 s × 2^(failed−1), at
 * most 1 h, times a jitter factor in [0.75, 1.25), and never over 1 h.
 */
export function backoffMs(failed: number, random: number): number {
  const d = Math.min(BACKOFF_BASE_MS * 2 ** Math.max(0, failed - 1), BACKOFF_CAP_MS);
  return Math.min(BACKOFF_CAP_MS, Math.round(d * (0.75 + 0.5 * random)));
}

/** A job as `POST /functions/jobs` answers it. */
export interface JobSummary {
  id: string;
  function: string;
  status: JobStatus;
  run_at: string;
  attempts: number;
  max_attempts: number;
  created_at: string;
}

/** A job as `GET /functions/jobs/{id}` answers it. */
export interface JobView extends JobSummary {
  args: unknown;
  result: unknown;
  logs: unknown[];
  last_error: string | null;
  next_run_at: string | null;
  finished_at: string | null;
}

const summary = (r: JobRow): JobSummary => ({
  id: r.id,
  function: r.function,
  status: r.status,
  run_at: r.run_at,
  attempts: r.attempts,
  max_attempts: r.max_attempts,
  created_at: r.created_at,
});

export const viewOf = (r: JobRow): JobView => ({
  ...summary(r),
  args: JSON.parse(r.args) as unknown,
  result: r.result === null ? null : (JSON.parse(r.result) as unknown),
  logs: r.logs === null ? [] : (JSON.parse(r.logs) as unknown[]),
  last_error: r.last_error,
  next_run_at: (r.status === 'queued' || r.status === 'failed') && r.due_ms !== null ? new Date(r.due_ms).toISOString() : null,
  finished_at: r.finished_at,
});

export interface EnqueueInput {
  function: string;
  args?: unknown;
  run_at?: unknown;
  max_attempts?: unknown;
  idempotency_key?: unknown;
}

/** Parses the body of `POST /functions/jobs`. */
export function parseEnqueue(body: unknown): EnqueueInput {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new EdgeError('invalid_body', 'expected a JSON object');
  const b = body as Record<string, unknown>;
  for (const k of Object.keys(b)) {
    if (!['function', 'args', 'run_at', 'max_attempts', 'idempotency_key'].includes(k)) throw invalidField(k, 'unknown field');
  }
  if (typeof b.function !== 'string' || !NAME.test(b.function)) throw invalidField('function', 'a function name ([a-z][a-z0-9_-]{0,62})');
  return b as unknown as EnqueueInput;
}

/**
 * Durable jobs: rows in each project file, claimed with a lease, retried with backoff, run by
 * the loop in this process (`JobWorker`) through the runner. The control index
 * `fn_job_wakeups` says which projects have a job due when, so closed projects' jobs run too.
 */
export class JobsService {
  readonly clock: JobClock;
  readonly opts: JobsOptions;
  readonly index: ScheduleStore;
  /** Called after something became due (the worker wakes up). */
  onDue: () => void = () => {};
  /** When each project's finished jobs were last pruned (clock ms). */
  readonly #pruned = new Map<string, number>();

  constructor(index: ScheduleStore, opts: JobsOptions, clock: JobClock = systemClock) {
    this.index = index;
    this.opts = opts;
    this.clock = clock;
  }

  /** Enqueues a job (or returns the one its idempotency key already made within 24 h). */
  enqueue(p: ProjectLease, caller: JobCaller, input: EnqueueInput): { job: JobSummary; created: boolean } {
    const now = this.clock.now();
    let runMs = now;
    if (input.run_at !== undefined && input.run_at !== null) {
      const t = typeof input.run_at === 'string' ? Date.parse(input.run_at) : NaN;
      if (!Number.isFinite(t)) throw invalidField('run_at', 'an ISO-8601 date');
      runMs = Math.max(now, t);
    }
    let max = DEFAULT_ATTEMPTS;
    if (input.max_attempts !== undefined) {
      if (typeof input.max_attempts !== 'number' || !Number.isInteger(input.max_attempts) || input.max_attempts < 1 || input.max_attempts > MAX_ATTEMPTS) {
        throw invalidField('max_attempts', `an integer from 1 to ${MAX_ATTEMPTS}`);
      }
      max = input.max_attempts;
    }
    let idem: string | null = null;
    if (input.idempotency_key !== undefined && input.idempotency_key !== null) {
      const k = input.idempotency_key;
      if (typeof k !== 'string' || k.length === 0 || k.length > 255) throw invalidField('idempotency_key', 'a string of 1 to 255 characters');
      // note: keys are per enqueuer, so one user's key never returns another's job.
      idem = `${caller.userId ?? caller.role}\n${k}`;
    }
    const args = JSON.stringify(input.args === undefined ? null : input.args);
    this.opts.admit?.(p, input.function, caller);
    const made = p.db.transaction(() => {
      if (idem !== null) {
        const hit = jobsStore.byIdempotencyKey(p, idem, now - IDEMPOTENCY_WINDOW_MS);
        if (hit) return { row: hit, created: false };
        jobsStore.forgetIdempotencyKey(p, idem);
      }
      const row = {
        id: uuidv7(),
        function: input.function,
        args,
        status: 'queued' as const,
        run_at: new Date(runMs).toISOString(),
        due_ms: runMs,
        attempts: 0,
        max_attempts: max,
        user_id: caller.userId,
        role: caller.role,
        scopes: caller.scopes === null ? null : JSON.stringify(caller.scopes),
        idem_key: idem,
        created_ms: now,
        created_at: new Date(now).toISOString(),
      };
      jobsStore.insert(p, row);
      return { row: row as JobRow, created: true };
    })();
    if (made.created) {
      this.index.wake(p.projectId, runMs);
      if (runMs <= now) this.onDue();
    }
    return { job: summary(made.row), created: made.created };
  }

  /** A job the caller may read (its enqueuer, or the service role); else 404. */
  get(p: ProjectLease, caller: JobCaller, id: string): JobView {
    return viewOf(this.#readable(p, caller, id));
  }

  #readable(p: ProjectLease, caller: JobCaller, id: string): JobRow {
    const row = jobsStore.get(p, id);
    if (!row || !canRead(caller, row)) throw notFound('job', id);
    return row;
  }

  list(p: ProjectLease, caller: JobCaller, status: string | null, limit: number, offset: number): { jobs: JobView[]; limit: number; offset: number; next_offset: number | null } {
    if (status !== null && !STATUSES.includes(status as JobStatus)) throw invalidField('status', `one of ${STATUSES.join(', ')}`);
    let rows: JobRow[] = [];
    if (caller.role === 'service_role') rows = jobsStore.list(p, status as JobStatus | null, undefined, limit + 1, offset);
    else if (caller.userId !== null) rows = jobsStore.list(p, status as JobStatus | null, caller.userId, limit + 1, offset);
    const more = rows.length > limit;
    return { jobs: rows.slice(0, limit).map(viewOf), limit, offset, next_offset: more ? offset + limit : null };
  }

  /** Cancels a job still waiting to run (queued, or failed and waiting for its retry); else 409. */
  cancel(p: ProjectLease, caller: JobCaller, id: string): void {
    const row = this.#readable(p, caller, id);
    const ok = jobsStore.transition(p, id, ['queued', 'failed'], { status: 'cancelled', due_ms: null, finished_at: new Date(this.clock.now()).toISOString() });
    if (!ok) throw new EdgeError('conflict', `job ${id} is ${jobsStore.get(p, id)?.status ?? row.status}; only a queued job can be cancelled`);
  }

  /** Revives a dead job: queued again now, with its attempts counted from zero; else 409. */
  retry(p: ProjectLease, caller: JobCaller, id: string): JobView {
    const row = this.#readable(p, caller, id);
    const now = this.clock.now();
    const ok = jobsStore.transition(p, id, ['dead'], { status: 'queued', due_ms: now, attempts: 0, finished_at: null });
    if (!ok) throw new EdgeError('conflict', `job ${id} is ${row.status}; only a dead job can be retried`);
    this.index.wake(p.projectId, now);
    this.onDue();
    return viewOf(jobsStore.get(p, id)!);
  }

  /** A function was deleted: its waiting jobs go `dead`. */
  functionDeleted(p: ProjectLease, fn: string): number {
    return jobsStore.killFunction(p, fn, `function ${fn} was deleted`, new Date(this.clock.now()).toISOString());
  }

  /**
   * Claims up to `limit` due jobs of a project for this process: each becomes `running` with a
   * lease of the function's timeout plus the grace, under a fresh claim token. A job whose lease
   * ran out (its process died) is claimed again, or goes `dead` when it has no attempts left.
   */
  claim(p: ProjectLease, limit: number): Array<JobRun & { claim: string }> {
    const now = this.clock.now();
    const out: Array<JobRun & { claim: string }> = [];
    p.db.transaction(() => {
      for (const d of jobsStore.due(p, now, limit)) {
        if (d.status === 'running' && d.attempts >= d.max_attempts) {
          jobsStore.transition(p, d.id, ['running'], {
            status: 'dead',
            due_ms: null,
            last_error: 'the process running the last attempt stopped before it finished',
            finished_at: new Date(now).toISOString(),
          });
          continue;
        }
        const timeout = this.opts.timeoutOf?.(p, d.function) ?? LONGEST_TIMEOUT_MS;
        const claim = randomBytes(9).toString('base64url');
        jobsStore.claim(p, d.id, claim, now + timeout + this.opts.leaseGraceMs);
        const row = jobsStore.get(p, d.id)!;
        out.push({ id: row.id, function: row.function, args: JSON.parse(row.args) as unknown, caller: { userId: row.user_id, role: row.role, scopes: row.scopes === null ? null : (JSON.parse(row.scopes) as string[]) }, attempt: row.attempts, claim });
      }
    })();
    this.index.setWakeup(p.projectId, jobsStore.nextDue(p));
    return out;
  }

  /** Records an attempt's end (ignored when its lease was lost and the job claimed again). */
  finish(p: ProjectLease, run: JobRun & { claim: string }, outcome: { ok: true; value: JobOutcome } | { ok: false; error: unknown }): void {
    const now = this.clock.now();
    const at = new Date(now).toISOString();
    if (outcome.ok) {
      jobsStore.finish(p, run.id, run.claim, {
        status: 'succeeded',
        due_ms: null,
        result: JSON.stringify(outcome.value.result ?? null),
        logs: JSON.stringify(outcome.value.logs ?? []),
        last_error: null,
        finished_at: at,
      });
    } else {
      const { message, logs, permanent } = describeFailure(outcome.error);
      const row = jobsStore.get(p, run.id);
      const last = permanent || !row || row.attempts >= row.max_attempts;
      const due = last ? null : now + backoffMs(row.attempts, this.clock.random());
      jobsStore.finish(p, run.id, run.claim, {
        status: last ? 'dead' : 'failed',
        due_ms: due,
        result: null,
        logs: JSON.stringify(logs),
        last_error: message,
        finished_at: last ? at : null,
      });
    }
    this.index.setWakeup(p.projectId, jobsStore.nextDue(p));
    this.prune(p);
  }

  /**
   * Deletes finished jobs created more than RETENTION_MS ago (at most once a minute per
   * project, in short batches so the event loop is never held long); how many went.
   */
  prune(p: ProjectLease, force = false): number {
    const now = this.clock.now();
    if (!force && now - (this.#pruned.get(p.projectId) ?? 0) < PRUNE_EVERY_MS) return 0;
    this.#pruned.set(p.projectId, now);
    const before = v7Floor(now - RETENTION_MS);
    let total = 0;
    for (let i = 0; i < PRUNE_ROUNDS; i++) {
      const n = jobsStore.pruneFinished(p, before, PRUNE_BATCH);
      total += n;
      if (n < PRUNE_BATCH) break;
    }
    return total;
  }
}

function canRead(caller: JobCaller, row: JobRow): boolean {
  if (caller.role === 'service_role') return true;
  return caller.userId !== null && row.user_id === caller.userId;
}

const MAX_ERROR = 2000;

function describeFailure(err: unknown): { message: string; logs: unknown[]; permanent: boolean } {
  const e = (typeof err === 'object' && err !== null ? err : {}) as { message?: unknown; logs?: unknown; permanent?: unknown; beside?: { logs?: unknown } };
  const message = typeof e.message === 'string' && e.message ? e.message : String(err);
  // note: an invoke error carries the function's logs beside the error (EdgeError `beside`).
  const logs = Array.isArray(e.logs) ? e.logs : Array.isArray(e.beside?.logs) ? e.beside.logs : [];
  return {
    message: message.length > MAX_ERROR ? `${message.slice(0, MAX_ERROR)}…` : message,
    logs,
    permanent: e.permanent === true || (err instanceof EdgeError && err.code === 'not_found'),
  };
}

/**
 * The job loop of this process: finds projects with due jobs in the control index, claims
 * within its concurrency, runs each through the runner, records the outcome, and sleeps until
 * the next due time (at most `pollMs`). `beforeTick` runs first on every tick (schedules).
 */
export class JobWorker {
  readonly #jobs: JobsService;
  readonly #registry: ProjectRegistry;
  readonly #runner: JobRunner;
  readonly #log: (msg: string, err?: unknown) => void;
  #beforeTick: () => void = () => {};
  #running = 0;
  readonly #perProject = new Map<string, number>();
  readonly #inflight = new Set<Promise<void>>();
  #timer: NodeJS.Timeout | null = null;
  #poked = false;
  #started = false;
  #closed = false;

  constructor(jobs: JobsService, registry: ProjectRegistry, runner: JobRunner, log: (msg: string, err?: unknown) => void = () => {}) {
    this.#jobs = jobs;
    this.#registry = registry;
    this.#runner = runner;
    this.#log = log;
    jobs.onDue = () => this.poke();
  }

  beforeTick(fn: () => void): void {
    this.#beforeTick = fn;
  }

  get running(): number {
    return this.#running;
  }

  /** Starts the timer loop (tests without it call `tick` themselves). */
  start(): void {
    this.#started = true;
    this.poke();
  }

  /** Ticks on the next turn (coalesced). */
  poke(): void {
    if (!this.#started || this.#closed || this.#poked) return;
    this.#poked = true;
    setImmediate(() => {
      this.#poked = false;
      this.#loop();
    });
  }

  #loop(): void {
    if (this.#closed) return;
    try {
      this.tick();
    } catch (err) {
      this.#log('job loop failed', err);
    }
    this.#arm();
  }

  #arm(): void {
    if (this.#timer) clearTimeout(this.#timer);
    const now = this.#jobs.clock.now();
    let next = now + this.#jobs.opts.pollMs;
    const w = this.#jobs.index.nextWakeup();
    const s = this.#jobs.index.nextFiring();
    // note: a wakeup already past is a project whose jobs wait for a free slot: a finishing job pokes
    // the loop, so it is not polled in a tight loop meanwhile.
    if (w !== null && w > now && w < next) next = w;
    if (s !== null && s < next) next = s;
    this.#timer = setTimeout(() => this.#loop(), Math.max(0, next - now) + 1);
    this.#timer.unref();
  }

  /** One pass: fires due schedules, then claims due jobs within the free slots and starts them. */
  tick(): void {
    this.#beforeTick();
    const opts = this.#jobs.opts;
    let free = opts.concurrency - this.#running;
    if (free <= 0) return;
    const now = this.#jobs.clock.now();
    for (const pid of this.#jobs.index.dueProjects(now, 64)) {
      if (free <= 0) break;
      const n = Math.min(free, opts.perProject - (this.#perProject.get(pid) ?? 0));
      if (n <= 0) continue;
      let lease: ProjectLease;
      try {
        lease = this.#registry.acquire(pid);
      } catch (err) {
        if (err instanceof EdgeError && err.code === 'not_found') this.#jobs.index.forgetProject(pid);
        else this.#log(`jobs of project ${pid} not claimed`, err);
        continue;
      }
      let runs: Array<JobRun & { claim: string }> = [];
      try {
        runs = this.#jobs.claim(lease, n);
      } catch (err) {
        this.#log(`jobs of project ${pid} not claimed`, err);
      } finally {
        lease.release();
      }
      for (const run of runs) {
        free--;
        this.#start(pid, run);
      }
    }
  }

  #start(pid: string, run: JobRun & { claim: string }): void {
    this.#running++;
    this.#perProject.set(pid, (this.#perProject.get(pid) ?? 0) + 1);
    const p = this.#run(pid, run).finally(() => {
      this.#running--;
      const left = (this.#perProject.get(pid) ?? 1) - 1;
      if (left > 0) this.#perProject.set(pid, left);
      else this.#perProject.delete(pid);
      this.#inflight.delete(p);
      this.poke();
    });
    this.#inflight.add(p);
  }

  async #run(pid: string, run: JobRun & { claim: string }): Promise<void> {
    let lease: ProjectLease;
    try {
      lease = this.#registry.acquire(pid);
    } catch (err) {
      this.#log(`job ${run.id} not run`, err);
      return;
    }
    try {
      let outcome: { ok: true; value: JobOutcome } | { ok: false; error: unknown };
      try {
        outcome = { ok: true, value: await this.#runner(lease, run) };
      } catch (error) {
        outcome = { ok: false, error };
      }
      this.#jobs.finish(lease, run, outcome);
    } catch (err) {
      this.#log(`job ${run.id} not recorded`, err);
    } finally {
      lease.release();
    }
  }

  /** Waits for the attempts running now. */
  async idle(): Promise<void> {
    while (this.#inflight.size) await Promise.all([...this.#inflight]);
  }

  /** Ticks and waits until nothing due is left at the clock's now (tests). */
  async drain(): Promise<void> {
    for (;;) {
      this.tick();
      if (this.#inflight.size === 0) return;
      await this.idle();
    }
  }

  /** Stops the loop and waits up to 2 s for running attempts (one still running later: its lease runs out and it runs again). */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    await Promise.race([this.idle(), new Promise((r) => setTimeout(r, 2000).unref())]);
  }
}
