import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { rawRequest, statusOf } from '../helpers/raw.js';
import { connectWs, refusedWs, type WsClient } from '../helpers/ws.js';

// The WebSocket seam (docs/api.md "WebSocket"), end to end through GET /live/ws on both backends.
let s: TestServer;
let wsUrl: string;
beforeAll(async () => {
  s = await startTestServer({ wsIdleTimeoutS: 8, wsMaxBackpressure: 64 * 1024 });
  wsUrl = s.url.replace(/^http/, 'ws') + '/live/ws';
});
afterAll(() => s.close());

type Frame = { type: string; [k: string]: unknown };
const service = () => ({ 'x-service-key': s.keys.service });

describe('WebSocket upgrade', () => {
  it('refuses a missing key over HTTP with 401 and the error envelope, opening no socket', async () => {
    const r = await refusedWs(wsUrl);
    expect(r.status).toBe(401);
    expect(r.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(r.body)).toEqual({ error: { code: 'unauthorized', message: 'missing X-Service-Key header (or apikey query parameter)' } });
  });

  it('refuses an invalid key with 401 and a key without auth:admin with 401 missing_scope', async () => {
    const bad = await refusedWs(wsUrl, { 'x-service-key': 'svc_live_' + 'A'.repeat(32) });
    expect(bad.status).toBe(401);
    expect(JSON.parse(bad.body)).toEqual({ error: { code: 'unauthorized', message: 'invalid API key' } });
    const pub = await refusedWs(wsUrl, { 'x-service-key': s.keys.publishable });
    expect(pub.status).toBe(401);
    expect((JSON.parse(pub.body) as { error: { code: string } }).error.code).toBe('missing_scope');
  });

  it('answers a plain GET on a WebSocket route with 426 upgrade_required', async () => {
    const res = await s.req('/live/ws', { key: s.keys.service });
    expect(res.status).toBe(426);
    expect(res.headers.get('upgrade')).toBe('websocket');
    expect(await res.json()).toEqual({ error: { code: 'upgrade_required', message: 'this route is a WebSocket: send a WebSocket upgrade request' } });
  });

  it('refuses an upgrade on a route that is no WebSocket with 400, and an unknown path with 404', async () => {
    const plain = await refusedWs(s.url.replace(/^http/, 'ws') + '/health/key', { 'x-service-key': s.keys.service });
    expect(plain.status).toBe(400);
    expect(JSON.parse(plain.body)).toEqual({ error: { code: 'invalid_request', message: 'this route does not take a WebSocket upgrade' } });
    const none = await refusedWs(s.url.replace(/^http/, 'ws') + '/nope', { 'x-service-key': s.keys.service });
    expect(none.status).toBe(404);
    expect((JSON.parse(none.body) as { error: { code: string } }).error.code).toBe('not_found');
  });

  it('sends hello, then a log event when another request is made', async () => {
    const c = await connectWs(wsUrl, service());
    try {
      const hello = await c.nextJson<Frame>();
      expect(hello).toMatchObject({ type: 'hello', seq: expect.any(Number), stats: expect.any(Object), edge: expect.any(Object) });
      expect(Object.keys(hello).sort()).toEqual(['edge', 'seq', 'stats', 'type']);
      expect((await s.req('/health/key?secret=zzz')).status).toBe(200);
      const log = await c.nextJson<Frame>((m) => m.type === 'log');
      expect(log.event).toMatchObject({ seq: (hello.seq as number) + 1, kind: 'request', method: 'GET', route: '/health/key', status: 200 });
      expect(JSON.stringify(log)).not.toContain('zzz');
    } finally {
      c.close();
    }
  });

  it('takes the key from ?apikey= and an operator session from ?access_token=&project=', async () => {
    const byKey = await connectWs(`${wsUrl}?apikey=${s.keys.service}`);
    const byOp = await connectWs(`${wsUrl}?access_token=${s.operatorToken}&project=${s.projectId}`);
    try {
      expect((await byKey.nextJson<Frame>()).type).toBe('hello');
      expect((await byOp.nextJson<Frame>()).type).toBe('hello');
    } finally {
      byKey.close();
      byOp.close();
    }
    const wrong = await refusedWs(`${wsUrl}?access_token=lcd_nope&project=${s.projectId}`);
    expect(wrong.status).toBe(401);
    expect(JSON.parse(wrong.body)).toEqual({ error: { code: 'unauthorized', message: 'missing or invalid operator session' } });
  });

  it('replays the kept events after ?since=', async () => {
    const first = await connectWs(wsUrl, service());
    const hello = await first.nextJson<Frame>();
    first.close();
    await s.req('/health/key');
    await s.req('/health/key');
    const c = await connectWs(`${wsUrl}?since=${hello.seq as number}`, service());
    try {
      const h2 = await c.nextJson<Frame>();
      expect(h2).toMatchObject({ type: 'hello', seq: (hello.seq as number) + 2 });
      const a = await c.nextJson<Frame>();
      const b = await c.nextJson<Frame>();
      expect([a.type, b.type]).toEqual(['log', 'log']);
      expect([(a.event as { seq: number }).seq, (b.event as { seq: number }).seq]).toEqual([(hello.seq as number) + 1, (hello.seq as number) + 2]);
    } finally {
      c.close();
    }
  });

  it('publishes each log event once to the project topic, reaching every subscriber', async () => {
    const clients: WsClient[] = [];
    try {
      for (let i = 0; i < 3; i++) clients.push(await connectWs(wsUrl, service()));
      const hellos = await Promise.all(clients.map((c) => c.nextJson<Frame>()));
      const seq = Math.max(...hellos.map((h) => h.seq as number));
      expect((await s.req('/health/key')).status).toBe(200);
      const logs = await Promise.all(clients.map((c) => c.nextJson<Frame>((m) => m.type === 'log' && (m.event as { seq: number }).seq > seq)));
      for (const l of logs) expect(l.event).toMatchObject({ seq: seq + 1, route: '/health/key', status: 200 });
    } finally {
      for (const c of clients) c.close();
    }
  });

  it('answers a ping message with a pong carrying its data, and a bad message with an error frame', async () => {
    const c = await connectWs(wsUrl, service());
    try {
      await c.nextJson<Frame>();
      c.ws.send(JSON.stringify({ type: 'ping', data: { n: 7 } }));
      expect(await c.nextJson<Frame>((m) => m.type !== 'stats')).toEqual({ type: 'pong', data: { n: 7 } });
      c.ws.send('nonsense');
      expect(await c.nextJson<Frame>((m) => m.type !== 'stats')).toEqual({
        type: 'error',
        error: { code: 'invalid_request', message: 'expected a text frame {"type":"ping","data":…}' },
      });
    } finally {
      c.close();
    }
  });

  it('closes with 1009 on a message over the limit', async () => {
    const c = await connectWs(wsUrl, service());
    await c.nextJson<Frame>();
    // note: the default limit, 64 KiB (a message far past it is cut without a close frame on uWS: 1006).
    c.ws.send(JSON.stringify({ type: 'ping', data: 'x'.repeat(70_000) }));
    expect((await c.closed()).code).toBe(1009);
  });

  it('closes a slow reader past the outbound cap', async () => {
    const c = await connectWs(wsUrl, service());
    await c.nextJson<Frame>();
    // note: the client stops reading while asking for ~15 MB of pongs (bounded: 250 × 60 kB); the
    // server's cap (64 KiB here) is passed once the kernel buffers (a few MB on loopback) are full.
    const socket = (c.ws as unknown as { _socket: import('node:net').Socket })._socket;
    socket.pause();
    const ping = JSON.stringify({ type: 'ping', data: 'y'.repeat(60_000) });
    for (let i = 0; i < 250; i++) c.ws.send(ping);
    await new Promise((r) => setTimeout(r, 1000));
    socket.resume();
    const { code } = await c.closed(10_000);
    expect(code).toBe(1006);
    const pongs = c.received.filter((m) => typeof m === 'string' && m.startsWith('{"type":"pong"')).length;
    expect(pongs).toBeLessThan(250);
  });

  it('pings idle sockets: one that answers stays open, one that never pongs is closed', async () => {
    const silent = await connectWs(wsUrl, service(), { autoPong: false });
    const live = await connectWs(wsUrl, service());
    let pings = 0;
    live.ws.on('ping', () => pings++);
    await silent.nextJson<Frame>();
    await live.nextJson<Frame>();
    // note: stats frames keep coming, but idleness is about what the client sends.
    const { code } = await silent.closed(20_000);
    expect(code).toBe(1006);
    expect(live.ws.readyState).toBe(live.ws.OPEN);
    expect(pings).toBeGreaterThanOrEqual(1);
    live.close();
  }, 30_000);
});

