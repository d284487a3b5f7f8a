import { existsSync, readdirSync, statSync } from 'node:fs';
import { connect, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { cliJson, exitWithin, killAll, poll, runCli, startServe, tempDir, type ServeProcess } from '../helpers/cli.js';

// Black-box tests of `platform-edge serve`: real processes from the built bundle, on
// 127.0.0.1 with port 0. Independent servers start in parallel; every process is killed in afterAll.

const KEY = /^svc_live_[A-Za-z0-9_-]{16,}$/;
const OPERATOR = /^lcd_[A-Za-z0-9_-]{16,}$/;
const STACK = /\n\s+at .+:\d+/;

// note: the "cli" vitest project does not inherit the root timeouts; spawned processes on a busy machine need them.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

afterAll(killAll);

/** The ephemeral folders serve created under a TMPDIR. */
const ephemeralDirs = (tmp: string): string[] => readdirSync(tmp).filter((n) => n.startsWith('platform-edge-'));

/** True when a TCP connection to the port is refused (the listen socket is closed). */
const refused = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', () => resolve(true));
  });

/**
 * Opens a raw connection and sends the headers of POST /_admin/login with
 * `Expect: 100-continue`; resolves once the server answered "100 Continue" (so it has taken
 * the request). `finish()` sends the body; `raw()` is everything received.
 */
async function requestInFlight(port: number): Promise<{ sock: Socket; raw(): string; finish(): void }> {
  const body = JSON.stringify({ email: 'nobody@example.com', password: 'not-the-password' });
  const sock = connect(port, '127.0.0.1');
  let raw = '';
  sock.setEncoding('utf8').on('data', (d: string) => (raw += d));
  await new Promise<void>((r, j) => sock.once('connect', () => r()).once('error', j));
  sock.write(
    `POST /_admin/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\n\r\n`,
  );
  if (!(await poll(async () => raw.includes('100 Continue'), 5000, 10))) throw new Error(`no 100 Continue: ${raw}`);
  return { sock, raw: () => raw, finish: () => sock.write(body) };
}

