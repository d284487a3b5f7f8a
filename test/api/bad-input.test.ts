import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorOf, startTestServer, type TestServer } from '../helpers/server.js';
import { rawRequest, statusOf } from '../helpers/raw.js';

// POST /_admin/login is a JSON endpoint that needs no key, so these cases reach the body parser.
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.close());

const login = (body: RequestInit['body'], headers: Record<string, string> = { 'content-type': 'application/json' }) =>
  fetch(`${s.url}/_admin/login`, { method: 'POST', body, headers });

describe('JSON bodies', () => {
  it.each([
    ['malformed JSON', '{"email": '],
    ['a JSON array', '[1,2,3]'],
    ['a JSON string', '"hello"'],
    ['JSON null', 'null'],
    ['deeply nested JSON', '['.repeat(5000) + ']'.repeat(5000)],
    ['deeply nested objects', '{"a":'.repeat(200) + '1' + '}'.repeat(200)],
  ])('%s is 400 invalid_body', async (_name, body) => {
    const res = await login(body);
    expect(res.status).toBe(400);
    expect((await errorOf(res)).code).toBe('invalid_body');
  });

  it('invalid UTF-8 is 400 invalid_body', async () => {
    const res = await login(Buffer.from([0x7b, 0x22, 0x65, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]));
    expect(res.status).toBe(400);
    const err = await errorOf(res);
    expect(err.code).toBe('invalid_body');
    expect(err.message).toMatch(/UTF-8/);
  });

  it('an unsupported content type is 415', async () => {
    const res = await login('email=a&password=b', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(res.status).toBe(415);
    expect((await errorOf(res)).code).toBe('unsupported_media_type');
  });

  it('judges each content type on its own, whatever came before', async () => {
    // note: the last answer is cached; a JSON type after a refused one (and the reverse) must not inherit it.
    const types = ['application/json', 'text/plain', 'application/merge-patch+json; charset=utf-8', 'application/jsonx', 'Application/JSON'];
    const statuses = [];
    for (const type of types) statuses.push((await login('{"email":"a@example.com","password":"wrong-password"}', { 'content-type': type })).status);
    // a JSON type reaches the login check (401: no such operator), any other is 415
    expect(statuses).toEqual([401, 415, 401, 415, 401]);
  });

  it('a 100 MB declared body is refused with 413 before it is read', async () => {
    const raw = await rawRequest(
      s.url,
      `POST /_admin/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${100 * 1024 * 1024}\r\n\r\n{"email":`,
    );
    expect(statusOf(raw)).toBe(413);
    expect(raw).toContain('"code":"payload_too_large"');
  });

  it('a chunked body growing past the limit is cut off with 413 and the error envelope', async () => {
    // A raw socket that sends 64 KiB chunks until the server answers (or 8 MiB went out), and
    // reads every byte the server sends: the 413 must arrive; a reset without it is a failure.
    const { hostname, port } = new URL(s.url);
    const { raw, sent } = await new Promise<{ raw: string; sent: number }>((resolve) => {
      const sock = connect(Number(port), hostname);
      let got = '';
      let sent = 0;
      const timer = setTimeout(() => sock.destroy(), 10_000);
      sock.on('data', (d: Buffer) => (got += d.toString('latin1')));
      sock.on('error', () => {}); // a reset after the answer; 'close' follows
      sock.on('close', () => {
        clearTimeout(timer);
        resolve({ raw: got, sent });
      });
      sock.on('connect', () => {
        sock.write('POST /_admin/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n');
        const chunk = `10000\r\n${' '.repeat(0x10000)}\r\n`;
        const pump = (): void => {
          while (got === '' && !sock.destroyed && sent < 8 * 1024 * 1024) {
            sent += 0x10000;
            if (!sock.write(chunk)) return void sock.once('drain', pump);
          }
        };
        pump();
      });
    });
    expect(statusOf(raw)).toBe(413);
    expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4))).toEqual({ error: { code: 'payload_too_large', message: 'request body exceeds the limit of 1048576 bytes' } });
    // it answered before the whole 8 MiB was sent
    expect(sent).toBeLessThan(8 * 1024 * 1024);
  });
});

