import { afterAll, describe, expect, it, vi } from 'vitest';
import { killAll, startServe, tempDir, type ServeProcess } from '../helpers/cli.js';

// Black-box: a job whose process is killed with SIGKILL mid-run is claimed again by the next
// process once its lease (the function's timeout plus the grace, shortened here) has run out.

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });
afterAll(killAll);

const ENV = { PLATFORM_EDGE_JOBS_LEASE_GRACE_MS: '300' };

async function call(s: ServeProcess, method: string, path: string, body?: unknown) {
  const res = await s.req(path, {
    method,
    key: s.info.keys.service,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}

async function until(s: ServeProcess, id: string, done: (j: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
  const end = Date.now() + 30_000;
  for (;;) {
    const r = await call(s, 'GET', `/functions/jobs/${id}`);
    expect(r.status, r.text).toBe(200);
    if (done(r.body)) return r.body;
    if (Date.now() > end) throw new Error(`job ${id} still ${r.text}`);
    await new Promise((res) => setTimeout(res, 25));
  }
}

describe('jobs survive kill -9', () => {
  it('a running job of a killed process runs again after a restart', async () => {
    const dir = tempDir();
    const first = await startServe(['--data-dir', dir], { env: ENV });
    const src = 'export default async (args) => { const end = Date.now() + args.ms; while (Date.now() < end) {} return "slept " + args.ms; }';
    const put = await call(first, 'PUT', '/functions/spin', { source: src, timeout_ms: 3000 });
    expect(put.status, put.text).toBe(201);
    const job = await call(first, 'POST', '/functions/jobs', { function: 'spin', args: { ms: 2500 } });
    expect(job.status, job.text).toBe(202);
    const running = await until(first, job.body.id, (j) => j.status !== 'queued');
    expect([running.status, running.attempts]).toEqual(['running', 1]);
    first.proc.kill('SIGKILL');
    const gone = await first.exited;
    expect(gone.signal).toBe('SIGKILL');

    const second = await startServe(['--data-dir', dir], { env: ENV });
    try {
      const done = await until(second, job.body.id, (j) => j.status === 'succeeded' || j.status === 'dead');
      expect([done.status, done.attempts, done.result, done.last_error]).toEqual(['succeeded', 2, 'slept 2500', null]);
    } finally {
      await second.stop('SIGTERM');
    }
  });
});
