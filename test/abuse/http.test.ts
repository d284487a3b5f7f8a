import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { rawRequest } from '../helpers/raw.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// note: the abuse battery's cases get 60 s each: they share the cores with the API files (a
// 16 MiB GraphQL answer, a trickled body). vi.setConfig lasts for this file only.
vi.setConfig({ testTimeout: 60_000 });

// The protocol edges of the HTTP backends (issue 11, items 4, 5, 6 and 11): pipelining,
// header and URL limits, slow clients and connection caps, body limits on every route.

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
  const mk = await s.req('/db/tables', { method: 'POST', key: s.keys.service, body: JSON.stringify({ name: 'pp' }), headers: { 'content-type': 'application/json' } });
  expect(mk.status).toBe(201);
  const rel = { name: 'pq', type: 'relational', columns: [{ name: 'tag', type: 'text' }] };
  expect((await s.req('/db/tables', { method: 'POST', key: s.keys.service, body: JSON.stringify(rel), headers: { 'content-type': 'application/json' } })).status).toBe(201);
});
afterAll(() => s.close());

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Splits a raw HTTP/1.1 byte stream into its responses (Content-Length framed, as both backends send them). */
function answers(raw: string): Answer[] {
  const out: Answer[] = [];
  let at = 0;
  while (at < raw.length) {
    const end = raw.indexOf('\r\n\r\n', at);
    if (end === -1) throw new Error(`a truncated response: ${JSON.stringify(raw.slice(at))}`);
    const [statusLine, ...lines] = raw.slice(at, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const l of lines) {
      const i = l.indexOf(':');
      headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    out.push({ status: Number(statusLine!.split(' ')[1]), headers, body: raw.slice(end + 4, end + 4 + length) });
    at = end + 4 + length;
  }
  return out;
}

/**
 * Sends raw bytes and resolves with what came back once `n` whole responses arrived, the
 * server closed the connection, or `capMs` passed (a bound, not an expectation).
 */
function rawAnswers(payload: string, n: number, capMs = 10_000): Promise<{ raw: string; closed: boolean }> {
  const { hostname, port } = new URL(s.url);
  return new Promise((resolve) => {
    const sock = connect(Number(port), hostname);
    let raw = '';
    const done = (closed: boolean): void => {
      clearTimeout(timer);
      sock.destroy();
      resolve({ raw, closed });
    };
    const timer = setTimeout(() => done(false), capMs);
    sock.setEncoding('latin1');
    sock.on('data', (d: string) => {
      raw += d;
      try {
        if (answers(raw).length >= n) done(false);
      } catch {
        // note: a response still arriving.
      }
    });
    sock.on('close', () => done(true));
    sock.on('error', () => {});
    sock.on('connect', () => sock.write(payload));
  });
}

const key = (k: string): string => `X-Service-Key: ${k}\r\n`;
const post = (path: string, body: string, id: string, k = s.keys.publishable): string =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\n${key(k)}X-Request-Id: ${id}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
const get = (path: string, id: string, extra = ''): string => `GET ${path} HTTP/1.1\r\nHost: x\r\nX-Request-Id: ${id}\r\n${extra}\r\n`;

const rowsWith = async (tag: string): Promise<unknown[]> => {
  const res = await s.req(`/db/tables/pp/rows?limit=100`);
  expect(res.status).toBe(200);
  const { rows } = (await res.json()) as { rows: { data: { tag?: string } }[] };
  return rows.filter((r) => r.data.tag === tag);
};
const usersCount = async (): Promise<number> => {
  const res = await s.req('/auth/users?limit=1', { key: s.keys.service });
  expect(res.status).toBe(200);
  return ((await res.json()) as { total: number }).total;
};

describe('HTTP/1.1 pipelining (item 4)', () => {
  it('answers three pipelined GET /health in order on one connection', async () => {
    const { raw } = await rawAnswers(['one', 'two', 'three'].map((id) => get('/health', id)).join(''), 3);
    const got = answers(raw);
    expect(got.map((a) => [a.status, a.headers['x-request-id']])).toEqual([
      [200, 'one'],
      [200, 'two'],
      [200, 'three'],
    ]);
    expect(JSON.parse(got[2]!.body)).toMatchObject({ status: 'ok' });
  });

  it('answers two pipelined row inserts in order, and stores each once', async () => {
    const { raw } = await rawAnswers(post('/db/tables/pp/rows', '{"data":{"tag":"pipe2","n":1}}', 'a') + post('/db/tables/pp/rows', '{"data":{"tag":"pipe2","n":2}}', 'b'), 2);
    const got = answers(raw);
    expect(got.map((a) => [a.status, a.headers['x-request-id']])).toEqual([
      [201, 'a'],
      [201, 'b'],
    ]);
    expect(got.map((a) => (JSON.parse(a.body) as { data: unknown }).data)).toEqual([
      { tag: 'pipe2', n: 1 },
      { tag: 'pipe2', n: 2 },
    ]);
    expect(await rowsWith('pipe2')).toHaveLength(2);
  });

  it('answers a request that awaits when it is the last of a pipelined write', async () => {
    const before = await usersCount();
    const { raw } = await rawAnswers(post('/db/tables/pp/rows', '{"data":{"tag":"pipe3"}}', 'a') + post('/auth/anonymous', '', 'b'), 2);
    const got = answers(raw);
    expect(got.map((a) => [a.status, a.headers['x-request-id']])).toEqual([
      [201, 'a'],
      [200, 'b'],
    ]);
    expect(await rowsWith('pipe3')).toHaveLength(1);
    expect(await usersCount()).toBe(before + 1);
  });

  it('a request written while the one before it awaits is answered after it, in order, on both backends', async () => {
    const before = await usersCount();
    const { hostname, port } = new URL(s.url);
    const sock = connect(Number(port), hostname);
    let raw = '';
    sock.setEncoding('latin1').on('data', (d: string) => (raw += d));
    const closed = new Promise<void>((r) => sock.once('close', () => r()));
    sock.on('error', () => {});
    await new Promise<void>((r) => sock.once('connect', () => r()));
    sock.write(post('/auth/register', JSON.stringify({ email: 'pipe5@example.com', password: 'a long enough password' }), 'a'));
    // note: the second request goes in a later write, while the first hashes its password.
    await new Promise((r) => setTimeout(r, 20));
    sock.write(post('/db/tables/pp/rows', '{"data":{"tag":"pipe5"}}', 'b'));
    const two = async (): Promise<boolean> => {
      for (let i = 0; i < 200; i++) {
        try {
          if (answers(raw).length >= 2) return true;
        } catch {
          // note: a response still arriving.
        }
        if (await Promise.race([closed.then(() => true), new Promise((r) => setTimeout(() => r(false), 25))])) return false;
      }
      return false;
    };
    expect(await two()).toBe(true);
    sock.destroy();
    expect(answers(raw).map((a) => [a.status, a.headers['x-request-id']])).toEqual([
      [200, 'a'],
      [201, 'b'],
    ]);
    expect(await rowsWith('pipe5')).toHaveLength(1);
    expect(await usersCount()).toBe(before + 1);
  });

  it('a request pipelined behind one that awaits: node answers both; uWS closes the connection and runs neither', async () => {
    // A raw SQL insert goes to the worker pool (it awaits); a row insert is pipelined behind it.
    const sql = JSON.stringify({ sql: "insert into pq (id, tag, created_at, updated_at) values (gen_random_uuid(), 'pipe4', now(), now())" });
    const { raw, closed } = await rawAnswers(post('/db/query', sql, 'a', s.keys.service) + post('/db/tables/pp/rows', '{"data":{"tag":"pipe4"}}', 'b'), 2);
    const inPq = async (): Promise<number> => {
      const res = await s.req('/db/query', { method: 'POST', key: s.keys.service, body: JSON.stringify({ sql: "select count(*)::int as n from pq where tag = 'pipe4'" }), headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(200);
      return ((await res.json()) as { rows: { n: number }[] }).rows[0]!.n;
    };
    if (s.backend === 'node') {
      expect(answers(raw).map((a) => [a.status, a.headers['x-request-id']])).toEqual([
        [200, 'a'],
        [201, 'b'],
      ]);
      expect(await rowsWith('pipe4')).toHaveLength(1);
      expect(await inPq()).toBe(1);
    } else {
      // The pinned uWS closes a connection on which a request arrives while an answer is pending
      // (docs/api.md, "HTTP/1.1 pipelining"): nothing is answered, so nothing may have run.
      expect({ raw, closed }).toEqual({ raw: '', closed: true });
      expect(await rowsWith('pipe4')).toHaveLength(0);
      expect(await inPq()).toBe(0);
    }
  });
});

describe('a body limit on every route (item 11)', () => {
  const big = '{"pad":"' + 'x'.repeat(2 * 1024 * 1024) + '"}';

  it('a 2 MB POST /auth/anonymous (a route that reads no body) is 413 and creates no user', async () => {
    const before = await usersCount();
    const res = await s.req('/auth/anonymous', { method: 'POST', body: big, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: { code: 'payload_too_large', message: 'request body exceeds the limit of 1024 bytes' } });
    expect(await usersCount()).toBe(before);
  });

  it('the same body sent chunked (no Content-Length) is cut off with 413 too', async () => {
    const before = await usersCount();
    const chunk = Buffer.byteLength(big).toString(16);
    const raw = await rawRequest(s.url, `POST /auth/anonymous HTTP/1.1\r\nHost: x\r\n${key(s.keys.publishable)}Transfer-Encoding: chunked\r\n\r\n${chunk}\r\n${big}\r\n0\r\n\r\n`, 1000);
    const [first] = answers(raw);
    expect(first!.status).toBe(413);
    expect(JSON.parse(first!.body)).toEqual({ error: { code: 'payload_too_large', message: 'request body exceeds the limit of 1024 bytes' } });
    expect(await usersCount()).toBe(before);
  });

  it('a small body on a route that reads none is still accepted and ignored', async () => {
    const res = await s.req('/auth/anonymous', { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ user: { is_anonymous: true } });
  });

  it('a GET with a body over the limit is 413', async () => {
    const raw = await rawRequest(s.url, `GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 2048\r\n\r\n${'x'.repeat(2048)}`, 1000);
    const [first] = answers(raw);
    expect(first!.status).toBe(413);
    expect(JSON.parse(first!.body)).toEqual({ error: { code: 'payload_too_large', message: 'request body exceeds the limit of 1024 bytes' } });
  });

  it('a JSON route keeps its own limit: 1 MiB on rows', async () => {
    const res = await s.req('/db/tables/pp/rows', { method: 'POST', body: big, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: { code: 'payload_too_large', message: 'request body exceeds the limit of 1048576 bytes' } });
  });
});

/** rawRequest, with a reset before any answer read as no answer (''). */
const rawOrReset = (payload: string, waitMs = 1000): Promise<string> => rawRequest(s.url, payload, waitMs).catch((e: NodeJS.ErrnoException) => (e.code === 'ECONNRESET' ? '' : Promise.reject(e)));
const headerLines = (n: number): string => Array.from({ length: n }, (_, i) => `X-Proxy-${i}: v${i}\r\n`).join('');

describe('request line and header limits (item 5)', () => {
  it('a URL over 16 KiB is 414 uri_too_long with the error envelope, on both backends', async () => {
    const raw = await rawOrReset(get(`/health?pad=${'a'.repeat(20_000)}`, 'u1'));
    const [a] = answers(raw);
    expect(a!.status).toBe(414);
    expect(JSON.parse(a!.body)).toEqual({ error: { code: 'uri_too_long', message: 'the path and query string exceed the limit of 16384 characters' } });
  });

  it('a 70 KB URL: node answers 414 (its limit: 64 KiB for the request line and headers)', async () => {
    if (s.backend === 'uws') {
      // The pinned uWS reads at most 512 KiB at once and resets a connection whose request is longer.
      expect(await rawOrReset(get(`/${'a'.repeat(600_000)}`, 'u2'))).toBe('');
      return;
    }
    const [a] = answers(await rawOrReset(get(`/${'a'.repeat(70_000)}`, 'u2')));
    expect(a!.status).toBe(414);
    expect(JSON.parse(a!.body)).toEqual({ error: { code: 'uri_too_long', message: 'the request line exceeds the limit of 65536 bytes' } });
    expect(a!.headers.connection).toBe('close');
  });

  it('headers over 64 KiB: node answers 431 headers_too_large; the pinned uWS resets the connection', async () => {
    const raw = await rawOrReset(get('/health', 'h1', `X-Big: ${'a'.repeat(600_000)}\r\n`));
    if (s.backend === 'node') {
      const [a] = answers(raw);
      expect(a!.status).toBe(431);
      expect(JSON.parse(a!.body)).toEqual({ error: { code: 'headers_too_large', message: 'the request headers exceed the limit of 65536 bytes' } });
    } else expect(raw).toBe('');
  });

  it('5 KB of headers arriving in two reads: node answers 200; the pinned uWS closes the connection unanswered', async () => {
    const { hostname, port } = new URL(s.url);
    const sock = connect(Number(port), hostname);
    let raw = '';
    sock.setEncoding('latin1').on('data', (d: string) => (raw += d));
    const closed = new Promise<void>((r) => sock.once('close', () => r()));
    sock.on('error', () => {});
    await new Promise<void>((r) => sock.once('connect', () => r()));
    sock.write(`GET /health HTTP/1.1\r\nHost: x\r\nX-Request-Id: split\r\nCookie: ${'c'.repeat(5000)}`);
    await new Promise((r) => setTimeout(r, 100));
    sock.write('\r\n\r\n');
    if (s.backend === 'node') {
      await new Promise((r) => setTimeout(r, 500));
      sock.destroy();
      expect(answers(raw).map((a) => [a.status, a.headers['x-request-id']])).toEqual([[200, 'split']]);
    } else {
      await closed;
      expect(raw).toBe('');
    }
  });

  it('100 and 200 extra headers: node answers 200; the pinned uWS takes at most 48 header lines', async () => {
    const status = async (n: number): Promise<number> => answers(await rawOrReset(get('/health', `n${n}`, headerLines(n))))[0]?.status ?? 0;
    if (s.backend === 'node') {
      expect(await status(100)).toBe(200);
      expect(await status(200)).toBe(200);
    } else {
      // With Host and X-Request-Id: 48 lines are answered, a request with more never reaches the server.
      expect(await status(46)).toBe(200);
      expect(await status(47)).toBe(0);
      expect(await status(100)).toBe(0);
    }
  });
});

describe('slow clients and connection caps (item 6)', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer({ headersTimeoutMs: 500, requestTimeoutMs: 1000, keepAliveTimeoutMs: 500, maxConnections: 50, maxConnectionsPerIp: 5 });
  });
  afterAll(() => t.close());

  /** A connection to the second server; `raw()` is what came back, `closed` resolves when the server closed it. */
  const open = async (): Promise<{ sock: Socket; raw(): string; closed: Promise<void> }> => {
    const { hostname, port } = new URL(t.url);
    const sock = connect(Number(port), hostname);
    let raw = '';
    sock.setEncoding('latin1').on('data', (d: string) => (raw += d));
    sock.on('error', () => {});
    const closed = new Promise<void>((r) => sock.once('close', () => r()));
    await new Promise<void>((r) => sock.once('connect', () => r()));
    return { sock, raw: () => raw, closed };
  };
  /** Writes `parts` one by one, `everyMs` apart, until the connection closes (at most 40 parts). */
  const trickle = async (c: { sock: Socket; closed: Promise<void> }, parts: string[], everyMs: number): Promise<void> => {
    let gone = false;
    void c.closed.then(() => (gone = true));
    for (const p of parts.slice(0, 40)) {
      if (gone) return;
      c.sock.write(p);
      await new Promise((r) => setTimeout(r, everyMs));
    }
  };
  const timeoutBody = { error: { code: 'request_timeout', message: 'the request was not received in time' } };

  it('a body trickled past the request timeout is answered 408 request_timeout and the connection closed', async () => {
    const c = await open();
    c.sock.write(`POST /db/tables/pp/rows HTTP/1.1\r\nHost: x\r\nX-Service-Key: ${t.keys.publishable}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`);
    await trickle(c, Array.from({ length: 40 }, () => ' '), 200);
    await c.closed;
    const [a] = answers(c.raw());
    expect(a!.status).toBe(408);
    expect(JSON.parse(a!.body)).toEqual(timeoutBody);
  });

  // note: these two run side by side (each waits for uWS's own 10 s idle timeout).
  it.concurrent('headers trickled past the headers timeout: node answers 408; the pinned uWS closes after its own 10 s', { timeout: 30_000 }, async () => {
    const c = await open();
    c.sock.write('GET /health HTTP/1.1\r\nHost: x\r\n');
    if (t.backend === 'node') {
      await trickle(c, Array.from({ length: 40 }, (_, i) => `X-Slow-${i}: v\r\n`), 200);
      await c.closed;
      const [a] = answers(c.raw());
      expect(a!.status).toBe(408);
      expect(JSON.parse(a!.body)).toEqual(timeoutBody);
    } else {
      // note: one header line a second, for up to 40 s: uWS closes at its idle timeout (about 10 s).
      await trickle(c, Array.from({ length: 40 }, (_, i) => `X-Slow-${i}: v\r\n`), 1000);
      await c.closed;
      expect(c.raw()).toBe('');
    }
  });

  it.concurrent('an idle keep-alive connection is closed after the keep-alive timeout (node; uWS: its own 10 s)', { timeout: 30_000 }, async () => {
    const c = await open();
    c.sock.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
    await c.closed;
    expect(answers(c.raw()).map((a) => a.status)).toEqual([200]);
  });

  it('past the per-address cap a new connection is answered 503 with Retry-After and closed (node); uWS has no cap', async () => {
    const held = await Promise.all(Array.from({ length: 5 }, () => open()));
    try {
      const extra = await open();
      extra.sock.write('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
      if (t.backend === 'node') {
        await extra.closed;
        const [a] = answers(extra.raw());
        expect(a!.status).toBe(503);
        expect(a!.headers['retry-after']).toBe('1');
        expect(JSON.parse(a!.body)).toEqual({ error: { code: 'unavailable', message: 'too many open connections from this address, retry shortly' } });
      } else {
        await new Promise((r) => setTimeout(r, 300));
        extra.sock.destroy();
        expect(answers(extra.raw()).map((a) => a.status)).toEqual([200]);
      }
    } finally {
      for (const h of held) h.sock.destroy();
    }
    // Once the held connections are gone, a new one is served.
    await Promise.all(held.map((h) => h.closed));
    expect((await fetch(`${t.url}/health`)).status).toBe(200);
  });
});
