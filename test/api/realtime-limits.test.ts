import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEventSource, openRtSocket } from '../helpers/realtime.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Caps, bad frames and slow consumers (docs/api.md "Realtime").
let s: TestServer;
const wsUrl = (key: string) => `${s.url.replace('http', 'ws')}/realtime/ws?table=t&apikey=${key}`;

beforeAll(async () => {
  s = await startTestServer({ realtimeMaxPerProject: 2, realtimeMaxPerAddress: 3 });
  const r = await s.req('/db/tables', { method: 'POST', key: s.keys.service, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 't' }) });
  expect(r.status).toBe(201);
});
afterAll(() => s.close());

async function refused(url: string): Promise<{ status: number; code: string }> {
  const e = (await openRtSocket(url).then(
    (c) => {
      c.close();
      return null;
    },
    (err: { status: number; body: string }) => err,
  ))!;
  expect(e).not.toBeNull();
  return { status: e.status, code: JSON.parse(e.body).error.code };
}

describe('caps', () => {
  it('past the per-project cap and the per-address cap: 429 rate_limited, before the upgrade', async () => {
    const other = s.createProject('other');
    await s.req('/db/tables', { method: 'POST', key: other.service, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 't' }) });
    const a = await openRtSocket(wsUrl(s.keys.publishable));
    const b = openEventSource(`${s.url}/realtime/stream?table=t&apikey=${s.keys.publishable}`);
    try {
      await a.next((m) => m.event === 'ready');
      await b.next((m) => m.event === 'ready');
      expect(await refused(wsUrl(s.keys.publishable))).toMatchObject({ status: 429, code: 'rate_limited' });
      const res = await fetch(`${s.url}/realtime/stream?table=t&apikey=${s.keys.publishable}`);
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('rate_limited');
      // another project: its own cap, but the same address is at 3 after this one
      const c = await openRtSocket(wsUrl(other.publishable));
      await c.next((m) => m.event === 'ready');
      expect(await refused(wsUrl(other.publishable))).toMatchObject({ status: 429, code: 'rate_limited' });
      c.close();
      await c.closed;
    } finally {
      a.close();
      b.close();
    }
    // closed streams free their places
    await a.closed;
    for (let i = 0; i < 50; i++) {
      const ok = await openRtSocket(wsUrl(s.keys.publishable)).then(
        (x) => x,
        () => null,
      );
      if (ok) {
        ok.close();
        return;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error('the caps were not released');
  });
});

describe('bad frames', () => {
  it('non-JSON, non-object, binary and unknown types get an error frame and the socket stays; an oversized frame closes 1009', async () => {
    const c = await openRtSocket(wsUrl(s.keys.publishable));
    try {
      await c.next((m) => m.event === 'ready');
      c.send('not json');
      expect((await c.next((m) => m.event === 'error')).data).toMatchObject({ type: 'error', code: 'invalid_body' });
      c.send('[1,2]');
      expect((await c.next((m) => m.event === 'error')).data).toMatchObject({ code: 'invalid_body' });
      c.ws.send(Buffer.from('{"type":"ping"}'), { binary: true });
      expect((await c.next((m) => m.event === 'error')).data).toMatchObject({ code: 'invalid_body' });
      c.send({ type: 'subscribe_everything' });
      expect((await c.next((m) => m.event === 'error')).data).toMatchObject({ code: 'invalid_request' });
      c.send({ type: 'join', channel: '' });
      expect((await c.next((m) => m.event === 'error')).data).toMatchObject({ code: 'invalid_field' });
      c.send({ type: 'ping', data: 'still here' });
      expect((await c.next((m) => m.event === 'pong')).data).toEqual({ type: 'pong', data: 'still here' });
      // note: the message limit is PLATFORM_EDGE_WS_MAX_MESSAGE (64 KiB): past it, 1009.
      c.send(JSON.stringify({ type: 'ping', data: 'x'.repeat(65 * 1024) }));
      expect((await c.closed).code).toBe(1009);
    } finally {
      c.close();
    }
    // a 1 MiB frame: uWS drops the connection past twice the limit without a close frame (1006; docs/api.md "WebSocket")
    const big = await openRtSocket(wsUrl(s.keys.publishable));
    await big.next((m) => m.event === 'ready');
    big.send(JSON.stringify({ type: 'ping', data: 'x'.repeat(1024 * 1024) }));
    expect((await big.closed).code).toBe(s.backend === 'uws' ? 1006 : 1009);
  });
});

describe('slow consumer', () => {
  it('a socket that stops reading is closed with 4008 slow_consumer once its outbound buffer passes half the 1 MiB cap', async () => {
    const c = await openRtSocket(wsUrl(s.keys.publishable));
    try {
      await c.next((m) => m.event === 'ready');
      c.send({ type: 'join', channel: 'firehose' });
      await c.next((m) => m.event === 'joined');
      // note: the client stops reading; the kernel buffers fill, then the server's own buffer.
      const sock = (c.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
      sock.pause();
      const payload = 'x'.repeat(60 * 1024);
      const body = JSON.stringify({ channel: 'firehose', event: 'e', payload });
      // note: 400 × 60 KiB (24 MiB), more than loopback's socket buffers take, 20 requests at a time.
      for (let i = 0; i < 20; i++) {
        const batch = await Promise.all(Array.from({ length: 20 }, () => s.req('/realtime/broadcast', { method: 'POST', headers: { 'content-type': 'application/json' }, body })));
        expect(batch.map((r) => r.status)).toEqual(Array(20).fill(204));
      }
      sock.resume();
      const closed = await c.closed;
      expect(closed).toEqual({ code: 4008, reason: 'slow_consumer' });
      const err = c.received.find((m) => m.event === 'error');
      expect(err?.data).toMatchObject({ type: 'error', code: 'slow_consumer' });
    } finally {
      c.close();
    }
  });
});