describe('keys', () => {
  it('no key is 401 unauthorized', async () => {
    const res = await s.req('/health/key', { key: null });
    expect(res.status).toBe(401);
    expect((await errorOf(res)).code).toBe('unauthorized');
  });

  it('a key with a valid prefix and a wrong secret is 401', async () => {
    const res = await s.req('/health/key', { key: 'svc_live_' + 'A'.repeat(32) });
    expect(res.status).toBe(401);
    expect((await errorOf(res)).code).toBe('unauthorized');
  });

  it('a revoked key is 401 at once', async () => {
    const { id, secret } = s.createKey(['data:read'], { name: 'temp' });
    expect((await s.req('/health/key', { key: secret })).status).toBe(200);
    s.revokeKey(id);
    const res = await s.req('/health/key', { key: secret });
    expect(res.status).toBe(401);
  });

  it('a key of a deleted project is 401', async () => {
    const other = s.createProject('doomed');
    expect((await s.req('/health/key', { key: other.service })).status).toBe(200);
    s.deleteProject(other.id);
    const res = await s.req('/health/key', { key: other.service });
    expect(res.status).toBe(401);
    expect((await errorOf(res)).code).toBe('unauthorized');
  });

  it('a key lacking the scope is 401 missing_scope', async () => {
    const res = await s.req('/live', { key: s.keys.publishable });
    expect(res.status).toBe(401);
    expect((await errorOf(res)).code).toBe('missing_scope');
  });

  it('an operator session needs an existing X-Service-Project', async () => {
    const ok = await s.req('/health/key', { key: null, headers: { authorization: `Bearer ${s.operatorToken}`, 'x-service-project': s.projectId } });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ project_id: s.projectId, role: 'service_role', operator: 'ops@example.com' });
    const missing = await s.req('/health/key', { key: null, headers: { authorization: `Bearer ${s.operatorToken}`, 'x-service-project': 'nope' } });
    expect(missing.status).toBe(401);
    const forged = await s.req('/health/key', { key: null, headers: { authorization: 'Bearer lcd_' + 'x'.repeat(32), 'x-service-project': s.projectId } });
    expect(forged.status).toBe(401);
  });
});

describe('hostile requests', () => {
  it('a header injection attempt in X-Request-Id is not echoed', async () => {
    const raw = await rawRequest(s.url, 'GET /health HTTP/1.1\r\nHost: x\r\nX-Request-Id: abc\r\n Set-Cookie: evil=1\r\nConnection: close\r\n\r\n');
    expect(raw.toLowerCase()).not.toContain('set-cookie');
    const res = await fetch(`${s.url}/health`, { headers: { 'x-request-id': 'a b"<script>' } });
    expect(res.headers.get('x-request-id')).not.toContain('<script>');
    const safe = await fetch(`${s.url}/health`, { headers: { 'x-request-id': 'trace-123' } });
    expect(safe.headers.get('x-request-id')).toBe('trace-123');
  });

  it('X-Request-Id is echoed when it is 1-128 characters of [A-Za-z0-9._:-], else replaced by a generated id', async () => {
    const idOf = async (id: string): Promise<string | null> => (await fetch(`${s.url}/health`, { headers: { 'x-request-id': id } })).headers.get('x-request-id');
    const max = 'a.b_c:d-'.repeat(16);
    expect(max).toHaveLength(128);
    expect(await idOf(max)).toBe(max);
    const generated = /^[A-Za-z0-9_-]{8}-[0-9a-z]+$/;
    for (const bad of [`${max}x`, 'a/b', 'a b', 'é']) {
      const got = await idOf(bad);
      expect(got, bad).toMatch(generated);
    }
  });

  it.each(['/db/../secrets', '/health/..', '/live/./stream', '/%2e%2e/health', '/db/%2e%2e/secrets', '/db/x%2f..%2fsecrets'])(
    'path traversal %s is 400 invalid_request',
    async (path) => {
      const raw = await rawRequest(s.url, `GET ${path} HTTP/1.1\r\nHost: x\r\nX-Service-Key: ${s.keys.service}\r\nConnection: close\r\n\r\n`);
      expect(statusOf(raw)).toBe(400);
      expect(raw).toContain('"code":"invalid_request"');
    },
  );

  it('errors never carry a stack trace', async () => {
    const res = await login('{bad');
    const text = await res.text();
    expect(text).not.toMatch(/\n\s+at /);
    expect(text).not.toContain('.ts:');
  });
});
