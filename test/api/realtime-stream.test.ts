import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEventSource, openRtSocket, type RtClient } from '../helpers/realtime.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Realtime table streams (docs/api.md "Realtime"): message shape, RLS per subscriber, filters.
let s: TestServer;
const OWN = "data->>'owner' = auth.uid()";

interface User {
  id: string;
  token: string;
}
async function call(method: string, path: string, body?: unknown, who: { key?: string; token?: string } = {}) {
  const headers: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' };
  if (who.token) headers.authorization = `Bearer ${who.token}`;
  const res = await s.req(path, { method, key: who.key, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}
const svc = () => ({ key: s.keys.service });
async function register(email: string): Promise<User> {
  const r = await call('POST', '/auth/register', { email, password: 'correct horse battery staple 1' });
  expect(r.status, r.text).toBe(200);
  return { id: r.body.user.id, token: r.body.access_token };
}
const sseUrl = (q: string, token?: string) => `${s.url}/realtime/stream?${q}&apikey=${s.keys.publishable}${token ? `&access_token=${token}` : ''}`;
const wsUrl = (q: string) => `${s.url.replace('http', 'ws')}/realtime/ws?${q}`;
const changes = (_c: RtClient) => (m: { event: string }) => m.event === 'change';

let alice: User;
let bob: User;
beforeAll(async () => {
  s = await startTestServer();
  alice = await register('alice@example.com');
  bob = await register('bob@example.com');
  expect((await call('POST', '/db/tables', { name: 'notes' }, svc())).status).toBe(201);
  expect((await call('POST', '/db/tables', { name: 'todos' }, svc())).status).toBe(201);
  const put = await call('PUT', '/db/tables/todos/rls', { enabled: true, policies: { select: OWN, insert: OWN, update: OWN, delete: OWN } }, svc());
  expect(put.status, put.text).toBe(200);
  const rel = await call('POST', '/db/tables', { name: 'tasks', type: 'relational', columns: [{ name: 'title', type: 'text' }, { name: 'status', type: 'text' }, { name: 'n', type: 'int8' }] }, svc());
  expect(rel.status, rel.text).toBe(201);
});
afterAll(() => s.close());

describe('SSE stream', () => {
  it('opens with ready, then each change as event change with id = seq, data and old', async () => {
    const es = openEventSource(sseUrl('table=notes'));
    try {
      const ready = await es.next((m) => m.event === 'ready');
      expect(Object.keys(ready.data).sort()).toEqual(['seq', 'table', 'type']);
      expect(ready.data.type).toBe('ready');
      expect(ready.data.table).toBe('notes');
      const seq0 = ready.data.seq as number;
      const ins = await call('POST', '/db/tables/notes/rows', { data: { t: 'a' } });
      expect(ins.status).toBe(201);
      const c1 = await es.next(changes(es));
      expect(c1.data).toEqual({ type: 'change', op: 'insert', table: 'notes', id: ins.body.id, data: { t: 'a' }, old: null, seq: seq0 + 1, at: ins.body.created_at });
      expect(c1.id).toBe(String(seq0 + 1));
      const up = await call('PATCH', `/db/tables/notes/rows/${ins.body.id}`, { data: { t: 'b' } });
      expect(up.status).toBe(200);
      const c2 = await es.next(changes(es));
      expect(c2.data).toMatchObject({ op: 'update', id: ins.body.id, data: { t: 'b' }, old: { t: 'a' }, seq: seq0 + 2 });
      expect((await call('DELETE', `/db/tables/notes/rows/${ins.body.id}`)).status).toBe(204);
      const c3 = await es.next(changes(es));
      expect(c3.data).toMatchObject({ op: 'delete', id: ins.body.id, data: null, old: { t: 'b' }, seq: seq0 + 3 });
      expect(c3.id).toBe(String(seq0 + 3));
    } finally {
      es.close();
    }
  });

  it('flushes headers at once and sends heartbeat comments', async () => {
    const res = await fetch(sseUrl('table=notes'));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    // note: the test server's heartbeat is PLATFORM_EDGE_REALTIME_HEARTBEAT_MS; default 20 s, so wait for ready only.
    while (!text.includes('event: ready')) text += (await reader.read()).value ?? '';
    expect(text).toMatch(/event: ready\ndata: \{"type":"ready","table":"notes","seq":\d+\}\n\n/);
    await reader.cancel();
  });

  it('a change to another table is not sent', async () => {
    const es = openEventSource(sseUrl('table=notes'));
    try {
      await es.next((m) => m.event === 'ready');
      await call('POST', '/db/tables/tasks/rows', { data: { title: 'x', status: 'open', n: 1 } }, svc());
      const n = await call('POST', '/db/tables/notes/rows', { data: { t: 'only' } });
      const c = await es.next(changes(es));
      expect(c.data).toMatchObject({ table: 'notes', id: n.body.id });
    } finally {
      es.close();
    }
  });
});

describe('WebSocket stream', () => {
  it('ready, then change frames of the same shape; ping gets pong', async () => {
    const c = await openRtSocket(wsUrl('table=notes'), { headers: { 'x-service-key': s.keys.publishable } });
    try {
      const ready = await c.next((m) => m.event === 'ready');
      const seq0 = ready.data.seq as number;
      const ins = await call('POST', '/db/tables/notes/rows', { data: { w: 1 } });
      const m = await c.next((x) => x.event === 'change');
      expect(m.data).toEqual({ type: 'change', op: 'insert', table: 'notes', id: ins.body.id, data: { w: 1 }, old: null, seq: seq0 + 1, at: ins.body.created_at });
      c.send({ type: 'ping', data: 7 });
      expect((await c.next((x) => x.event === 'pong')).data).toEqual({ type: 'pong', data: 7 });
    } finally {
      c.close();
    }
  });
});

describe('a burst of changes (written together, docs/api.md "Write coalescing")', () => {
  it('reaches an SSE stream and a WebSocket each as its own event, in seq order, none missing or twice', async () => {
    const es = openEventSource(sseUrl('table=notes'));
    const ws = await openRtSocket(wsUrl('table=notes'), { headers: { 'x-service-key': s.keys.publishable } });
    try {
      const seq0 = (await es.next((m) => m.event === 'ready')).data.seq as number;
      expect((await ws.next((m) => m.event === 'ready')).data.seq).toBe(seq0);
      const rows = await Promise.all(Array.from({ length: 12 }, (_, i) => call('POST', '/db/tables/notes/rows', { data: { burst: i } })));
      for (const r of rows) expect(r.status, r.text).toBe(201);
      for (const c of [es, ws]) {
        const got = [];
        for (let i = 0; i < rows.length; i++) got.push(await c.next(changes(c)));
        expect(got.map((m) => m.data.seq)).toEqual(rows.map((_, i) => seq0 + 1 + i));
        expect(new Set(got.map((m) => m.data.id))).toEqual(new Set(rows.map((r) => r.body.id)));
        for (const m of got) expect(m.data).toMatchObject({ type: 'change', op: 'insert', table: 'notes', old: null });
        if (c === es) expect(got.map((m) => m.id)).toEqual(got.map((m) => String(m.data.seq)));
        expect(await c.quiet()).toEqual([]);
      }
    } finally {
      es.close();
      ws.close();
    }
  });
});

describe('RLS per subscriber', () => {
  it('each user gets only the rows their select policy shows; a delete reaches only those who saw the row, with the old row', async () => {
    const a = openEventSource(sseUrl('table=todos', alice.token));
    const b = await openRtSocket(wsUrl('table=todos'), { headers: { 'x-service-key': s.keys.publishable, authorization: `Bearer ${bob.token}` } });
    const anon = openEventSource(sseUrl('table=todos'));
    try {
      await a.next((m) => m.event === 'ready');
      await b.next((m) => m.event === 'ready');
      await anon.next((m) => m.event === 'ready');
      const ra = await call('POST', '/db/tables/todos/rows', { data: { owner: alice.id, t: 'a1' } }, { token: alice.token });
      const rb = await call('POST', '/db/tables/todos/rows', { data: { owner: bob.id, t: 'b1' } }, { token: bob.token });
      expect((await a.next(changes(a))).data).toMatchObject({ op: 'insert', id: ra.body.id, data: { owner: alice.id, t: 'a1' } });
      expect((await b.next((m) => m.event === 'change')).data).toMatchObject({ op: 'insert', id: rb.body.id });
      // delete alice's row (service role): alice hears it with the whole old row, bob does not
      expect((await call('DELETE', `/db/tables/todos/rows/${ra.body.id}`, undefined, svc())).status).toBe(204);
      expect((await a.next(changes(a))).data).toMatchObject({ op: 'delete', id: ra.body.id, data: null, old: { owner: alice.id, t: 'a1' } });
      // an update that moves bob's row to alice: bob sees a delete, alice an insert
      expect((await call('PATCH', `/db/tables/todos/rows/${rb.body.id}`, { data: { owner: alice.id, t: 'moved' } }, svc())).status).toBe(200);
      expect((await b.next((m) => m.event === 'change')).data).toMatchObject({ op: 'delete', id: rb.body.id, data: null, old: { owner: bob.id, t: 'b1' } });
      expect((await a.next(changes(a))).data).toMatchObject({ op: 'insert', id: rb.body.id, data: { owner: alice.id, t: 'moved' }, old: null });
      expect(await a.quiet(200)).toEqual([]);
      expect((await b.quiet(0)).filter((m) => m.event === 'change')).toEqual([]);
      // anon (no user: auth.uid() is null) saw nothing at all
      expect((await anon.quiet(0)).filter((m) => m.event === 'change')).toEqual([]);
    } finally {
      a.close();
      b.close();
      anon.close();
    }
  });

  it('the service key sees every change', async () => {
    const es = openEventSource(`${s.url}/realtime/stream?table=todos&apikey=${s.keys.service}`);
    try {
      await es.next((m) => m.event === 'ready');
      const r = await call('POST', '/db/tables/todos/rows', { data: { owner: bob.id, t: 'svc' } }, { token: bob.token });
      expect((await es.next(changes(es))).data).toMatchObject({ op: 'insert', id: r.body.id });
    } finally {
      es.close();
    }
  });
});

describe('filters', () => {
  it('filter= and or= mean what they mean on a list; moving in and out is insert and delete; select= trims data', async () => {
    const q = 'table=tasks&filter=status.eq.open&or=(n.gt.10,title.like.urgent*)&select=title,n';
    const es = openEventSource(sseUrl(q));
    try {
      await es.next((m) => m.event === 'ready');
      const mk = async (d: Record<string, unknown>) => (await call('POST', '/db/tables/tasks/rows', { data: d }, svc())).body;
      const hit1 = await mk({ title: 'a', status: 'open', n: 11 });
      await mk({ title: 'b', status: 'open', n: 5 });
      await mk({ title: 'urgent c', status: 'closed', n: 50 });
      const hit2 = await mk({ title: 'urgent d', status: 'open', n: 1 });
      expect((await es.next(changes(es))).data).toMatchObject({ op: 'insert', id: hit1.id, data: { title: 'a', n: 11 } });
      expect((await es.next(changes(es))).data).toMatchObject({ op: 'insert', id: hit2.id, data: { title: 'urgent d', n: 1 } });
      // the same filter on a list gives the same two rows
      const list = await call('GET', `/db/tables/tasks/rows?filter=status.eq.open&or=(n.gt.10,title.like.urgent*)&select=title,n`, undefined, svc());
      expect(list.body.rows.map((r: { id: string }) => r.id).sort()).toEqual([hit1.id, hit2.id].sort());
      // out of view: delete; back into view: insert
      await call('PATCH', `/db/tables/tasks/rows/${hit1.id}`, { data: { status: 'closed' } }, svc());
      const out = await es.next(changes(es));
      expect(out.data).toMatchObject({ op: 'delete', id: hit1.id, data: null, old: { title: 'a', n: 11 } });
      await call('PATCH', `/db/tables/tasks/rows/${hit1.id}`, { data: { status: 'open' } }, svc());
      expect((await es.next(changes(es))).data).toMatchObject({ op: 'insert', id: hit1.id, data: { title: 'a', n: 11 }, old: null });
      await call('PATCH', `/db/tables/tasks/rows/${hit1.id}`, { data: { n: 12 } }, svc());
      expect((await es.next(changes(es))).data).toEqual(expect.objectContaining({ op: 'update', data: { title: 'a', n: 12 }, old: { title: 'a', n: 11 } }));
      expect(await es.quiet(200)).toEqual([]);
    } finally {
      es.close();
    }
  });

  it('a document filter on a JSON path', async () => {
    const es = openEventSource(sseUrl('table=notes&filter=meta.kind.eq.x'));
    try {
      await es.next((m) => m.event === 'ready');
      await call('POST', '/db/tables/notes/rows', { data: { meta: { kind: 'y' } } });
      const hit = await call('POST', '/db/tables/notes/rows', { data: { meta: { kind: 'x' } } });
      expect((await es.next(changes(es))).data).toMatchObject({ op: 'insert', id: hit.body.id });
    } finally {
      es.close();
    }
  });

  it("another project's table is not found with this project's key", async () => {
    const other = s.createProject('other');
    const res = await fetch(`${s.url}/realtime/stream?table=tasks&apikey=${other.publishable}`);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('not_found');
    const err = await openRtSocket(wsUrl(`table=tasks&apikey=${other.publishable}`)).then(
      () => null,
      (e: { status: number }) => e,
    );
    expect(err?.status).toBe(404);
  });

  it('an unknown column, a bad filter, a reserved or unknown table: 400/404 envelopes before the stream opens', async () => {
    for (const [q, status, code] of [
      ['table=tasks&filter=nope.eq.1', 400, 'invalid_request'],
      ['table=tasks&filter=n.eq.abc', 400, 'invalid_request'],
      ['table=tasks&filter=garbage', 400, 'invalid_request'],
      ['table=_svc_meta.change_log', 400, 'invalid_request'],
      ['table=sqlite_master', 400, 'invalid_request'],
      ['table=missing', 404, 'not_found'],
      ['', 400, 'invalid_request'],
      ['table=tasks&bogus=1', 400, 'invalid_request'],
      ['table=tasks&since=-1', 400, 'invalid_field'],
    ] as const) {
      const res = await fetch(sseUrl(q));
      expect(res.status, q).toBe(status);
      expect(((await res.json()) as { error: { code: string } }).error.code, q).toBe(code);
    }
  });
});
