import { statSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

let s: TestServer;
const JSON_H = { 'content-type': 'application/json' };

async function call(method: string, path: string, body?: unknown, key?: string | null, raw?: Uint8Array) {
  const res = await s.req(path, {
    method,
    key,
    headers: body === undefined && !raw ? {} : JSON_H,
    body: raw ?? (body === undefined ? undefined : JSON.stringify(body)),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}
// The WAL's size on disk (docs/operations.md "The data folder"): observed with stat, the database itself is never opened.
const walFile = (): string => join(s.dataDir, 'projects', s.projectId, 'project.db-wal');

beforeAll(async () => {
  s = await startTestServer();
  expect((await call('POST', '/db/tables', { name: 'docs' }, s.keys.service)).status).toBe(201);
  expect((await call('POST', '/db/tables', { name: 'rel', type: 'relational', columns: [{ name: 'a', type: 'text' }, { name: 'b', type: 'text' }] }, s.keys.service)).status).toBe(201);
});
afterAll(() => s.close());

describe('big and odd payloads', () => {
  it('stores and returns a ~900 KB data object', async () => {
    const data: Record<string, string> = {};
    for (let i = 0; i < 90; i++) data[`k${i}`] = 'x'.repeat(10_000);
    const c = await call('POST', '/db/tables/docs/rows', { data });
    expect(c.status).toBe(201);
    const g = await call('GET', `/db/tables/docs/rows/${c.body.id}`);
    expect(g.body.data).toEqual(data);
  });

  it('a body over the JSON limit is 413', async () => {
    const r = await call('POST', '/db/tables/docs/rows', { data: { big: 'x'.repeat(1_100_000) } });
    expect(r.status).toBe(413);
    expect(r.body).toEqual({ error: { code: 'payload_too_large', message: 'request body exceeds the limit of 1048576 bytes' } });
  });

  it('a body of exactly 1 MiB (1,048,576 bytes) is taken; one byte more is 413 (docs/api.md)', async () => {
    const sized = (bytes: number): Buffer => {
      const head = '{"data":{"s":"';
      const tail = '"}}';
      return Buffer.from(head + 'x'.repeat(bytes - head.length - tail.length) + tail);
    };
    expect(sized(1_048_576).length).toBe(1_048_576);
    const at = await call('POST', '/db/tables/docs/rows', undefined, undefined, sized(1_048_576));
    expect(at.status).toBe(201);
    expect(at.body.data.s).toHaveLength(1_048_576 - 17);
    const over = await call('POST', '/db/tables/docs/rows', undefined, undefined, sized(1_048_577));
    expect(over.status).toBe(413);
    expect(over.body).toEqual({ error: { code: 'payload_too_large', message: 'request body exceeds the limit of 1048576 bytes' } });
  });

  it('a body nesting 64 levels is taken and stored; 65 is 400 invalid_body (docs/api.md)', async () => {
    // the body object is level 1, data level 2, …
    const nested = (levels: number): string => `{"data":${'{"a":'.repeat(levels - 1)}1${'}'.repeat(levels - 1)}}`;
    const at = await call('POST', '/db/tables/docs/rows', undefined, undefined, Buffer.from(nested(64)));
    expect(at.status, at.text).toBe(201);
    expect((await call('GET', `/db/tables/docs/rows/${at.body.id}`)).body.data).toEqual(JSON.parse(nested(64)).data);
    const over = await call('POST', '/db/tables/docs/rows', undefined, undefined, Buffer.from(nested(65)));
    expect(over.status).toBe(400);
    expect(over.body).toEqual({ error: { code: 'invalid_body', message: 'request body nests deeper than 64 levels' } });
  });

  it('non-UTF-8 bytes are 400 invalid_body; lone surrogates are 400 invalid_field', async () => {
    const bytes = Buffer.concat([Buffer.from('{"data":{"s":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}}')]);
    const r = await call('POST', '/db/tables/docs/rows', undefined, undefined, bytes);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_body');
    const lone = await call('POST', '/db/tables/docs/rows', undefined, undefined, Buffer.from('{"data":{"s":"\\ud800x"}}'));
    expect(lone.status).toBe(400);
    expect(lone.body.error.code).toBe('invalid_field');
    const ok = await call('POST', '/db/tables/docs/rows', { data: { s: 'héllo 😀 \u0000 ok' } });
    expect(ok.status).toBe(201);
    expect((await call('GET', `/db/tables/docs/rows/${ok.body.id}`)).body.data.s).toBe('héllo 😀 \u0000 ok');
  });
});

describe('concurrency', () => {
  it('concurrent PATCHes of different fields never lose a field (document)', async () => {
    const c = await call('POST', '/db/tables/docs/rows', { data: {} });
    await Promise.all(Array.from({ length: 40 }, (_, i) => call('PATCH', `/db/tables/docs/rows/${c.body.id}`, { data: { [`f${i}`]: i } })));
    const g = await call('GET', `/db/tables/docs/rows/${c.body.id}`);
    expect(g.body.data).toEqual(Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`f${i}`, i])));
  });

  it('concurrent PATCHes of different columns never lose one (relational)', async () => {
    const c = await call('POST', '/db/tables/rel/rows', { data: {} });
    await Promise.all([
      ...Array.from({ length: 10 }, () => call('PATCH', `/db/tables/rel/rows/${c.body.id}`, { data: { a: 'A' } })),
      ...Array.from({ length: 10 }, () => call('PATCH', `/db/tables/rel/rows/${c.body.id}`, { data: { b: 'B' } })),
    ]);
    expect((await call('GET', `/db/tables/rel/rows/${c.body.id}`)).body.data).toEqual({ a: 'A', b: 'B' });
  });
});

