import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorOf, startTestServer, type TestServer } from '../helpers/server.js';

// Durable jobs over HTTP: enqueue, run as the enqueuer, read back, retries with backoff (on an
// injected clock, so no test waits for 10 s), cancel, retry, idempotency, function deletion.

let s: TestServer;
const JSON_H = { 'content-type': 'application/json' };
const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const clock = { t: T0 };

interface Caller {
  key?: string | null;
  token?: string;
}
async function call(method: string, path: string, body?: unknown, who: Caller = {}) {
  const headers: Record<string, string> = body === undefined ? {} : { ...JSON_H };
  if (who.token) headers.authorization = `Bearer ${who.token}`;
  const res = await s.req(path, { method, key: who.key, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}
const svc = (): Caller => ({ key: s.keys.service });

async function deploy(name: string, source: string, options: Record<string, unknown> = {}) {
  const r = await call('PUT', `/functions/${name}`, { source, ...options }, svc());
  expect([200, 201], r.text).toContain(r.status);
}

/** Polls a job until `done` says so (bounded: 10 s). */
async function until(id: string, done: (job: Record<string, unknown>) => boolean, who: Caller = svc()): Promise<Record<string, unknown>> {
  const end = Date.now() + 10_000;
  for (;;) {
    const r = await call('GET', `/functions/jobs/${id}`, undefined, who);
    expect(r.status, r.text).toBe(200);
    if (done(r.body)) return r.body;
    if (Date.now() > end) throw new Error(`job ${id} still ${JSON.stringify(r.body)}`);
    await new Promise((res) => setTimeout(res, 25));
  }
}
const settled = (j: Record<string, unknown>) => ['succeeded', 'failed', 'dead'].includes(j.status as string);

interface User {
  id: string;
  token: string;
}
async function register(email: string): Promise<User> {
  const r = await call('POST', '/auth/register', { email, password: 'correct horse battery staple 1' });
  expect(r.status, r.text).toBe(200);
  return { id: r.body.user.id, token: r.body.access_token };
}

let alice: User;
let bob: User;

beforeAll(async () => {
  s = await startTestServer({ jobsPollMs: 20, jobsClock: { now: () => clock.t, random: () => 0.5 } });
  alice = await register('alice-jobs@example.com');
  bob = await register('bob-jobs@example.com');
  await deploy('echo', 'export default async (args, ctx) => { ctx.log("got", args); return { args, user: ctx.user }; }');
  await deploy('boom', 'export default async () => { console.error("about to fail"); throw new Error("boom"); }');
  await deploy('nap', 'export default async () => 1');
});
afterAll(() => s.close());

describe('POST /functions/jobs', () => {
  it('answers 202 with the queued job, runs it, and GET shows its result and logs', async () => {
    const r = await call('POST', '/functions/jobs', { function: 'echo', args: { n: 1 } }, svc());
    expect(r.status, r.text).toBe(202);
    expect(r.body).toEqual({ id: r.body.id, function: 'echo', status: 'queued', run_at: '2026-03-01T10:00:00.000Z', attempts: 0, max_attempts: 3, created_at: '2026-03-01T10:00:00.000Z' });
    const job = await until(r.body.id, settled);
    expect(job).toEqual({
      ...r.body,
      status: 'succeeded',
      attempts: 1,
      args: { n: 1 },
      result: { args: { n: 1 }, user: null },
      logs: [{ level: 'info', message: 'got {"n":1}', at: expect.any(String) }],
      last_error: null,
      next_run_at: null,
      finished_at: '2026-03-01T10:00:00.000Z',
    });
  });

  it('runs as the user who enqueued it; only that user or the service role reads it', async () => {
    const r = await call('POST', '/functions/jobs', { function: 'echo', args: 'mine' }, { token: alice.token });
    expect(r.status, r.text).toBe(202);
    const job = await until(r.body.id, settled, { token: alice.token });
    expect(job.result).toEqual({ args: 'mine', user: { id: alice.id, role: 'authenticated' } });
    expect((await call('GET', `/functions/jobs/${r.body.id}`, undefined, { token: bob.token })).status).toBe(404);
    expect((await call('GET', `/functions/jobs/${r.body.id}`)).status).toBe(404);
    expect((await call('GET', `/functions/jobs/${r.body.id}`, undefined, svc())).status).toBe(200);
    const mine = await call('GET', '/functions/jobs', undefined, { token: alice.token });
    expect(mine.body.jobs.map((j: { id: string }) => j.id)).toEqual([r.body.id]);
    expect([mine.body.limit, mine.body.offset, mine.body.next_offset]).toEqual([100, 0, null]);
    expect((await call('GET', '/functions/jobs', undefined, { token: bob.token })).body.jobs).toEqual([]);
  });

  it("ctx.db in a job acts as the enqueuer, under RLS", async () => {
    expect((await call('POST', '/db/tables', { name: 'job_notes' }, svc())).status).toBe(201);
    const rls = await call('PUT', '/db/tables/job_notes/rls', { enabled: true, policies: { select: "data->>'owner' = auth.uid()" } }, svc());
    expect(rls.status, rls.text).toBe(200);
    for (const owner of [alice.id, bob.id, bob.id]) expect((await call('POST', '/db/tables/job_notes/rows', { data: { owner } }, svc())).status).toBe(201);
    await deploy('count_notes', "export default async (args, ctx) => (await ctx.db.list('job_notes', { count: 'exact' })).total");
    const counts: unknown[] = [];
    for (const who of [{ token: alice.token }, { token: bob.token }, {}, svc()] as Caller[]) {
      const r = await call('POST', '/functions/jobs', { function: 'count_notes' }, who);
      expect(r.status, r.text).toBe(202);
      counts.push((await until(r.body.id, settled)).result);
    }
    expect(counts).toEqual([1, 2, 0, 3]);
  });

  it("runs with the enqueuing key's scopes, never more", async () => {
    const { secret } = s.createKey(['functions:invoke'], { name: 'jobs-only' });
    await deploy('try_read', "export default async (args, ctx) => { try { await ctx.db.list('job_notes'); return 'read'; } catch (e) { return e.code; } }");
    const results: unknown[] = [];
    for (const who of [{ key: secret }, {}] as Caller[]) {
      const r = await call('POST', '/functions/jobs', { function: 'try_read' }, who);
      expect(r.status, r.text).toBe(202);
      results.push((await until(r.body.id, settled)).result);
    }
    expect(results).toEqual(['missing_scope', 'read']);
  });

  it("checks the function's access option when enqueueing", async () => {
    await deploy('members', 'export default async (args, ctx) => ctx.user.id', { access: 'user' });
    await deploy('admins', 'export default async () => "ok"', { access: 'service' });
    const status = async (fn: string, who: Caller) => (await call('POST', '/functions/jobs', { function: fn }, who)).status;
    expect(await status('members', {})).toBe(401);
    expect(await status('members', { token: alice.token })).toBe(202);
    expect(await status('admins', { token: alice.token })).toBe(403);
    expect(await status('admins', svc())).toBe(202);
  });

  it('refuses bad input', async () => {
    const bad = async (body: unknown, status: number, code: string) => {
      const r = await s.req('/functions/jobs', { method: 'POST', key: s.keys.service, headers: JSON_H, body: JSON.stringify(body) });
      expect([r.status, (await errorOf(r)).code]).toEqual([status, code]);
    };
    await bad({ function: 'Nope!' }, 400, 'invalid_field');
    await bad({ function: 'missing' }, 404, 'not_found');
    await bad({ function: 'echo', max_attempts: 21 }, 400, 'invalid_field');
    await bad({ function: 'echo', max_attempts: 0 }, 400, 'invalid_field');
    await bad({ function: 'echo', run_at: 'tomorrow' }, 400, 'invalid_field');
    await bad({ function: 'echo', idempotency_key: '' }, 400, 'invalid_field');
    await bad({ function: 'echo', extra: 1 }, 400, 'invalid_field');
    await bad([1], 400, 'invalid_body');
    for (const q of ['status=bogus', 'limit=0', 'limit=1001', 'offset=-1']) {
      const list = await s.req(`/functions/jobs?${q}`, { key: s.keys.service });
      expect([list.status, (await errorOf(list)).code], q).toEqual([400, 'invalid_field']);
    }
    const page = await call('GET', '/functions/jobs?limit=1', undefined, svc());
    expect([page.body.jobs.length, page.body.limit, page.body.offset, page.body.next_offset]).toEqual([1, 1, 0, 1]);
    expect((await s.req('/functions/jobs', { method: 'POST', key: null, headers: JSON_H, body: '{"function":"echo"}' })).status).toBe(401);
  });

  it('dedupes an idempotency key', async () => {
    const a = await call('POST', '/functions/jobs', { function: 'nap', idempotency_key: 'once', run_at: '2026-03-02T00:00:00Z' }, svc());
    const b = await call('POST', '/functions/jobs', { function: 'nap', idempotency_key: 'once', run_at: '2026-03-02T00:00:00Z' }, svc());
    expect([a.status, b.status, b.body.id]).toEqual([202, 202, a.body.id]);
    const c = await call('POST', '/functions/jobs', { function: 'nap', idempotency_key: 'once' }, { token: alice.token });
    expect(c.body.id).not.toBe(a.body.id);
  });
});

describe('failures, cancel and retry', () => {
  it('backs off 10 s, then 20 s, then dead; retry revives it', async () => {
    const start = clock.t;
    const r = await call('POST', '/functions/jobs', { function: 'boom', max_attempts: 3 }, svc());
    let job = await until(r.body.id, (j) => j.attempts === 1 && j.status === 'failed');
    expect([job.last_error, job.next_run_at, job.finished_at]).toEqual(['boom', new Date(start + 10_000).toISOString(), null]);
    expect(job.logs).toEqual([{ level: 'error', message: 'about to fail', at: expect.any(String) }]);
    clock.t = start + 10_000;
    job = await until(r.body.id, (j) => j.attempts === 2 && j.status === 'failed');
    expect(job.next_run_at).toBe(new Date(start + 30_000).toISOString());
    clock.t = start + 30_000;
    job = await until(r.body.id, (j) => j.status === 'dead');
    expect([job.attempts, job.last_error, job.next_run_at, job.finished_at]).toEqual([3, 'boom', null, new Date(start + 30_000).toISOString()]);
    const dead = await call('GET', '/functions/jobs?status=dead', undefined, svc());
    expect(dead.body.jobs.map((j: { id: string }) => j.id)).toContain(r.body.id);

    await deploy('boom', 'export default async () => "fixed"');
    const again = await call('POST', `/functions/jobs/${r.body.id}/retry`, undefined, svc());
    expect([again.status, again.body.status, again.body.attempts]).toEqual([200, 'queued', 0]);
    job = await until(r.body.id, settled);
    expect([job.status, job.result, job.attempts, job.last_error]).toEqual(['succeeded', 'fixed', 1, null]);
    const twice = await s.req(`/functions/jobs/${r.body.id}/retry`, { method: 'POST', key: s.keys.service });
    expect([twice.status, (await errorOf(twice)).code]).toEqual([409, 'conflict']);
  });

  it('cancels a queued job (204) once; a missing job is 404', async () => {
    const r = await call('POST', '/functions/jobs', { function: 'nap', run_at: '2026-04-01T00:00:00Z' }, svc());
    expect(r.body.run_at).toBe('2026-04-01T00:00:00.000Z');
    expect((await call('DELETE', `/functions/jobs/${r.body.id}`, undefined, svc())).status).toBe(204);
    expect((await call('GET', `/functions/jobs/${r.body.id}`, undefined, svc())).body.status).toBe('cancelled');
    const again = await s.req(`/functions/jobs/${r.body.id}`, { method: 'DELETE', key: s.keys.service });
    expect([again.status, (await errorOf(again)).code]).toEqual([409, 'conflict']);
    expect((await call('DELETE', '/functions/jobs/0190f0f0-0000-7000-8000-000000000000', undefined, svc())).status).toBe(404);
  });

  it('deleting a function sends its queued jobs to dead', async () => {
    await deploy('doomed', 'export default async () => 1');
    const r = await call('POST', '/functions/jobs', { function: 'doomed', run_at: '2026-04-01T00:00:00Z' }, svc());
    expect((await call('DELETE', '/functions/doomed', undefined, svc())).status).toBe(204);
    const job = (await call('GET', `/functions/jobs/${r.body.id}`, undefined, svc())).body;
    expect([job.status, job.last_error]).toEqual(['dead', 'function doomed was deleted']);
  });
});