describe('other upgrades', () => {
  it('serves a request asking for another protocol (curl --http2: Upgrade: h2c) as plain HTTP', async () => {
    const raw = await rawRequest(
      s.url,
      `GET /health HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n`,
    );
    expect(statusOf(raw)).toBe(200);
    expect(raw).toContain('"status":"ok"');
  });
});

describe('upgrade handshakes', () => {
  const upgrade = (path: string, extra: string): Promise<string> =>
    rawRequest(s.url, `GET ${path} HTTP/1.1\r\nHost: x\r\nX-Service-Key: ${s.keys.service}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n${extra}\r\n`, 300);

  it('serves a request without a Sec-WebSocket-Key as plain HTTP: 426 on a WebSocket route, 200 elsewhere', async () => {
    const ws = await upgrade('/live/ws', '');
    expect(statusOf(ws)).toBe(426);
    expect(ws).toContain('{"error":{"code":"upgrade_required"');
    expect(statusOf(await upgrade('/health', ''))).toBe(200);
  });

  it('answers a malformed key or another version with 400 invalid_request and Sec-WebSocket-Version: 13', async () => {
    for (const extra of ['Sec-WebSocket-Key: ########################\r\nSec-WebSocket-Version: 13\r\n', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 8\r\n']) {
      const raw = await upgrade('/live/ws', extra);
      expect(statusOf(raw)).toBe(400);
      expect(raw.toLowerCase()).toContain('sec-websocket-version: 13');
      expect(raw).toContain(
        '{"error":{"code":"invalid_request","message":"a WebSocket upgrade needs GET, Upgrade: websocket, a valid Sec-WebSocket-Key and Sec-WebSocket-Version: 13"}}',
      );
    }
  });

  it('answers a bad query parameter over HTTP before the upgrade (400 invalid_field)', async () => {
    const r = await refusedWs(`${wsUrl}?since=-1`, service());
    expect(r.status).toBe(400);
    expect(JSON.parse(r.body)).toEqual({ error: { code: 'invalid_field', message: 'since: must be a non-negative integer', details: { field: 'since' } } });
  });
});

describe('WebSocket shutdown', () => {
  it('closes open sockets with 1001 when the server stops', async () => {
    const t = await startTestServer();
    const c = await connectWs(t.url.replace(/^http/, 'ws') + '/live/ws', { 'x-service-key': t.keys.service });
    await c.nextJson<Frame>();
    const closing = t.close();
    expect(await c.closed()).toEqual({ code: 1001, reason: 'server shutting down' });
    await closing;
  });
});
