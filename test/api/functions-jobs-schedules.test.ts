import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorOf, startTestServer, type TestServer } from '../helpers/server.js';

// Schedules (cron, on an injected clock) and change triggers of functions, over HTTP.

let s: TestServer;
const JSON_H = { 'content-type': 'application/json' };
const clock = { t: Date.parse('2026-03-01T10:02:00.000Z') };

async function call(method: string, path: string, body?: unknown) {
  const res = await s.req(path, { method, key: s.keys.service, headers: body === undefined ? {} : JSON_H, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}

interface Job {
  id: string;
  function: string;
  status: string;
  args: unknown;
  result: unknown;
  created_at: string;
}
const jobsOf = async (fn: string): Promise<Job[]> => ((await call('GET', '/functions/jobs?limit=1000')).body.jobs as Job[]).filter((j) => j.function === fn);

/** Polls the jobs of `fn` until `n` of them succeeded (bounded: 10 s). */
async function succeeded(fn: string, n: number): Promise<Job[]> {
  const end = Date.now() + 10_000;
  for (;;) {
    const jobs = await jobsOf(fn);
    if (jobs.filter((j) => j.status === 'succeeded').length >= n) return jobs;
    if (Date.now() > end) throw new Error(`jobs of ${fn}: ${JSON.stringify(jobs)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

beforeAll(async () => {
  s = await startTestServer({ jobsPollMs: 20, jobsClock: { now: () => clock.t, random: () => 0.5 } });
});
afterAll(() => s.close());

describe('schedules', () => {
  it('each firing enqueues a job; firings missed while away run once', async () => {
    const put = await call('PUT', '/functions/tick', { source: 'export default async (args, ctx) => ({ args, user: ctx.user })', schedules: [{ cron: '*/5 * * * *', args: { from: 'cron' } }] });
    expect(put.status, put.text).toBe(201);
    expect(put.body.options.schedules).toEqual([{ cron: '*/5 * * * *', args: { from: 'cron' } }]);
    expect(await jobsOf('tick')).toEqual([]);

    clock.t = Date.parse('2026-03-01T10:05:00.000Z');
    const [first] = await succeeded('tick', 1);
    expect([first!.args, first!.result, first!.created_at]).toEqual([{ from: 'cron' }, { args: { from: 'cron' }, user: null }, '2026-03-01T10:05:00.000Z']);

    // an hour on: twelve firings missed, one job
    clock.t = Date.parse('2026-03-01T11:07:30.000Z');
    const after = await succeeded('tick', 2);
    await new Promise((r) => setTimeout(r, 200));
    expect((await jobsOf('tick')).map((j) => j.created_at)).toEqual(['2026-03-01T11:07:30.000Z', '2026-03-01T10:05:00.000Z']);
    expect(after).toHaveLength(2);
  });

  it('refuses a bad schedule at deploy', async () => {
    for (const schedules of [[{ cron: '* * * * * *' }], [{ cron: '99 * * * *' }], [{ cron: '* * * * *', at: 1 }], 'hourly']) {
      const r = await s.req('/functions/bad_cron', { method: 'PUT', key: s.keys.service, headers: JSON_H, body: JSON.stringify({ source: 'export default async () => 1', schedules }) });
      expect([r.status, (await errorOf(r)).code]).toEqual([400, 'invalid_field']);
    }
    expect((await call('GET', '/functions/bad_cron')).status).toBe(404);
  });

  it('deleting a function stops its schedule', async () => {
    clock.t = Date.parse('2026-03-01T12:00:30.000Z');
    await succeeded('tick', 3);
    expect((await call('PUT', '/functions/gone_tick', { source: 'export default async () => 1', schedules: [{ cron: '*/5 * * * *' }] })).status).toBe(201);
    expect((await call('DELETE', '/functions/gone_tick')).status).toBe(204);
    // tick and gone_tick would fire in the same pass at 12:05
    clock.t = Date.parse('2026-03-01T12:05:00.000Z');
    await succeeded('tick', 4);
    expect(await jobsOf('gone_tick')).toEqual([]);
  });
});

describe('triggers', () => {
  it('a matching change enqueues a job with the webhook payload as args', async () => {
    expect((await call('POST', '/db/tables', { name: 'todos' })).status).toBe(201);
    const put = await call('PUT', '/functions/on_todo', {
      source: 'export default async (args) => args.record.title',
      triggers: [{ table: 'todos', events: ['insert'], filter: { done: false } }],
    });
    expect(put.status, put.text).toBe(201);
    const a = await call('POST', '/db/tables/todos/rows', { data: { title: 'a', done: false } });
    expect(a.status, a.text).toBe(201);
    expect((await call('POST', '/db/tables/todos/rows', { data: { title: 'b', done: true } })).status).toBe(201);
    expect((await call('PATCH', `/db/tables/todos/rows/${a.body.id}`, { data: { title: 'a2', done: false } })).status).toBe(200);
    const jobs = await succeeded('on_todo', 1);
    expect(jobs).toHaveLength(1);
    const args = jobs[0]!.args as Record<string, unknown>;
    expect(args).toEqual({ id: expect.stringMatching(/^\d+$/), type: 'db.insert', table: 'todos', record: { title: 'a', done: false }, old_record: null, occurred_at: a.body.created_at });
    expect(jobs[0]!.result).toBe('a');
  });

  it('refuses a bad trigger at deploy', async () => {
    for (const triggers of [[{ table: 'todos', events: ['upsert'] }], [{ table: 'todos', events: [] }], [{ events: ['insert'] }], [{ table: 'todos', events: ['insert'], filter: 'x' }]]) {
      const r = await s.req('/functions/bad_trigger', { method: 'PUT', key: s.keys.service, headers: JSON_H, body: JSON.stringify({ source: 'export default async () => 1', triggers }) });
      expect([r.status, (await errorOf(r)).code]).toEqual([400, 'invalid_field']);
    }
  });
});
