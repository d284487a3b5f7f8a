import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { EdgeError } from '../../src/core/errors.js';
import { appendChange } from '../../src/events/change-log.js';
import { getCursor } from '../../src/events/cursors.js';
import { schemaDir } from '../../src/paths.js';
import { loadMigrations, migrate } from '../../src/project/migrate.js';
import { ProjectRegistry, type ProjectLease } from '../../src/project/registry.js';
import { jobsStore, ScheduleStore } from '../../src/services/functions/jobs-store.js';
import { backoffMs, JobsService, JobWorker, SERVICE_CALLER, v7Floor, type JobCaller, type JobRun, type JobRunner } from '../../src/services/functions/jobs.js';
import { FunctionScheduler, nextFiring, parseSchedules, parseTriggers } from '../../src/services/functions/scheduler.js';

// The job store, claiming, backoff, the worker loop, cron and triggers, with a fake runner and
// a fake clock (no waiting: time moves when a test moves it).

const T0 = Date.parse('2026-01-01T00:02:00.000Z');
const PID = 'p1';
let dir: string;
let control: Database.Database;
let reg: ProjectRegistry;
let clock: { t: number; r: number; now(): number; random(): number };
let jobs: JobsService;
let runs: JobRun[];
let behaviour: (job: JobRun) => Promise<{ result: unknown; logs: unknown[] }>;
let worker: JobWorker;
let scheduler: FunctionScheduler;

const USER_A: JobCaller = { userId: 'user-a', role: 'authenticated', scopes: ['functions:invoke', 'data:read'] };
const USER_B: JobCaller = { userId: 'user-b', role: 'authenticated', scopes: null };
const ANON: JobCaller = { userId: null, role: 'anon', scopes: null };

function withLease<T>(fn: (l: ProjectLease) => T): T {
  const l = reg.acquire(PID);
  try {
    return fn(l);
  } finally {
    l.release();
  }
}
const enqueue = (caller: JobCaller, body: Parameters<JobsService['enqueue']>[2]) => withLease((l) => jobs.enqueue(l, caller, body));
const view = (id: string, caller: JobCaller = SERVICE_CALLER) => withLease((l) => jobs.get(l, caller, id));

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pe-jobs-'));
  mkdirSync(join(dir, 'projects', PID), { recursive: true });
  const config = loadConfig({ dataDir: dir }, {});
  reg = new ProjectRegistry(config);
  control = new Database(join(dir, 'control.db'));
  migrate(control, loadMigrations(join(schemaDir(), 'control')), 'migrations');
  clock = { t: T0, r: 0.5, now: () => clock.t, random: () => clock.r };
  jobs = new JobsService(new ScheduleStore(control), { concurrency: 8, perProject: 4, leaseGraceMs: 30_000, pollMs: 1000, timeoutOf: () => 5000 }, clock);
  runs = [];
  behaviour = async (job) => ({ result: { echo: job.args }, logs: [{ level: 'log', message: 'hi', at: 'x' }] });
  const runner: JobRunner = (_l, job) => {
    runs.push(job);
    return behaviour(job);
  };
  worker = new JobWorker(jobs, reg, runner);
  scheduler = new FunctionScheduler(jobs, reg);
  worker.beforeTick(() => scheduler.fireDue());
});