describe('change events', () => {
  it('each committed write appends to the change log and shows in the live log', async () => {
    const since = (await call('GET', '/live', undefined, s.keys.service)).body.seq as number;
    const c = await call('POST', '/db/tables/rel/rows', { data: { a: '1' } });
    await call('PATCH', `/db/tables/rel/rows/${c.body.id}`, { data: { b: '2' } });
    await call('DELETE', `/db/tables/rel/rows/${c.body.id}`);
    // failed writes log nothing
    await call('PATCH', `/db/tables/rel/rows/${c.body.id}`, { data: { b: '3' } });
    await call('POST', '/db/tables/rel/rows', { data: { nope: 1 } });
    const rows = await s.readBackup((db) =>
      db.prepare(`SELECT seq, op, tbl, row_id, data, old FROM "_svc_meta.change_log" WHERE row_id = ? ORDER BY seq`).all(c.body.id) as {
        seq: number;
        op: string;
        tbl: string;
        data: string | null;
        old: string | null;
      }[],
    );
    expect(rows.map((r) => r.op)).toEqual(['insert', 'update', 'delete']);
    // consecutive: nothing else was logged in between
    expect(rows.map((r) => r.seq - rows[0]!.seq)).toEqual([0, 1, 2]);
    expect(rows.map((r) => r.tbl)).toEqual(['rel', 'rel', 'rel']);
    expect(JSON.parse(rows[0]!.data!)).toEqual({ a: '1', b: null });
    expect(rows[0]!.old).toBeNull();
    expect(JSON.parse(rows[1]!.data!)).toEqual({ a: '1', b: '2' });
    expect(JSON.parse(rows[1]!.old!)).toEqual({ a: '1', b: null });
    expect(rows[2]!.data).toBeNull();
    expect(JSON.parse(rows[2]!.old!)).toEqual({ a: '1', b: '2' });
    const live = await call('GET', `/live?since=${since}`, undefined, s.keys.service);
    const labels = (live.body.events as { kind: string; label?: string }[]).filter((e) => e.kind === 'change').map((e) => e.label);
    expect(labels).toEqual(['insert into rel', 'update rel', 'delete from rel']);
  });
});

