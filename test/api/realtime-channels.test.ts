import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEventSource, openRtSocket } from '../helpers/realtime.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Broadcast and presence (docs/api.md "Realtime").
let s: TestServer;

async function call(method: string, path: string, body?: unknown, who: { key?: string; token?: string } = {}) {
  const headers: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' };
  if (who.token) headers.authorization = `Bearer ${who.token}`;
  const res = await s.req(path, { method, key: who.key, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}
async function register(email: string): Promise<{ id: string; token: string }> {
  const r = await call('POST', '/auth/register', { email, password: 'correct horse battery staple 1' });
  expect(r.status, r.text).toBe(200);
  return { id: r.body.user.id, token: r.body.access_token };
}
const ws = () => openRtSocket(`${s.url.replace('http', 'ws')}/realtime/ws?apikey=${s.keys.publishable}&table=t`);
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

beforeAll(async () => {
  s = await startTestServer();
  expect((await call('POST', '/db/tables', { name: 't' }, { key: s.keys.service })).status).toBe(201);
});
afterAll(() => s.close());

describe('broadcast', () => {
  it('reaches sockets that joined the channel and SSE streams opened on it, nobody else; 204', async () => {
    // a socket for channels only names no table
    const joined = await openRtSocket(`${s.url.replace('http', 'ws')}/realtime/ws?apikey=${s.keys.publishable}`);
    const other = await ws();
    const es = openEventSource(`${s.url}/realtime/stream?channel=room1&apikey=${s.keys.publishable}`);
    try {
      expect((await es.next((m) => m.event === 'ready')).data).toEqual({ type: 'ready', table: null, seq: expect.any(Number), channel: 'room1' });
      expect((await joined.next((m) => m.event === 'ready')).data).toEqual({ type: 'ready', table: null, seq: expect.any(Number) });
      joined.send({ type: 'join', channel: 'room1' });
      expect((await joined.next((m) => m.event === 'joined')).data).toEqual({ type: 'joined', channel: 'room1' });
      const r = await call('POST', '/realtime/broadcast', { channel: 'room1', event: 'cursor', payload: { x: 1, y: [2] } });
      expect(r.status).toBe(204);
      expect(r.text).toBe('');
      const got = (await joined.next((m) => m.event === 'broadcast')).data;
      expect(got).toEqual({ type: 'broadcast', channel: 'room1', event: 'cursor', payload: { x: 1, y: [2] }, at: expect.stringMatching(ISO) });
      expect((await es.next((m) => m.event === 'broadcast')).data).toEqual(got);
      await call('POST', '/realtime/broadcast', { channel: 'room2', event: 'x', payload: null });
      joined.send({ type: 'leave', channel: 'room1' });
      expect((await joined.next((m) => m.event === 'left')).data).toEqual({ type: 'left', channel: 'room1' });
      await call('POST', '/realtime/broadcast', { channel: 'room1', event: 'after', payload: 1 });
      expect((await es.next((m) => m.event === 'broadcast')).data).toMatchObject({ event: 'after' });
      expect((await joined.quiet(150)).map((m) => m.event)).toEqual([]);
      expect((await other.quiet(0)).map((m) => m.event)).toEqual(['ready']);
    } finally {
      joined.close();
      other.close();
      es.close();
    }
  });

  it('bad broadcasts: 400 for a channel or event that is not one, 413 past 64 KiB', async () => {
    expect((await call('POST', '/realtime/broadcast', { channel: 'bad channel!', event: 'e', payload: 1 })).body.error.code).toBe('invalid_field');
    expect((await call('POST', '/realtime/broadcast', { channel: 'ok', event: '', payload: 1 })).body.error.code).toBe('invalid_field');
    const big = await call('POST', '/realtime/broadcast', { channel: 'ok', event: 'e', payload: 'x'.repeat(65 * 1024) });
    expect(big.status).toBe(413);
    expect(big.body.error.code).toBe('payload_too_large');
  });
});

describe('presence', () => {
  it('POST sets an entry (key defaults to the user id), GET lists it, joined streams get the diff', async () => {
    const u = await register('p1@example.com');
    const es = openEventSource(`${s.url}/realtime/stream?channel=lobby&apikey=${s.keys.publishable}`);
    try {
      await es.next((m) => m.event === 'ready');
      const r = await call('POST', '/realtime/presence', { channel: 'lobby', state: { status: 'online' }, ttl_s: 30 }, { token: u.token });
      expect(r.status, r.text).toBe(200);
      expect(r.body).toEqual({ channel: 'lobby', key: u.id, state: { status: 'online' }, expires_at: expect.stringMatching(ISO) });
      const member = { key: u.id, user_id: u.id, state: { status: 'online' }, joined_at: expect.stringMatching(ISO), expires_at: r.body.expires_at };
      const g = await call('GET', '/realtime/presence?channel=lobby');
      expect(g.body).toEqual({ channel: 'lobby', members: [member] });
      expect((await es.next((m) => m.event === 'presence')).data).toEqual({ type: 'presence', channel: 'lobby', joins: [member], leaves: [] });
    } finally {
      es.close();
    }
  });

  it('a socket entry has no expiry and leaves at disconnect', async () => {
    const u = await register('p2@example.com');
    const watcher = await ws();
    const c = await openRtSocket(`${s.url.replace('http', 'ws')}/realtime/ws?table=t`, { headers: { 'x-service-key': s.keys.publishable, authorization: `Bearer ${u.token}` } });
    try {
      watcher.send({ type: 'join', channel: 'desk' });
      await watcher.next((m) => m.event === 'joined');
      c.send({ type: 'presence', channel: 'desk', state: { typing: true } });
      const join = (await watcher.next((m) => m.event === 'presence')).data;
      const member = { key: u.id, user_id: u.id, state: { typing: true }, joined_at: expect.stringMatching(ISO), expires_at: null };
      expect(join).toEqual({ type: 'presence', channel: 'desk', joins: [member], leaves: [] });
      expect((await call('GET', '/realtime/presence?channel=desk')).body.members).toEqual([member]);
      c.close();
      expect((await watcher.next((m) => m.event === 'presence')).data).toEqual({ type: 'presence', channel: 'desk', joins: [], leaves: [member] });
      expect((await call('GET', '/realtime/presence?channel=desk')).body).toEqual({ channel: 'desk', members: [] });
    } finally {
      watcher.close();
      c.close();
    }
  });

  it('bad presence: no key without a user, ttl out of 10-3600, state over 4 KiB, another user key', async () => {
    const u = await register('p3@example.com');
    const v = await register('p4@example.com');
    const codes = async (body: unknown, who: { token?: string } = {}) => {
      const r = await call('POST', '/realtime/presence', body, who);
      return [r.status, r.body.error?.code];
    };
    expect(await codes({ channel: 'c' })).toEqual([400, 'invalid_field']);
    expect(await codes({ channel: 'c', ttl_s: 5 }, { token: u.token })).toEqual([400, 'invalid_field']);
    expect(await codes({ channel: 'c', ttl_s: 3601 }, { token: u.token })).toEqual([400, 'invalid_field']);
    expect(await codes({ channel: 'c', state: { s: 'x'.repeat(4100) } }, { token: u.token })).toEqual([400, 'invalid_field']);
    expect(await codes({ key: 'k' }, { token: u.token })).toEqual([400, 'invalid_field']);
    expect((await call('POST', '/realtime/presence', { channel: 'c', key: 'shared' }, { token: u.token })).status).toBe(200);
    expect(await codes({ channel: 'c', key: 'shared' }, { token: v.token })).toEqual([403, 'forbidden']);
    expect((await call('GET', '/realtime/presence')).body.error.code).toBe('invalid_field');
  });
});
