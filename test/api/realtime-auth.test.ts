import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { openEventSource, openRtSocket } from '../helpers/realtime.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Browser auth, auth before the upgrade, token expiry, logout and key revocation (docs/api.md "Realtime").
let s: TestServer;
const OWN = "data->>'owner' = auth.uid()";

async function call(method: string, path: string, body?: unknown, who: { key?: string; token?: string } = {}) {
  const headers: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' };
  if (who.token) headers.authorization = `Bearer ${who.token}`;
  const res = await s.req(path, { method, key: who.key, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}
async function register(email: string): Promise<{ id: string; token: string; refresh: string }> {
  const r = await call('POST', '/auth/register', { email, password: 'correct horse battery staple 1' });
  expect(r.status, r.text).toBe(200);
  return { id: r.body.user.id, token: r.body.access_token, refresh: r.body.refresh_token };
}
const wsBase = () => `${s.url.replace('http', 'ws')}/realtime/ws`;
/** The `exp` claim of an access token (`lca_` + a JWT). */
const expOf = (token: string): number => (JSON.parse(Buffer.from(token.slice(4).split('.')[1]!, 'base64url').toString()) as { exp: number }).exp;

/**
 * One server per describe (they run one after the other, so `s` is the running one). The SSE
 * heartbeat is fast in both.
 */
function serverWith(authAccessTtlS: number): void {
  beforeAll(async () => {
    s = await startTestServer({ authAccessTtlS, realtimeHeartbeatMs: 50 });
    expect((await call('POST', '/db/tables', { name: 'todos' }, { key: s.keys.service })).status).toBe(201);
    expect((await call('PUT', '/db/tables/todos/rls', { enabled: true, policies: { select: OWN, insert: OWN } }, { key: s.keys.service })).status).toBe(200);
  });
  afterAll(() => s.close());
}

describe('auth before the upgrade', () => {
  // note: tokens of the default life here: with 4 s ones, a loaded machine let the subprotocol
  // case's token expire between sign-up and the change it waits for (the socket closed 4001).
  serverWith(3600);
  it('no key, a bad key, a bad token: HTTP 401 with the envelope, no socket', async () => {
    for (const [url, headers, code] of [
      [`${wsBase()}?table=todos`, {}, 'unauthorized'],
      [`${wsBase()}?table=todos`, { 'x-service-key': 'svc_live_nope' }, 'unauthorized'],
      [`${wsBase()}?table=todos&apikey=${s.keys.publishable}&access_token=lca_bad.bad.bad`, {}, 'unauthorized'],
    ] as const) {
      const err = (await openRtSocket(url, { headers }).then(
        () => null,
        (e: { status: number; body: string }) => e,
      ))!;
      expect(err.status).toBe(401);
      expect(JSON.parse(err.body).error.code).toBe(code);
    }
    const res = await fetch(`${s.url}/realtime/stream?table=todos`);
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
  });

  it('a key without realtime:subscribe is 401 missing_scope', async () => {
    const ro = s.createKey(['data:read'], { name: 'ro' }).secret;
    const res = await fetch(`${s.url}/realtime/stream?table=todos&apikey=${ro}`);
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('missing_scope');
  });

  it('subprotocols key.<K> and bearer.<T>: the server selects platform-edge.v1, and the user is applied', async () => {
    const u = await register('sub@example.com');
    const c = await openRtSocket(`${wsBase()}?table=todos`, { protocols: ['platform-edge.v1', `key.${s.keys.publishable}`, `bearer.${u.token}`] });
    try {
      expect(c.ws.protocol).toBe('platform-edge.v1');
      await c.next((m) => m.event === 'ready');
      const r = await call('POST', '/db/tables/todos/rows', { data: { owner: u.id } }, { token: u.token });
      expect((await c.next((m) => m.event === 'change')).data).toMatchObject({ op: 'insert', id: r.body.id });
    } finally {
      c.close();
    }
    // credentials in subprotocols without platform-edge.v1: refused before the upgrade
    const err = (await openRtSocket(`${wsBase()}?table=todos`, { protocols: [`key.${s.keys.publishable}`] }).then(
      () => null,
      (e: { status: number; body: string }) => e,
    ))!;
    expect(err.status).toBe(400);
    expect(JSON.parse(err.body).error.code).toBe('invalid_request');
  });

  it('SSE takes ?apikey= and ?access_token= (EventSource sends no headers) and sends heartbeat comments', async () => {
    const u = await register('sse@example.com');
    const res = await fetch(`${s.url}/realtime/stream?table=todos&apikey=${s.keys.publishable}&access_token=${u.token}`);
    expect(res.status).toBe(200);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    while (!/: heartbeat\n\n[\s\S]*: heartbeat\n\n/.test(text)) text += (await reader.read()).value ?? '';
    expect(text).toMatch(/^: ok\n\nevent: ready\ndata: \{"type":"ready","table":"todos","seq":\d+\}\n\n/);
    await reader.cancel();
  });
});

describe('token expiry, logout, key revocation', () => {
  // note: access tokens live 4 s here so expiry is observable.
  serverWith(4);
  it('at expiry SSE sends token_expired and closes; a WebSocket that sent {type:"auth"} with a fresh token stays, one that did not closes 4001', async () => {
    const u = await register('exp@example.com');
    const es = openEventSource(`${s.url}/realtime/stream?table=todos&apikey=${s.keys.publishable}&access_token=${u.token}`);
    const stale = await openRtSocket(`${wsBase()}?table=todos`, { protocols: ['platform-edge.v1', `key.${s.keys.publishable}`, `bearer.${u.token}`] });
    const fresh = await openRtSocket(`${wsBase()}?table=todos`, { protocols: ['platform-edge.v1', `key.${s.keys.publishable}`, `bearer.${u.token}`] });
    try {
      await es.next((m) => m.event === 'ready');
      await fresh.next((m) => m.event === 'ready');
      // note: a token issued two seconds later expires two seconds later (exp has one-second resolution).
      await new Promise((r) => setTimeout(r, 2100));
      const rr = await call('POST', '/auth/refresh', { refresh_token: u.refresh });
      expect(rr.status, rr.text).toBe(200);
      const token2 = rr.body.access_token as string;
      expect(expOf(token2)).toBeGreaterThanOrEqual(expOf(u.token) + 2);
      fresh.send({ type: 'auth', access_token: token2 });
      expect((await fresh.next((m) => m.event === 'auth')).data).toEqual({ type: 'auth', expires_at: new Date(expOf(token2) * 1000).toISOString() });

      const err = await es.next((m) => m.event === 'error', 6000);
      expect(err.data).toMatchObject({ type: 'error', code: 'token_expired' });
      expect((await stale.next((m) => m.event === 'error', 6000)).data).toMatchObject({ type: 'error', code: 'token_expired' });
      expect(await stale.closed).toEqual({ code: 4001, reason: 'token_expired' });
      expect(fresh.ws.readyState).toBe(WebSocket.OPEN);
      // the fresh one still gets the user's changes, then expires in its turn
      const r = await call('POST', '/db/tables/todos/rows', { data: { owner: u.id } }, { key: s.keys.service });
      expect((await fresh.next((m) => m.event === 'change')).data).toMatchObject({ id: r.body.id });
      expect(await fresh.closed).toEqual({ code: 4001, reason: 'token_expired' });
    } finally {
      es.close();
      stale.close();
      fresh.close();
    }
  });

  it('an auth message with a bad token or another user closes 4001', async () => {
    const u = await register('bad-auth@example.com');
    const v = await register('other@example.com');
    for (const token of ['lca_nope', v.token]) {
      const c = await openRtSocket(`${wsBase()}?table=todos`, { protocols: ['platform-edge.v1', `key.${s.keys.publishable}`, `bearer.${u.token}`] });
      await c.next((m) => m.event === 'ready');
      c.send({ type: 'auth', access_token: token });
      expect((await c.next((m) => m.event === 'error')).data.code).toBe('unauthorized');
      expect((await c.closed).code).toBe(4001);
    }
  });

  it('logout closes the user streams; revoking the key closes the streams opened with it', async () => {
    const u = await register('out@example.com');
    const es = openEventSource(`${s.url}/realtime/stream?table=todos&apikey=${s.keys.publishable}&access_token=${u.token}`);
    const ws = await openRtSocket(`${wsBase()}?table=todos`, { headers: { 'x-service-key': s.keys.publishable, authorization: `Bearer ${u.token}` } });
    await es.next((m) => m.event === 'ready');
    await ws.next((m) => m.event === 'ready');
    expect((await call('POST', '/auth/logout', {}, { token: u.token })).status).toBe(204);
    expect((await es.next((m) => m.event === 'error')).data).toMatchObject({ type: 'error', code: 'unauthorized' });
    expect((await ws.closed).code).toBe(4001);
    es.close();

    const { id: keyId, secret } = s.createKey(['realtime:subscribe'], { name: 'temp' });
    const byKey = await openRtSocket(`${wsBase()}?table=todos&apikey=${secret}`);
    await byKey.next((m) => m.event === 'ready');
    s.revokeKey(keyId);
    expect((await byKey.closed).code).toBe(4001);
  });
});