describe('change events of foreign-key actions', () => {
  const changesOf = (table: string): Promise<{ op: string; row_id: string; data: unknown; old: unknown }[]> =>
    s.readBackup((db) =>
      (db.prepare(`SELECT op, row_id, data, old FROM "_svc_meta.change_log" WHERE tbl = ? ORDER BY seq`).all(table) as { op: string; row_id: string; data: string | null; old: string | null }[]).map(
        (r) => ({ ...r, data: r.data === null ? null : JSON.parse(r.data), old: r.old === null ? null : JSON.parse(r.old) }),
      ),
    );

  it('a rows-API delete logs the rows ON DELETE CASCADE removes (down the chain) and SET NULL updates', async () => {
    const mk = async (name: string, columns: unknown[]) => expect((await call('POST', '/db/tables', { name, type: 'relational', columns }, s.keys.service)).status).toBe(201);
    await mk('authors', [{ name: 'name', type: 'text' }]);
    await mk('books', [{ name: 'title', type: 'text' }, { name: 'author', type: 'uuid', nullable: true, references: { table: 'authors', on_delete: 'cascade' } }]);
    await mk('chapters', [{ name: 'n', type: 'int8' }, { name: 'book', type: 'uuid', references: { table: 'books', on_delete: 'cascade' } }]);
    await mk('fans', [{ name: 'fav', type: 'uuid', nullable: true, references: { table: 'authors', on_delete: 'set null' } }]);
    const a = (await call('POST', '/db/tables/authors/rows', { data: { name: 'Ann' } })).body.id as string;
    const other = (await call('POST', '/db/tables/authors/rows', { data: { name: 'Bob' } })).body.id as string;
    const b = (await call('POST', '/db/tables/books/rows', { data: { title: 'One', author: a } })).body.id as string;
    const keep = (await call('POST', '/db/tables/books/rows', { data: { title: 'Two', author: other } })).body.id as string;
    const ch = (await call('POST', '/db/tables/chapters/rows', { data: { n: 1, book: b } })).body.id as string;
    const f = (await call('POST', '/db/tables/fans/rows', { data: { fav: a } })).body.id as string;

    expect((await call('DELETE', `/db/tables/authors/rows/${a}`)).status).toBe(204);
    expect((await call('GET', `/db/tables/books/rows/${b}`)).status).toBe(404);
    expect((await call('GET', `/db/tables/books/rows/${keep}`)).status).toBe(200);
    expect((await call('GET', `/db/tables/chapters/rows/${ch}`)).status).toBe(404);
    expect((await call('GET', `/db/tables/fans/rows/${f}`)).body.data).toEqual({ fav: null });

    expect((await changesOf('books')).filter((c) => c.op === 'delete')).toEqual([{ op: 'delete', row_id: b, data: null, old: { title: 'One', author: a } }]);
    expect((await changesOf('chapters')).filter((c) => c.op === 'delete')).toEqual([{ op: 'delete', row_id: ch, data: null, old: { n: 1, book: b } }]);
    expect((await changesOf('fans')).filter((c) => c.op === 'update')).toEqual([{ op: 'update', row_id: f, data: { fav: null }, old: { fav: a } }]);
  });

  it("deleting a user logs the rows of user tables that reference the user's profile", async () => {
    const reg = await s.req('/auth/register', { method: 'POST', headers: JSON_H, body: JSON.stringify({ email: 'leaving@example.com', password: 'long enough password' }) });
    expect(reg.status).toBe(200);
    const user = ((await reg.json()) as { user: { id: string } }).user.id;
    const mk = await call('POST', '/db/tables', { name: 'notes_of', type: 'relational', columns: [{ name: 'owner', type: 'uuid', references: { table: 'profiles', on_delete: 'cascade' } }, { name: 'text', type: 'text' }] }, s.keys.service);
    expect(mk.status, mk.text).toBe(201);
    const note = (await call('POST', '/db/tables/notes_of/rows', { data: { owner: user, text: 'bye' } })).body.id as string;
    expect((await call('DELETE', `/auth/users/${user}`, undefined, s.keys.service)).status).toBe(204);
    expect((await call('GET', `/db/tables/notes_of/rows/${note}`)).status).toBe(404);
    expect((await changesOf('notes_of')).filter((c) => c.op === 'delete')).toEqual([{ op: 'delete', row_id: note, data: null, old: { owner: user, text: 'bye' } }]);
    expect((await changesOf('profiles')).filter((c) => c.op === 'delete').map((c) => c.row_id)).toContain(user);
  });

  it('a raw-SQL delete logs the rows its foreign-key actions change in tables it does not name (down the chain, and SET NULL)', async () => {
    const q = async (sql: string) => {
      const r = await call('POST', '/db/query', { sql }, s.keys.service);
      expect(r.status, r.text).toBe(200);
      return r.body;
    };
    const stamps = 'created_at timestamptz not null default now(), updated_at timestamptz not null default now()';
    await q(`create table shelves (id uuid primary key default gen_random_uuid(), label text, ${stamps})`);
    await q(`create table items (id uuid primary key default gen_random_uuid(), shelf uuid references shelves(id) on delete cascade, ${stamps})`);
    await q(`create table parts (id uuid primary key default gen_random_uuid(), item uuid references items(id) on delete cascade, ${stamps})`);
    await q(`create table tags (id uuid primary key default gen_random_uuid(), shelf uuid references shelves(id) on delete set null, ${stamps})`);
    const shelf = (await q(`insert into shelves (label) values ('top') returning id`)).rows[0].id as string;
    const item = (await q(`insert into items (shelf) values ('${shelf}') returning id`)).rows[0].id as string;
    const part = (await q(`insert into parts (item) values ('${item}') returning id`)).rows[0].id as string;
    const tag = (await q(`insert into tags (shelf) values ('${shelf}') returning id`)).rows[0].id as string;
    const since = (await call('GET', '/live', undefined, s.keys.service)).body.seq as number;
    // the script names only shelves
    expect((await q(`delete from shelves where id = '${shelf}'`)).row_count).toBe(1);
    expect((await changesOf('shelves')).filter((c) => c.op === 'delete')).toEqual([{ op: 'delete', row_id: shelf, data: null, old: { label: 'top' } }]);
    expect((await changesOf('items')).filter((c) => c.op === 'delete')).toEqual([{ op: 'delete', row_id: item, data: null, old: { shelf } }]);
    expect((await changesOf('parts')).filter((c) => c.op === 'delete')).toEqual([{ op: 'delete', row_id: part, data: null, old: { item } }]);
    expect((await changesOf('tags')).filter((c) => c.op === 'update')).toEqual([{ op: 'update', row_id: tag, data: { shelf: null }, old: { shelf } }]);
    // and the live log shows each of them as a change
    const events = (await call('GET', `/live?since=${since}`, undefined, s.keys.service)).body.events as { kind: string; label?: string }[];
    const labels = events.filter((e) => e.kind === 'change').map((e) => e.label).sort();
    expect(labels).toEqual(['delete from items', 'delete from parts', 'delete from shelves', 'update tags']);
  });
});