describe('serve --ephemeral --json', () => {
  let tmp: string;
  let s: ServeProcess;
  let sigint: ServeProcess;
  let sigintTmp: string;
  let forced: ServeProcess;
  let forcedTmp: string;

  beforeAll(async () => {
    tmp = tempDir();
    sigintTmp = tempDir();
    forcedTmp = tempDir();
    // note: TMPDIR points each server's ephemeral folder into a folder this test watches.
    [s, sigint, forced] = await Promise.all([
      startServe(['--ephemeral'], { env: { TMPDIR: tmp } }),
      startServe(['--ephemeral'], { env: { TMPDIR: sigintTmp } }),
      startServe(['--ephemeral'], { env: { TMPDIR: forcedTmp } }),
    ]);
  });

  it('prints one JSON line with url, project id, publishable and service keys and an operator token', () => {
    expect(Object.keys(s.info).sort()).toEqual(['keys', 'operator_token', 'project_id', 'url']);
    expect(s.info.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(s.port).toBeGreaterThan(0);
    expect(s.info.project_id).toMatch(/^[a-z0-9]+$/);
    expect(Object.keys(s.info.keys).sort()).toEqual(['publishable', 'service']);
    expect(s.info.keys.publishable).toMatch(KEY);
    expect(s.info.keys.service).toMatch(KEY);
    expect(s.info.keys.publishable).not.toBe(s.info.keys.service);
    expect(s.info.operator_token).toMatch(OPERATOR);
  });

  it('answers /health without auth', async () => {
    const res = await fetch(`${s.url}/health`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { status: string; version: string; uptime_s: number };
    expect(body.status).toBe('ok');
    expect(typeof body.version).toBe('string');
    expect(typeof body.uptime_s).toBe('number');
  });

  it('the printed keys belong to the printed project: service key is service_role, publishable is anon', async () => {
    const svc = await s.req('/health/key', { key: s.info.keys.service });
    expect(svc.status).toBe(200);
    const svcBody = (await svc.json()) as { project_id: string; role: string; scopes: string[] };
    expect(svcBody.project_id).toBe(s.info.project_id);
    expect(svcBody.role).toBe('service_role');
    expect(svcBody.scopes).toContain('auth:admin');

    const pub = await s.req('/health/key', { key: s.info.keys.publishable });
    expect(pub.status).toBe(200);
    const pubBody = (await pub.json()) as { project_id: string; role: string; scopes: string[] };
    expect(pubBody.project_id).toBe(s.info.project_id);
    expect(pubBody.role).toBe('anon');
    expect(pubBody.scopes).not.toContain('auth:admin');
  });

  it('the operator token works as Authorization: Bearer with X-Service-Project on /health/key and /live', async () => {
    const headers = { authorization: `Bearer ${s.info.operator_token}`, 'x-service-project': s.info.project_id };
    const key = await fetch(`${s.url}/health/key`, { headers });
    expect(key.status).toBe(200);
    const body = (await key.json()) as { project_id: string; operator: string | null };
    expect(body.project_id).toBe(s.info.project_id);
    expect(body.operator).toBe('admin@localhost');

    const live = await fetch(`${s.url}/live`, { headers });
    expect(live.status).toBe(200);
    const snap = (await live.json()) as { seq: number; events: { seq: number; kind: string; route?: string; status?: number }[] };
    expect(Object.keys(snap).sort()).toEqual(['edge', 'events', 'seq', 'stats']);
    expect(snap.seq).toBe(snap.events.at(-1)?.seq ?? 0);
    // the /health/key request just made is in the log
    expect(snap.events.filter((e) => e.kind === 'request' && e.route === '/health/key').map((e) => e.status)).toContain(200);

    const noProject = await fetch(`${s.url}/live`, { headers: { authorization: headers.authorization } });
    expect(noProject.status).toBe(401);
  });

  it('keeps its data in one fresh temporary folder (control.db, master.key 0600, projects/<id>)', () => {
    const dirs = ephemeralDirs(tmp);
    expect(dirs).toHaveLength(1);
    const dir = join(tmp, dirs[0]!);
    expect(existsSync(join(dir, 'control.db'))).toBe(true);
    expect(statSync(join(dir, 'master.key')).mode & 0o777).toBe(0o600);
    expect(existsSync(join(dir, 'projects', s.info.project_id))).toBe(true);
  });

  it('a second serve on the same port fails with exit 1 and a message, and leaves no ephemeral folder', async () => {
    const tmp2 = tempDir();
    const r = await runCli(['serve', '--ephemeral', '--host', '127.0.0.1', '--port', String(s.port), '--json'], { env: { TMPDIR: tmp2 } });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(String(s.port));
    expect(r.stderr).not.toMatch(STACK);
    expect(ephemeralDirs(tmp2)).toEqual([]);
    // the first server still answers alone
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
  });

  it.each(['uws', 'node'])('a port held by another process: exit 1, and the message says the port is in use and which (%s)', async (backend) => {
    const holder = createNetServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
    const port = (holder.address() as AddressInfo).port;
    try {
      const r = await runCli(['serve', '--ephemeral', '--host', '127.0.0.1', '--port', String(port), '--json'], { env: { PLATFORM_EDGE_HTTP: backend } });
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(r.stderr.trim()).toBe(`platform-edge serve: cannot listen on 127.0.0.1:${port}: port ${port} is already in use by another process (choose another with --port)`);
    } finally {
      holder.close();
    }
  });

  it('SIGTERM: exit 0, the ephemeral folder is deleted, stdout had exactly one line', async () => {
    const r = await s.stop('SIGTERM');
    expect(r.signal).toBeNull();
    expect(r.code).toBe(0);
    expect(ephemeralDirs(tmp)).toEqual([]);
    const lines = r.stdout.split('\n').filter((l) => l !== '');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toEqual(s.info);
    expect(r.stderr).not.toMatch(STACK);
  });

  it('SIGINT: exit 0 and the ephemeral folder is deleted', async () => {
    expect(ephemeralDirs(sigintTmp)).toHaveLength(1);
    const r = await sigint.stop('SIGINT');
    expect(r.signal).toBeNull();
    expect(r.code).toBe(0);
    expect(ephemeralDirs(sigintTmp)).toEqual([]);
  });

  it('a second signal while shutdown waits for a request forces exit 1, and still removes the ephemeral folder', async () => {
    const inFlight = await requestInFlight(forced.port);
    try {
      forced.proc.kill('SIGTERM');
      expect(await poll(() => refused(forced.port), 5000, 20)).toBe(true);
      expect(ephemeralDirs(forcedTmp)).toHaveLength(1);
      forced.proc.kill('SIGINT');
      const r = await forced.exited;
      expect(r.signal).toBeNull();
      expect(r.code).toBe(1);
      expect(ephemeralDirs(forcedTmp)).toEqual([]);
    } finally {
      inFlight.sock.destroy();
    }
  });
});

describe.each<{ backend: string; env: Record<string, string> }>([
  { backend: 'default', env: {} },
  { backend: 'node', env: { PLATFORM_EDGE_HTTP: 'node' } },
])('graceful shutdown ($backend HTTP backend)', ({ env }) => {
  let s: ServeProcess;
  beforeAll(async () => {
    s = await startServe(['--ephemeral'], { env });
  });

  it('SIGTERM: stops accepting, answers the request in flight, ends an open SSE stream cleanly, exits 0', async () => {
    // An SSE stream, open before the signal.
    const stream = await s.req('/live/stream', { key: s.info.keys.service });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
    let sse = '';
    while (!sse.includes('event: hello')) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`stream ended before hello: ${sse}`);
      sse += value;
    }

    // A request in flight: the server has taken it; its body follows only after shutdown began.
    const { sock, raw, finish } = await requestInFlight(s.port);

    s.proc.kill('SIGTERM');
    // Shutdown has begun once new connections are refused.
    expect(await poll(() => refused(s.port), 5000, 20)).toBe(true);

    // The open stream ends cleanly (a clean end, not a reset: read() resolves done).
    for (;;) {
      const { done } = await reader.read();
      if (done) break;
    }

    finish();
    expect(await poll(async () => raw().includes('"invalid_credentials"'), 5000, 10)).toBe(true);
    const response = raw().slice(raw().indexOf('\r\n\r\n') + 4);
    expect(response).toMatch(/^HTTP\/1\.1 401 /);
    const payload = JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4)) as { error: { code: string } };
    expect(payload.error.code).toBe('invalid_credentials');

    // note: a bound, not a timing measure: the connection stays open (idle keep-alive) and must
    // not hold the process until the HTTP library's idle timeout (10 s with uWS).
    const r = await exitWithin(s, 4000);
    sock.destroy();
    expect(r).not.toBeNull();
    expect(r!.signal).toBeNull();
    expect(r!.code).toBe(0);
  });
});

