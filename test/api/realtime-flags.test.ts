import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEventSource, openRtSocket } from '../helpers/realtime.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Flag changes announced on the project's `flags` channel; the channel is the server's alone
// (docs/api.md "Broadcast", "Evaluate").
let s: TestServer;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

async function call(method: string, path: string, body: unknown, key?: string) {
  const res = await s.req(path, { method, key, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.close());

describe('the flags channel', () => {
  it('announces the key of a flag written or deleted (never a value) to sockets and SSE streams on it', async () => {
    const sock = await openRtSocket(`${s.url.replace('http', 'ws')}/realtime/ws?apikey=${s.keys.publishable}`);
    const es = openEventSource(`${s.url}/realtime/stream?channel=flags&apikey=${s.keys.publishable}`);
    const other = openEventSource(`${s.url}/realtime/stream?channel=room&apikey=${s.keys.publishable}`);
    try {
      await sock.next((m) => m.event === 'ready');
      sock.send({ type: 'join', channel: 'flags' });
      expect((await sock.next((m) => m.event === 'joined')).data).toEqual({ type: 'joined', channel: 'flags' });
      await es.next((m) => m.event === 'ready');
      await other.next((m) => m.event === 'ready');

      const put = await call('PUT', '/secrets/flags/new-checkout', { value: 'variant-secret-b', rollout: 50 }, s.keys.service);
      expect(put.status, put.text).toBe(200);
      const want = { type: 'broadcast', channel: 'flags', event: 'flags.changed', payload: { keys: ['new-checkout'] }, at: put.body.updated_at };
      expect(put.body.updated_at).toMatch(ISO);
      expect((await sock.next((m) => m.event === 'broadcast')).data).toEqual(want);
      expect((await es.next((m) => m.event === 'broadcast')).data).toEqual(want);

      // a secret or setting is not announced anywhere
      expect((await call('PUT', '/secrets/API_TOKEN', { value: 's3cret-value' }, s.keys.service)).status).toBe(200);

      expect((await call('DELETE', '/secrets/flags/new-checkout', undefined, s.keys.service)).status).toBe(204);
      const gone = (await es.next((m) => m.event === 'broadcast')).data;
      expect(gone).toEqual({ type: 'broadcast', channel: 'flags', event: 'flags.changed', payload: { keys: ['new-checkout'] }, at: expect.stringMatching(ISO) });
      expect((await sock.next((m) => m.event === 'broadcast')).data).toEqual(gone);

      expect(await sock.quiet(150)).toEqual([]);
      expect(await es.quiet(0)).toEqual([]);
      expect(await other.quiet(0)).toEqual([]);
      const seen = JSON.stringify([...sock.received, ...es.received]);
      expect(seen).not.toContain('variant-secret-b');
      expect(seen).not.toContain('s3cret-value');
      expect(seen).not.toContain('API_TOKEN');
    } finally {
      sock.close();
      es.close();
      other.close();
    }
  });

  it('is reserved: a client broadcast or presence on it is 400 invalid_field, whatever the key; nothing is delivered', async () => {
    const es = openEventSource(`${s.url}/realtime/stream?channel=flags&apikey=${s.keys.publishable}`);
    const sock = await openRtSocket(`${s.url.replace('http', 'ws')}/realtime/ws?apikey=${s.keys.publishable}`);
    try {
      await es.next((m) => m.event === 'ready');
      await sock.next((m) => m.event === 'ready');
      for (const key of [s.keys.publishable, s.keys.service]) {
        const b = await call('POST', '/realtime/broadcast', { channel: 'flags', event: 'flags.changed', payload: { keys: ['spoofed'] } }, key);
        expect(b.status, b.text).toBe(400);
        expect(b.body.error.code).toBe('invalid_field');
        expect(b.body.error.message).toContain('reserved');
        const p = await call('POST', '/realtime/presence', { channel: 'flags', key: 'k1' }, key);
        expect(p.status, p.text).toBe(400);
        expect(p.body.error.code).toBe('invalid_field');
      }
      sock.send({ type: 'presence', channel: 'flags', state: { x: 1 } });
      expect((await sock.next((m) => m.event === 'error')).data).toEqual({ type: 'error', code: 'invalid_field', message: expect.stringContaining('reserved') });
      // the refused presence joined nothing: a flag change does not reach this socket
      expect((await call('PUT', '/secrets/flags/f1', { value: true }, s.keys.service)).status).toBe(200);
      expect((await es.next((m) => m.event === 'broadcast')).data).toMatchObject({ event: 'flags.changed', payload: { keys: ['f1'] } });
      expect(await sock.quiet(100)).toEqual([]);
      expect((await call('GET', '/realtime/presence?channel=flags', undefined)).body).toEqual({ channel: 'flags', members: [] });
      // other channels with similar names stay open to clients
      expect((await call('POST', '/realtime/broadcast', { channel: 'flags2', event: 'e', payload: 1 })).status).toBe(204);
      expect(await es.quiet(150)).toEqual([]);
    } finally {
      es.close();
      sock.close();
    }
  });
});