describe('profiles columns', () => {
  it('user-field columns appear in the table list and schema', async () => {
    const r = await call('PUT', '/auth/user-fields', { fields: [{ name: 'age', type: 'int8', required: false, in_signup: true }] }, s.keys.service);
    expect(r.status, r.text).toBe(200);
    const t = await call('GET', '/db/tables');
    const p = t.body.tables.find((x: { name: string }) => x.name === 'profiles');
    expect(p.columns).toContainEqual(expect.objectContaining({ name: 'age', type: 'int8' }));
    const g = await call('GET', '/db/schema');
    expect(g.body.tables.find((x: { name: string }) => x.name === 'profiles').columns).toContainEqual({ name: 'age', type: 'int8', nullable: true, primary_key: false });
  });
});

describe('WAL', () => {
  it('stays bounded under a burst of 5000 inserts', async () => {
    const total = 5000;
    // note: node:http with a keep-alive pool is several times faster than fetch, so the burst takes seconds.
    const agent = new Agent({ keepAlive: true, maxSockets: 32 });
    const { hostname, port } = new URL(s.url);
    const post = (n: number): Promise<number> =>
      new Promise((resolve, reject) => {
        const body = JSON.stringify({ data: { n, pad: 'p'.repeat(200) } });
        const r = request(
          { agent, hostname, port, method: 'POST', path: '/db/tables/docs/rows', headers: { ...JSON_H, 'x-service-key': s.keys.publishable, 'content-length': Buffer.byteLength(body) } },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        r.on('error', reject);
        r.end(body);
      });
    let next = 0;
    let fails = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < total) if ((await post(++next)) !== 201) fails++;
      }),
    );
    agent.destroy();
    expect(fails).toBe(0);
    const wal = statSync(walFile()).size;
    // note: the auto-checkpoint restarts the WAL every ~1000 pages (4 MB); a starved checkpoint would grow past this.
    expect(wal).toBeLessThan(16 * 1024 * 1024);
  }, 60_000);
});

describe('change-log retention', () => {
  it('keeps the newest rows of each project and never restarts the numbering', async () => {
    const t = await startTestServer({ changeLogKeep: 3, changeLogPruneMs: 50 });
    try {
      const r = await t.req('/db/tables', { method: 'POST', key: t.keys.service, headers: JSON_H, body: JSON.stringify({ name: 'notes' }) });
      expect(r.status).toBe(201);
      const add = async (n: number) => {
        const res = await t.req('/db/tables/notes/rows', { method: 'POST', key: t.keys.service, headers: JSON_H, body: JSON.stringify({ data: { n } }) });
        expect(res.status).toBe(201);
      };
      for (let n = 1; n <= 6; n++) await add(n);
      const log = () => t.readBackup((db) => db.prepare(`SELECT seq, data FROM "_svc_meta.change_log" ORDER BY seq`).all() as { seq: number; data: string }[]);
      const deadline = Date.now() + 5000;
      while ((await log()).length > 3 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 50));
      const kept = await log();
      expect(kept.map((k) => JSON.parse(k.data).n)).toEqual([4, 5, 6]);
      await add(7);
      const after = await log();
      expect(after.at(-1)!.seq).toBe(kept.at(-1)!.seq + 1);
    } finally {
      await t.close();
    }
  });
});