afterEach(async () => {
  await worker.close();
  reg.closeAll();
  control.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('backoff', () => {
  it('is 10 s × 2^(n−1) with ±25 % jitter, capped at 1 h', () => {
    expect(backoffMs(1, 0.5)).toBe(10_000);
    expect(backoffMs(2, 0.5)).toBe(20_000);
    expect(backoffMs(3, 0)).toBe(30_000);
    expect(backoffMs(3, 0.99)).toBe(49_800);
    expect(backoffMs(9, 0.5)).toBe(2_560_000);
    expect(backoffMs(10, 0.5)).toBe(3_600_000);
    expect(backoffMs(20, 0)).toBe(2_700_000);
    expect(backoffMs(20, 0.99)).toBe(3_600_000);
  });
});

describe('jobs', () => {
  it('runs a queued job once with its args and caller, and keeps result and logs', async () => {
    const { job } = enqueue(USER_A, { function: 'hello', args: { n: 1 } });
    expect(job).toEqual({ id: job.id, function: 'hello', status: 'queued', run_at: '2026-01-01T00:02:00.000Z', attempts: 0, max_attempts: 3, created_at: '2026-01-01T00:02:00.000Z' });
    await worker.drain();
    expect(runs).toEqual([{ id: job.id, function: 'hello', args: { n: 1 }, caller: USER_A, attempt: 1, claim: expect.any(String) as string }]);
    expect(view(job.id, USER_A)).toEqual({
      ...job,
      status: 'succeeded',
      attempts: 1,
      args: { n: 1 },
      result: { echo: { n: 1 } },
      logs: [{ level: 'log', message: 'hi', at: 'x' }],
      last_error: null,
      next_run_at: null,
      finished_at: '2026-01-01T00:02:00.000Z',
    });
    await worker.drain();
    expect(runs).toHaveLength(1);
  });

  it('waits for run_at', async () => {
    const { job } = enqueue(SERVICE_CALLER, { function: 'later', run_at: '2026-01-01T00:03:00Z' });
    expect(job.run_at).toBe('2026-01-01T00:03:00.000Z');
    await worker.drain();
    expect(runs).toHaveLength(0);
    clock.t = Date.parse('2026-01-01T00:03:00Z');
    await worker.drain();
    expect(runs.map((r) => r.id)).toEqual([job.id]);
  });

  it('retries a failing job with backoff, then sends it to dead with the last error', async () => {
    behaviour = () => Promise.reject(Object.assign(new Error('boom'), { logs: [{ level: 'error', message: 'x', at: 'y' }] }));
    const { job } = enqueue(SERVICE_CALLER, { function: 'flaky' });
    await worker.drain();
    let v = view(job.id);
    expect([v.status, v.attempts, v.last_error, v.next_run_at, v.logs]).toEqual(['failed', 1, 'boom', new Date(T0 + 10_000).toISOString(), [{ level: 'error', message: 'x', at: 'y' }]]);
    clock.t = T0 + 9_999;
    await worker.drain();
    expect(runs).toHaveLength(1);
    clock.t = T0 + 10_000;
    await worker.drain();
    v = view(job.id);
    expect([v.status, v.attempts, v.next_run_at]).toEqual(['failed', 2, new Date(T0 + 30_000).toISOString()]);
    clock.t = T0 + 30_000;
    await worker.drain();
    v = view(job.id);
    expect([v.status, v.attempts, v.last_error, v.next_run_at, v.finished_at]).toEqual(['dead', 3, 'boom', null, new Date(T0 + 30_000).toISOString()]);
    expect(runs.map((r) => r.attempt)).toEqual([1, 2, 3]);
  });

  it('sends a job of a deleted function straight to dead (not_found is not retried)', async () => {
    behaviour = () => Promise.reject(new EdgeError('not_found', 'function gone does not exist'));
    const { job } = enqueue(SERVICE_CALLER, { function: 'gone', max_attempts: 5 });
    await worker.drain();
    expect([view(job.id).status, view(job.id).attempts]).toEqual(['dead', 1]);
  });

  it('claims a job again once the lease of a stopped process ran out; the stale attempt cannot finish it', async () => {
    const { job } = enqueue(SERVICE_CALLER, { function: 'slow' });
    // a process claims it and dies (never finishes)
    const [lost] = withLease((l) => jobs.claim(l, 10));
    expect(lost!.attempt).toBe(1);
    expect(view(job.id).status).toBe('running');
    clock.t = T0 + 5000 + 30_000 - 1;
    await worker.drain();
    expect(runs).toHaveLength(0);
    clock.t = T0 + 5000 + 30_000;
    await worker.drain();
    expect(runs.map((r) => r.attempt)).toEqual([2]);
    expect([view(job.id).status, view(job.id).attempts]).toEqual(['succeeded', 2]);
    withLease((l) => jobs.finish(l, lost!, { ok: false, error: new Error('late') }));
    expect([view(job.id).status, view(job.id).last_error]).toEqual(['succeeded', null]);
  });

  it('a lost lease on the last attempt ends dead', async () => {
    const { job } = enqueue(SERVICE_CALLER, { function: 'slow', max_attempts: 1 });
    withLease((l) => jobs.claim(l, 10));
    clock.t = T0 + 35_000;
    await worker.drain();
    expect(runs).toHaveLength(0);
    expect([view(job.id).status, view(job.id).last_error]).toEqual(['dead', 'the process running the last attempt stopped before it finished']);
  });

  it('dedupes an idempotency key per enqueuer for 24 h', () => {
    const a = enqueue(USER_A, { function: 'f', idempotency_key: 'k1' });
    const again = enqueue(USER_A, { function: 'f', idempotency_key: 'k1', args: 2 });
    expect([again.created, again.job.id]).toEqual([false, a.job.id]);
    const other = enqueue(USER_B, { function: 'f', idempotency_key: 'k1' });
    expect(other.created).toBe(true);
    clock.t = T0 + 24 * 3600_000 - 1;
    expect(enqueue(USER_A, { function: 'f', idempotency_key: 'k1' }).job.id).toBe(a.job.id);
    clock.t = T0 + 24 * 3600_000 + 1;
    const fresh = enqueue(USER_A, { function: 'f', idempotency_key: 'k1' });
    expect(fresh.created).toBe(true);
    expect(fresh.job.id).not.toBe(a.job.id);
  });

  it('lets only the enqueuer or the service role read a job', () => {
    const a = enqueue(USER_A, { function: 'f' }).job;
    const anon = enqueue(ANON, { function: 'f' }).job;
    expect(view(a.id, USER_A).id).toBe(a.id);
    expect(view(a.id, SERVICE_CALLER).id).toBe(a.id);
    expect(() => view(a.id, USER_B)).toThrow(/job/);
    expect(() => view(a.id, ANON)).toThrow(/job/);
    expect(() => view(anon.id, ANON)).toThrow(/job/);
    const list = (c: JobCaller) => withLease((l) => jobs.list(l, c, null, 10, 0)).jobs.map((j) => j.id);
    expect(list(USER_A)).toEqual([a.id]);
    expect(list(USER_B)).toEqual([]);
    expect(list(ANON)).toEqual([]);
    expect(list(SERVICE_CALLER)).toEqual([anon.id, a.id]);
  });

  it('cancels only a waiting job and retries only a dead one', async () => {
    const q = enqueue(SERVICE_CALLER, { function: 'f', run_at: '2026-01-02T00:00:00Z' }).job;
    withLease((l) => jobs.cancel(l, SERVICE_CALLER, q.id));
    expect(view(q.id).status).toBe('cancelled');
    expect(() => withLease((l) => jobs.cancel(l, SERVICE_CALLER, q.id))).toThrow(/only a queued job/);
    expect(() => withLease((l) => jobs.retry(l, SERVICE_CALLER, q.id))).toThrow(/only a dead job/);
    behaviour = () => Promise.reject(new Error('no'));
    const d = enqueue(SERVICE_CALLER, { function: 'f', max_attempts: 1 }).job;
    await worker.drain();
    expect(view(d.id).status).toBe('dead');
    behaviour = async () => ({ result: 7, logs: [] });
    const revived = withLease((l) => jobs.retry(l, SERVICE_CALLER, d.id));
    expect([revived.status, revived.attempts, revived.last_error]).toEqual(['queued', 0, 'no']);
    await worker.drain();
    expect([view(d.id).status, view(d.id).result, view(d.id).attempts]).toEqual(['succeeded', 7, 1]);
  });

  it('sends the waiting jobs of a deleted function to dead', () => {
    const a = enqueue(SERVICE_CALLER, { function: 'f' }).job;
    const b = enqueue(SERVICE_CALLER, { function: 'g' }).job;
    withLease((l) => scheduler.functionDeleted(l, 'f'));
    expect([view(a.id).status, view(a.id).last_error]).toEqual(['dead', 'function f was deleted']);
    expect(view(b.id).status).toBe('queued');
  });

  it('runs at most perProject jobs of one project at once', async () => {
    const release: Array<() => void> = [];
    behaviour = () => new Promise((r) => release.push(() => r({ result: null, logs: [] })));
    for (let i = 0; i < 6; i++) enqueue(SERVICE_CALLER, { function: 'f' });
    worker.tick();
    expect(worker.running).toBe(4);
    worker.tick();
    expect(worker.running).toBe(4);
    release.splice(0).forEach((f) => f());
    await worker.idle();
    worker.tick();
    expect(worker.running).toBe(2);
    release.splice(0).forEach((f) => f());
    await worker.idle();
    const statuses = withLease((l) => jobs.list(l, SERVICE_CALLER, 'succeeded', 100, 0)).jobs.length;
    expect(statuses).toBe(6);
  });

  it('prunes finished jobs 7 days after they were made, never waiting ones', async () => {
    const done = enqueue(SERVICE_CALLER, { function: 'f' }).job;
    await worker.drain();
    const cancelled = enqueue(SERVICE_CALLER, { function: 'f', run_at: '2026-02-01T00:00:00Z' }).job;
    withLease((l) => jobs.cancel(l, SERVICE_CALLER, cancelled.id));
    const waiting = enqueue(SERVICE_CALLER, { function: 'f', run_at: '2026-02-01T00:00:00Z' }).job;
    // ids are UUIDv7 of the real time: the job clock moves relative to it
    clock.t = Date.now() + 7 * 86_400_000 - 60_000;
    expect(withLease((l) => jobs.prune(l, true))).toBe(0);
    clock.t = Date.now() + 7 * 86_400_000 + 60_000;
    expect(withLease((l) => jobs.prune(l, true))).toBe(2);
    expect(() => view(done.id)).toThrow(/job/);
    expect(() => view(cancelled.id)).toThrow(/job/);
    expect(view(waiting.id).status).toBe('queued');
    expect(withLease((l) => jobsStore.pruneFinished(l, v7Floor(Date.now() + 1000), 10))).toBe(0);
  });

  // note: 100k inserts; at the start of `npm test` they share the cores with tsc and ESLint.
  it('claims through the partial index with 100k queued rows', { timeout: 60_000 }, () => {
    withLease((l) => {
      const ins = l.db.prepare(
        `INSERT INTO "_svc_functions.jobs" (id, function, args, status, run_at, due_ms, attempts, max_attempts, role, created_ms, created_at) VALUES (?, 'f', 'null', ?, 'x', ?, 0, 3, 'service_role', 0, 'x')`,
      );
      l.db.transaction(() => {
        for (let i = 0; i < 100_000; i++) ins.run(`q${String(i).padStart(6, '0')}`, 'queued', T0 + i);
        for (let i = 0; i < 1000; i++) ins.run(`s${String(i).padStart(6, '0')}`, 'succeeded', null);
      })();
      l.db.exec('ANALYZE');
      expect(jobsStore.claimPlan(l.db)).toEqual(['SEARCH _svc_functions.jobs USING INDEX _svc_functions.jobs_claim (due_ms<?)']);
      expect(jobsStore.due(l, T0 + 2, 10).map((r) => r.id)).toEqual(['q000000', 'q000001', 'q000002']);
    });
  });
});

describe('schedules', () => {
  it('parses 5-field UTC cron patterns only', () => {
    expect(parseSchedules([{ cron: '*/5 * * * *', args: { a: 1 } }])).toEqual([{ cron: '*/5 * * * *', args: { a: 1 } }]);
    expect(() => parseSchedules([{ cron: '* * * * * *' }])).toThrow(/5 fields/);
    expect(() => parseSchedules([{ cron: '61 * * * *' }])).toThrow(EdgeError);
    expect(() => parseSchedules([{ cron: '* * * * *', every: 1 }])).toThrow(/unknown field/);
    expect(nextFiring('0 3 * * *', Date.parse('2026-01-01T03:00:00Z'))).toBe(Date.parse('2026-01-02T03:00:00Z'));
  });

  it('enqueues a service-role job per firing, and a missed run once, never a backlog', async () => {
    scheduler.setSchedules(PID, 'tick', parseSchedules([{ cron: '*/5 * * * *', args: { from: 'cron' } }]));
    expect(scheduler.schedules(PID, 'tick')).toEqual([{ cron: '*/5 * * * *', args: { from: 'cron' }, next_run_at: '2026-01-01T00:05:00.000Z' }]);
    clock.t = Date.parse('2026-01-01T00:04:59.999Z');
    await worker.drain();
    expect(runs).toHaveLength(0);
    clock.t = Date.parse('2026-01-01T00:05:00.000Z');
    await worker.drain();
    expect(runs.map((r) => [r.function, r.args, r.caller])).toEqual([['tick', { from: 'cron' }, SERVICE_CALLER]]);
    expect(scheduler.schedules(PID, 'tick')[0]!.next_run_at).toBe('2026-01-01T00:10:00.000Z');
    // down for an hour: 11 firings missed, one runs
    reg.closeAll();
    expect(reg.isOpen(PID)).toBe(false);
    clock.t = Date.parse('2026-01-01T01:02:30.000Z');
    await worker.drain();
    expect(runs).toHaveLength(2);
    expect(scheduler.schedules(PID, 'tick')[0]!.next_run_at).toBe('2026-01-01T01:05:00.000Z');
    await worker.drain();
    expect(runs).toHaveLength(2);
  });
});

describe('triggers', () => {
  it('enqueues a job per matching change through the triggers cursor', async () => {
    withLease((l) => scheduler.setTriggers(l, 'on_todo', parseTriggers([{ table: 'todos', events: ['insert', 'delete'], filter: { done: false } }])));
    const write = (op: 'insert' | 'update' | 'delete', table: string, id: string, data: Record<string, unknown> | null, old: Record<string, unknown> | null) =>
      withLease((l) => l.db.transaction(() => appendChange(l, op, table, id, data, old, '2026-01-01T00:02:00.000Z', { newRow: null, oldRow: null }))());
    write('insert', 'todos', 'r1', { done: false, title: 'a' }, null);
    write('insert', 'todos', 'r2', { done: true }, null);
    write('update', 'todos', 'r1', { done: false }, { done: false });
    write('insert', 'notes', 'n1', { done: false }, null);
    write('delete', 'todos', 'r1', null, { done: false, title: 'a' });
    expect(withLease((l) => scheduler.processTriggers(l))).toBe(2);
    expect(withLease((l) => scheduler.processTriggers(l))).toBe(0);
    expect(withLease((l) => getCursor(l, 'triggers'))!.seq).toBe(5);
    await worker.drain();
    expect(runs.map((r) => [r.function, r.args, r.caller])).toEqual([
      ['on_todo', { id: '1', type: 'db.insert', table: 'todos', record: { done: false, title: 'a' }, old_record: null, occurred_at: '2026-01-01T00:02:00.000Z' }, SERVICE_CALLER],
      ['on_todo', { id: '5', type: 'db.delete', table: 'todos', record: null, old_record: { done: false, title: 'a' }, occurred_at: '2026-01-01T00:02:00.000Z' }, SERVICE_CALLER],
    ]);
    expect(() => parseTriggers([{ table: 'todos', events: ['upsert'] }])).toThrow(/events/);

    // a change committed while no process listened: the next start's catch-up enqueues it once
    write('insert', 'todos', 'r9', { done: false, title: 'while down' }, null);
    const restarted = new FunctionScheduler(jobs, reg);
    restarted.catchUp();
    restarted.catchUp();
    await worker.drain();
    expect(runs.map((r) => (r.args as { record: { title?: string } }).record?.title)).toEqual(['a', undefined, 'while down']);

    // without triggers the cursor goes; triggers deployed again see only later changes
    withLease((l) => scheduler.setTriggers(l, 'on_todo', []));
    expect(withLease((l) => getCursor(l, 'triggers'))).toBeNull();
    write('insert', 'todos', 'r3', { done: false }, null);
    withLease((l) => scheduler.setTriggers(l, 'on_todo', parseTriggers([{ table: 'todos', events: ['insert'] }])));
    write('insert', 'todos', 'r4', { done: false }, null);
    expect(withLease((l) => scheduler.processTriggers(l))).toBe(1);
    await worker.drain();
    expect(runs.map((r) => (r.args as { record: unknown; id: string }).id)).toEqual(['1', '5', '6', '8']);
  });
});
