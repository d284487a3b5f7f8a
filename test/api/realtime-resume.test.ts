import { afterAll, describe, expect, it } from 'vitest';
import { openEventSource, openRtSocket, restartTestServer } from '../helpers/realtime.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Resume from the durable change log (docs/api.md "Realtime"): ?since=, Last-Event-ID, the gap marker, a restart.
const servers: TestServer[] = [];
afterAll(async () => {
  for (const s of servers) await s.close();
});

async function insert(s: TestServer, table: string, data: Record<string, unknown>): Promise<{ id: string }> {
  const r = await s.req(`/db/tables/${table}/rows`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ data }) });
  expect(r.status).toBe(201);
  return (await r.json()) as { id: string };
}
const isChange = (m: { event: string }) => m.event === 'change';

describe('resume', () => {
  it('?since= replays the changes after it (filter applied), then goes live, without gap or duplicate; across a restart with Last-Event-ID', async () => {
    let s = await startTestServer();
    servers.push(s);
    expect((await s.req('/db/tables', { method: 'POST', key: s.keys.service, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'log' }) })).status).toBe(201);
    const first = openEventSource(`${s.url}/realtime/stream?table=log&apikey=${s.keys.publishable}`);
    const seq0 = (await first.next((m) => m.event === 'ready')).data.seq as number;
    const a = await insert(s, 'log', { k: 'a', n: 1 });
    const b = await insert(s, 'log', { k: 'b', n: 2 });
    expect((await first.next(isChange)).data).toMatchObject({ id: a.id, seq: seq0 + 1 });
    expect((await first.next(isChange)).data).toMatchObject({ id: b.id, seq: seq0 + 2 });
    first.close();

    // a WebSocket that resumes after seq0 with a filter gets only the matching replayed change
    const ws = await openRtSocket(`${s.url.replace('http', 'ws')}/realtime/ws?table=log&filter=n.gt.1&since=${seq0}&apikey=${s.keys.publishable}`);
    expect((await ws.next((m) => m.event === 'ready')).data).toEqual({ type: 'ready', table: 'log', seq: seq0 + 2 });
    expect((await ws.next(isChange)).data).toMatchObject({ op: 'insert', id: b.id, seq: seq0 + 2 });
    ws.close();

    s = await restartTestServer(s);
    servers[0] = s;
    const c = await insert(s, 'log', { k: 'c', n: 3 });
    // what a reconnecting EventSource sends: the last id it got
    const again = openEventSource(`${s.url}/realtime/stream?table=log&apikey=${s.keys.publishable}`, { 'last-event-id': String(seq0 + 1) });
    try {
      expect((await again.next((m) => m.event === 'ready')).data).toEqual({ type: 'ready', table: 'log', seq: seq0 + 3 });
      const r1 = await again.next(isChange);
      expect(r1.data).toMatchObject({ id: b.id, seq: seq0 + 2, data: { k: 'b', n: 2 } });
      expect(r1.id).toBe(String(seq0 + 2));
      expect((await again.next(isChange)).data).toMatchObject({ id: c.id, seq: seq0 + 3 });
      const d = await insert(s, 'log', { k: 'd', n: 4 });
      expect((await again.next(isChange)).data).toMatchObject({ id: d.id, seq: seq0 + 4 });
      expect(await again.quiet(200)).toEqual([]);
    } finally {
      again.close();
    }
  });

  it('past the retained log a gap marker comes first, then what is kept; a seq from the future replays nothing', async () => {
    const s = await startTestServer({ changeLogKeep: 2, changeLogCap: 2, changeLogPruneMs: 20 });
    servers.push(s);
    expect((await s.req('/db/tables', { method: 'POST', key: s.keys.service, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'g' }) })).status).toBe(201);
    const probe = openEventSource(`${s.url}/realtime/stream?table=g&apikey=${s.keys.publishable}`);
    const seq0 = (await probe.next((m) => m.event === 'ready')).data.seq as number;
    probe.close();
    const rows = [];
    for (let i = 0; i < 5; i++) rows.push(await insert(s, 'g', { i }));
    // note: pruning runs every 20 ms here; wait until the log kept only the newest two (polled, bounded).
    let gap: Record<string, unknown> | null = null;
    for (let tries = 0; tries < 50 && gap === null; tries++) {
      await new Promise((r) => setTimeout(r, 40));
      const es = openEventSource(`${s.url}/realtime/stream?table=g&since=${seq0}&apikey=${s.keys.publishable}`);
      await es.next((m) => m.event === 'ready');
      const m = await es.next((x) => x.event === 'gap' || x.event === 'change');
      if (m.event === 'gap') {
        gap = m.data;
        expect((await es.next(isChange)).data).toMatchObject({ id: rows[3]!.id, seq: seq0 + 4 });
        expect((await es.next(isChange)).data).toMatchObject({ id: rows[4]!.id, seq: seq0 + 5 });
      }
      es.close();
    }
    expect(gap).toEqual({ type: 'gap', since: seq0, oldest_seq: seq0 + 4 });

    const future = openEventSource(`${s.url}/realtime/stream?table=g&since=${seq0 + 1000}&apikey=${s.keys.publishable}`);
    try {
      expect((await future.next((m) => m.event === 'ready')).data).toEqual({ type: 'ready', table: 'g', seq: seq0 + 5 });
      const e = await insert(s, 'g', { i: 5 });
      expect((await future.next()).data).toMatchObject({ type: 'change', id: e.id, seq: seq0 + 6 });
    } finally {
      future.close();
    }
  });
});
