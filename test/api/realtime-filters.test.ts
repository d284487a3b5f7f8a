import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEventSource } from '../helpers/realtime.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// One corpus, two paths: each filter selects the same rows on a list and on a stream
// (docs/api.md "Realtime", "Filters"), with the same `filter=` text. Each stream also names a
// channel: a broadcast sent after the last insert answered comes after every change of those
// inserts on the same stream (changes are dispatched right after their commit), so it ends
// what the stream can get.
let s: TestServer;

async function call(method: string, path: string, body?: unknown) {
  const res = await s.req(path, { method, key: s.keys.service, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}

const REL_ROWS = [
  { title: 'alpha', n: 1, score: 1.5, done: true, tags: ['a', 'b'], due: '2026-01-02T00:00:00.000Z', raw: Buffer.from('hi!').toString('base64') },
  { title: 'beta', n: 3, score: null, done: false, tags: ['b'], due: '2025-06-01T00:00:00.000Z', raw: Buffer.from('yo').toString('base64') },
  { title: 'gamma', n: 5, score: 9.25, done: true, tags: [], due: null },
  { title: 'Alphabet', n: 7, score: -2, done: false, tags: ['a'], due: '2027-03-04T05:06:07.000Z' },
  { title: 'delta_x', n: 10, score: 0, done: true, tags: ['c', 'a'], due: '2026-12-31T23:59:59.000Z' },
  { title: 'pho', n: -4, score: 3, done: false, tags: null, due: '2026-01-01T00:00:00.000Z' },
];
const REL_FILTERS = [
  'title.eq.alpha',
  'title.neq.alpha',
  'n.gt.3',
  'n.gte.3',
  'n.lt.3',
  'n.lte.3',
  'n.in.(1,7,10)',
  'done.is.true',
  'done.is.false',
  'score.is.null',
  'score.gt.1',
  'title.like.al*',
  'title.like.*a_x',
  'title.ilike.AL*',
  'title.contains.ph',
  'tags.contains.["a"]',
  'tags.contains.["a","b"]',
  'due.gt.2026-01-01T00:00:00Z',
  'due.is.null',
  `raw.eq.${Buffer.from('hi!').toString('base64')}`,
  'raw.is.null',
];
const DOC_ROWS = [
  { name: 'one', kind: 'x', meta: { size: 5 }, tags: ['a'], flag: true },
  { name: 'two', kind: 'y', meta: { size: 15 }, tags: ['b', 'a'], flag: false },
  { name: 'four', kind: 'x', meta: { size: 50 }, tags: 'b', flag: null },
  { name: 'room', kind: null, meta: {}, flag: true },
];
const DOC_FILTERS = ['kind.eq.x', 'kind.is.null', 'meta.size.gt.10', 'meta.size.lte.15', 'tags.contains.["b"]', 'tags.contains.b', 'flag.is.true', 'name.like.*o*', 'name.in.(one,four)', 'data.kind.neq.x'];

beforeAll(async () => {
  s = await startTestServer();
  const rel = await call('POST', '/db/tables', {
    name: 'items',
    type: 'relational',
    columns: [
      { name: 'title', type: 'text' },
      { name: 'n', type: 'int8' },
      { name: 'score', type: 'float8' },
      { name: 'done', type: 'bool' },
      { name: 'tags', type: 'jsonb' },
      { name: 'due', type: 'timestamptz' },
      { name: 'raw', type: 'bytea' },
    ],
  });
  expect(rel.status, rel.text).toBe(201);
  expect((await call('POST', '/db/tables', { name: 'docs' })).status).toBe(201);
});
afterAll(() => s.close());

async function corpus(table: string, filters: string[], rows: Record<string, unknown>[]) {
  const streams = filters.map((f) => openEventSource(`${s.url}/realtime/stream?table=${table}&filter=${encodeURIComponent(f)}&channel=corpus-${table}&apikey=${s.keys.service}`));
  try {
    for (let i = 0; i < filters.length; i++) await streams[i]!.next((m) => m.event === 'ready').catch(() => Promise.reject(new Error(`no stream for ${filters[i]}`)));
    for (const r of rows) expect((await call('POST', `/db/tables/${table}/rows`, { data: r })).status).toBe(201);
    expect((await call('POST', '/realtime/broadcast', { channel: `corpus-${table}`, event: 'end', payload: null })).status).toBe(204);
    for (let i = 0; i < filters.length; i++) {
      const got: string[] = [];
      for (;;) {
        const m = await streams[i]!.next((x) => x.event === 'change' || x.event === 'broadcast');
        if (m.event === 'broadcast') break;
        got.push(m.data.id as string);
      }
      const list = await call('GET', `/db/tables/${table}/rows?filter=${encodeURIComponent(filters[i]!)}&limit=1000`);
      expect(list.status, `${filters[i]}: ${list.text}`).toBe(200);
      expect(got.sort(), filters[i]).toEqual(list.body.rows.map((r: { id: string }) => r.id).sort());
    }
    // the corpus is not vacuous: most filters select some rows and not all
    const sizes = await Promise.all(filters.map(async (f) => (await call('GET', `/db/tables/${table}/rows?filter=${encodeURIComponent(f)}`)).body.rows.length as number));
    expect(sizes.filter((n) => n > 0 && n < rows.length).length).toBeGreaterThanOrEqual(filters.length - 2);
  } finally {
    for (const es of streams) es.close();
  }
}

describe('the filter corpus: list and stream agree', () => {
  it('relational columns of every type', async () => {
    await corpus('items', REL_FILTERS, REL_ROWS);
  });

  it('document fields and JSON paths', async () => {
    await corpus('docs', DOC_FILTERS, DOC_ROWS);
  });
});