describe('serve on a persistent --data-dir', () => {
  it('a second start reuses the project and prints the same keys; project list shows it', async () => {
    const dir = tempDir();
    const first = await startServe(['--data-dir', dir]);
    // a request on a keep-alive connection must not delay the exit
    expect((await first.req('/health/key', { key: first.info.keys.service })).status).toBe(200);
    const r1 = await first.stop('SIGTERM');
    expect(r1.code).toBe(0);
    expect(existsSync(join(dir, 'control.db'))).toBe(true);
    expect(statSync(join(dir, 'master.key')).mode & 0o777).toBe(0o600);

    const second = await startServe(['--data-dir', dir]);
    try {
      expect(second.info.project_id).toBe(first.info.project_id);
      expect(second.info.keys).toEqual(first.info.keys);
      expect(second.info.operator_token).toMatch(OPERATOR);
      const key = await second.req('/health/key', { key: first.info.keys.publishable });
      expect(key.status).toBe(200);
      expect(((await key.json()) as { project_id: string }).project_id).toBe(first.info.project_id);

      // the CLI works beside the running server
      const list = await cliJson<{ projects: { id: string; name: string; created_at: string }[] }>(['project', 'list', '--data-dir', dir]);
      expect(list.projects).toEqual([{ id: first.info.project_id, name: 'default', created_at: expect.any(String) as string }]);
    } finally {
      const r2 = await second.stop('SIGINT');
      expect(r2.code).toBe(0);
    }
    // not ephemeral: the folder stays
    expect(existsSync(join(dir, 'projects', first.info.project_id))).toBe(true);
  });

  it('--public-url is what the JSON line shows (trailing slash dropped)', async () => {
    const s = await startServe(['--ephemeral', '--public-url', 'https://api.example.com/']);
    try {
      expect(s.info.url).toBe('https://api.example.com');
    } finally {
      expect((await s.stop()).code).toBe(0);
    }
  });

  it('PLATFORM_EDGE_PUBLIC_URL is checked and trimmed like --public-url; the flag wins over it', async () => {
    const [fromEnv, flagWins] = await Promise.all([
      startServe(['--ephemeral'], { env: { PLATFORM_EDGE_PUBLIC_URL: '  https://env.example.com/ ' } }),
      startServe(['--ephemeral', '--public-url', 'https://flag.example.com'], { env: { PLATFORM_EDGE_PUBLIC_URL: 'https://env.example.com' } }),
    ]);
    try {
      expect(fromEnv.info.url).toBe('https://env.example.com');
      expect(flagWins.info.url).toBe('https://flag.example.com');
    } finally {
      expect((await fromEnv.stop()).code).toBe(0);
      expect((await flagWins.stop()).code).toBe(0);
    }
  });

  it('PLATFORM_EDGE_MAX_JSON_BODY sets the JSON body limit: at it 201, one byte over 413 naming it', async () => {
    const s = await startServe(['--ephemeral'], { env: { PLATFORM_EDGE_MAX_JSON_BODY: '2000' } });
    try {
      const body = (bytes: number): string => `{"data":{"s":"${'x'.repeat(bytes - 17)}"}}`;
      expect(body(2000)).toHaveLength(2000);
      const post = (b: string) => s.req('/db/tables/notes/rows', { method: 'POST', key: s.info.keys.service, headers: { 'content-type': 'application/json' }, body: b });
      const made = await s.req('/db/tables', { method: 'POST', key: s.info.keys.service, headers: { 'content-type': 'application/json' }, body: '{"name":"notes"}' });
      expect(made.status).toBe(201);
      expect((await post(body(2000))).status).toBe(201);
      const over = await post(body(2001));
      expect(over.status).toBe(413);
      expect(await over.json()).toEqual({ error: { code: 'payload_too_large', message: 'request body exceeds the limit of 2000 bytes' } });
    } finally {
      expect((await s.stop()).code).toBe(0);
    }
  });

  it('PLATFORM_EDGE_DURABILITY=full and =normal start the server, which then serves', async () => {
    const servers = await Promise.all([
      startServe(['--ephemeral'], { env: { PLATFORM_EDGE_DURABILITY: 'full' } }),
      startServe(['--ephemeral'], { env: { PLATFORM_EDGE_DURABILITY: 'normal' } }),
    ]);
    try {
      for (const s of servers) {
        const res = await s.req('/health');
        expect(res.status).toBe(200);
      }
    } finally {
      for (const s of servers) expect((await s.stop()).code).toBe(0);
    }
  });
});
