import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { errorOf, startTestServer, type ConfigOverrides, type TestServer } from '../helpers/server.js';
import { openSse, type SseClient } from '../helpers/sse.js';

// note: the abuse battery's cases get 60 s each: they share the cores with the API files (a
// 16 MiB GraphQL answer, a trickled body). vi.setConfig lasts for this file only.
vi.setConfig({ testTimeout: 60_000 });

// Issue 11: faults and bad input that answered 500 or the wrong thing (items 7, 8, 12, 13)
// and the caps on list-filter compilation (item 3). Black-box: a real server over HTTP.

const JSON_H = { 'content-type': 'application/json' };
const PASSWORD = 'correct horse battery staple 1';

interface Answer {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  text: string;
}

function caller(s: TestServer) {
  return async (method: string, path: string, body?: unknown, opts: { key?: string | null; headers?: Record<string, string> } = {}): Promise<Answer> => {
    const headers: Record<string, string> = { ...(body === undefined ? {} : JSON_H), ...opts.headers };
    const res = await s.req(path, { method, key: opts.key, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null, text };
  };
}

/** A real server (startTestServer) with the server log captured (what an operator reads). */
async function startLogged(overrides: ConfigOverrides): Promise<TestServer & { log: string[] }> {
  const log: string[] = [];
  const s = await startTestServer(overrides, { log: (msg, err) => log.push(`${msg}${err instanceof Error ? `: ${err.message}` : ''}`) });
  return Object.assign(s, { log });
}

describe('item 7: a full database answers 507 insufficient_storage, and the log says so', () => {
  let s: TestServer & { log: string[] };
  let call: ReturnType<typeof caller>;
  // The project's size cap (PLATFORM_EDGE_MAX_PROJECT_DB_BYTES) makes SQLite's SQLITE_FULL real
  // without filling the machine's disk: the same error a full disk gives.
  const CAP = 2 * 1024 * 1024;

  beforeAll(async () => {
    s = await startLogged({ maxProjectDbBytes: CAP });
    call = caller(s);
    expect((await call('POST', '/db/tables', { name: 'blobs' }, { key: s.keys.service })).status).toBe(201);
    expect((await call('POST', '/storage/buckets', { name: 'files', public: false }, { key: s.keys.service })).status).toBe(201);
  });
  afterAll(() => s.close());

  it('inserts past the cap are 507 with the envelope, store nothing, and reads keep working', async () => {
    let stored = 0;
    let first: Answer | null = null;
    // Filled with ever smaller rows, each size until it is refused, so that no free page is left.
    for (const size of [100_000, 10_000, 1_000]) {
      const big = 'x'.repeat(size);
      let refused = false;
      // 2 MiB hold at most 2,100 rows of 1 KB: each size is refused well within the bound.
      for (let i = 0; i < 2_500 && !refused; i++) {
        const r = await call('POST', '/db/tables/blobs/rows', { data: { i, big } });
        if (r.status === 201) stored++;
        else {
          refused = true;
          first ??= r;
          expect(r.status, r.text).toBe(507);
        }
      }
      expect(refused).toBe(true);
    }
    expect(first!.body).toEqual({ error: { code: 'insufficient_storage', message: 'the database is full; the change was not made' } });
    const list = await call('GET', '/db/tables/blobs/rows?count=exact&limit=0&select=i');
    expect(list.status).toBe(200);
    expect(list.body.total).toBe(stored);
    const health = await fetch(`${s.url}/health`);
    expect(health.status).toBe(200);
    await health.body?.cancel();
  });

  it('/auth/register past the cap is 507 and creates no user', async () => {
    const r = await call('POST', '/auth/register', { email: 'full@example.com', password: PASSWORD, user_metadata: { bio: 'y'.repeat(16_000) } });
    expect(r.status, r.text).toBe(507);
    expect(r.body.error.code).toBe('insufficient_storage');
    const login = await call('POST', '/auth/login', { email: 'full@example.com', password: PASSWORD });
    expect(login.status).toBe(401);
    expect(login.body.error.code).toBe('invalid_credentials');
  });

  it('raw SQL writes past the cap are 507 too', async () => {
    const r = await call('POST', '/db/query', { sql: "insert into blobs (id, data, created_at, updated_at) values ('0190a0a0-0000-7000-8000-0000000000aa', $1, now(), now())", params: [JSON.stringify({ big: 'z'.repeat(100_000) })] }, { key: s.keys.service });
    expect(r.status, r.text).toBe(507);
    expect(r.body.error.code).toBe('insufficient_storage');
  });

  it('a storage upload past the cap is 507: its bytes are written, the record is refused, the file removed', async () => {
    // note: the object's bytes go to a file, outside the database cap; its record is a row, and a
    // full database refuses it. A real full disk refusing the file itself is a unit test
    // (test/unit/storage-object-store.test.ts): no unprivileged way fills a disk for one process.
    const objects = join(s.dataDir, 'projects', s.projectId, 'objects');
    const files = (): string[] => readdirSync(objects).filter((f) => f !== '.tmp');
    let stored = 0;
    let refused: Answer | null = null;
    // the inserts above left less than a page free: a few records fit at most
    for (let i = 0; i < 200 && refused === null; i++) {
      const res = await s.req(`/storage/objects/files/f${i}.txt`, { method: 'PUT', key: s.keys.service, headers: { 'content-type': 'text/plain' }, body: 'q'.repeat(4096) });
      const text = await res.text();
      if (res.status === 201) stored++;
      else refused = { status: res.status, body: JSON.parse(text), text };
    }
    expect(refused?.status, refused?.text).toBe(507);
    expect(refused!.body).toEqual({ error: { code: 'insufficient_storage', message: 'the database is full; the change was not made' } });
    const get = await s.req(`/storage/objects/files/f${stored}.txt`, { key: s.keys.service });
    expect(get.status).toBe(404);
    await get.body?.cancel();
    const list = await call('GET', '/storage/objects/files', undefined, { key: s.keys.service });
    expect(list.status, list.text).toBe(200);
    expect(list.body.objects.map((o: { key: string }) => o.key)).toEqual(Array.from({ length: stored }, (_, i) => `f${i}.txt`).sort());
    expect(files().length).toBe(stored);
    expect(readdirSync(join(objects, '.tmp'))).toEqual([]);
  });

  it('the log has one line naming the fault and the project, without the body', () => {
    const lines = s.log.filter((l) => l.startsWith('storage full:'));
    // note: at most one line per 10 s however many writes are refused (hundreds were, above,
    // within the tests' 20 s time limits), so a full disk does not flood the log.
    expect(lines.length).toBeGreaterThanOrEqual(1);
    expect(lines.length).toBeLessThanOrEqual(6);
    expect(lines[0]).toMatch(
      new RegExp(
        `^storage full: a write to project ${s.projectId} failed with SQLITE_FULL \\(request [^ ]+\\); ` +
          'free disk space in the data folder or raise PLATFORM_EDGE_MAX_PROJECT_DB_BYTES; writes answer 507 until then$',
      ),
    );
    expect(s.log.join('\n')).not.toContain('xxxxxxxx');
    expect(s.log.join('\n')).not.toContain(PASSWORD);
    expect(s.log.filter((l) => l.includes('failed: '))).toEqual([]);
  });
});

describe('item 8: contains on a document field holding a string', () => {
  let s: TestServer;
  let call: ReturnType<typeof caller>;
  const names = (r: Answer) => (r.body.rows as { data: { n: string } }[]).map((x) => x.data.n).sort();

  beforeAll(async () => {
    s = await startTestServer();
    call = caller(s);
    expect((await call('POST', '/db/tables', { name: 'docs' }, { key: s.keys.service })).status).toBe(201);
    const rows = [
      { n: 'a', txt: 'abc', tags: ['abc', 'x'] },
      { n: 'b', txt: '[1]', tags: [1] },
      { n: 'c', txt: ']]', tags: [']]'] },
      { n: 'd', txt: '{', tags: { k: 'abc' } },
      { n: 'e', txt: 7, tags: 'abc' },
    ];
    for (const data of rows) expect((await call('POST', '/db/tables/docs/rows', { data })).status).toBe(201);
  });
  afterAll(() => s.close());

  it.each([
    // a stored string contains only itself (as jsonb @>), never a crash on its text
    ['txt.contains.abc', ['a']],
    ['txt.contains.%5D%5D', ['c']],
    ['txt.contains.{', ['d']],
    ['txt.contains.[1]', []],
    ['txt.contains."[1]"', ['b']],
    ['txt.contains.["abc","x"]', []],
    ['txt.contains.7', ['e']],
    // arrays contain each given value; an object contains no scalar
    ['tags.contains.abc', ['a', 'e']],
    ['tags.contains.["abc","x"]', ['a']],
    ['tags.contains.1', ['b']],
    ['missing.contains.abc', []],
  ])('filter=%s answers 200 with the matching rows', async (f, expected) => {
    const r = await call('GET', `/db/tables/docs/rows?filter=${f}`);
    expect(r.status, r.text).toBe(200);
    expect(names(r)).toEqual(expected);
  });

  it('an object or nested array as the value is 400 invalid_request', async () => {
    const r = await call('GET', '/db/tables/docs/rows?filter=txt.contains.{"a":1}');
    expect(r.status).toBe(400);
    expect(r.body.error).toEqual({ code: 'invalid_request', message: 'contains on "txt" takes scalars or an array of scalars' });
  });
});

describe('item 3: caps on list-filter compilation are 400 invalid_request', () => {
  let s: TestServer;
  let call: ReturnType<typeof caller>;

  beforeAll(async () => {
    s = await startTestServer();
    call = caller(s);
    expect((await call('POST', '/db/tables', { name: 'cap' }, { key: s.keys.service })).status).toBe(201);
    expect((await call('POST', '/db/tables/cap/rows', { data: { a: 1 } })).status).toBe(201);
  });
  afterAll(() => s.close());

  const get = (qs: string) => call('GET', `/db/tables/cap/rows?${qs}`);
  const many = (n: number, f: (i: number) => string, sep = '&') => Array.from({ length: n }, (_, i) => f(i)).join(sep);

  it.each([
    ['65 filters', many(65, () => 'filter=a.eq.1'), 'at most 64 filters (or members included)'],
    ['an or group of 65 members', `or=(${many(65, () => 'a.eq.1', ',')})`, 'at most 64 filters (or members included)'],
    ['40 filters and an or of 30', `${many(40, () => 'filter=a.eq.1')}&or=(${many(30, () => 'a.eq.1', ',')})`, 'at most 64 filters (or members included)'],
    ['an in list of 1001', `filter=a.in.(${many(1001, (i) => String(i), ',')})`, 'in takes 1 to 1000 values'],
    ['two in lists of 600', `filter=a.in.(${many(600, (i) => String(i), ',')})&filter=b.in.(${many(600, (i) => String(i), ',')})`, 'at most 1000 in values in one request'],
    ['a value of 4097 characters', `filter=a.eq.${'v'.repeat(4097)}`, 'a filter value has at most 4096 characters'],
    ['an in value of 4097 characters', `filter=a.in.(1,${'v'.repeat(4097)})`, 'a filter value has at most 4096 characters'],
    ['select of 101 fields', `select=${many(101, (i) => `f${i}`, ',')}`, 'select names at most 100 fields'],
    ['order of 33 fields', `order=${many(33, (i) => `f${i}`, ',')}`, 'order names at most 32 fields'],
  ])('%s', async (_what, qs, message) => {
    const r = await get(qs);
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ error: { code: 'invalid_request', message } });
  });

  it('at the caps the request is served', async () => {
    const ok = [
      many(64, () => 'filter=a.eq.1'),
      `filter=a.in.(${many(1000, (i) => String(i), ',')})`,
      `filter=a.eq.${'v'.repeat(4096)}`,
      `order=${many(32, (i) => `f${i}`, ',')}`,
    ];
    for (const qs of ok) {
      const r = await get(qs);
      expect(r.status, r.text.slice(0, 200)).toBe(200);
    }
  });
});

describe('item 12: a malformed Authorization header is 401, never anonymous', () => {
  let s: TestServer;
  let call: ReturnType<typeof caller>;
  let token: string;

  beforeAll(async () => {
    s = await startTestServer();
    call = caller(s);
    expect((await call('POST', '/db/tables', { name: 'open' }, { key: s.keys.service })).status).toBe(201);
    expect((await call('POST', '/db/tables/open/rows', { data: { a: 1 } })).status).toBe(201);
    const reg = await call('POST', '/auth/register', { email: 'tok@example.com', password: PASSWORD });
    expect(reg.status).toBe(200);
    token = reg.body.access_token as string;
  });
  afterAll(() => s.close());

  const MALFORMED = (): [string, string][] => [
    ['Bearer abc', 'Bearer abc'],
    ['Bearer <the publishable key>', `Bearer ${s.keys.publishable}`],
    ['a bare access token', token],
    ['Basic credentials', 'Basic dXNlcjpwYXNz'],
    ['Bearer with nothing after it', 'Bearer '],
  ];

  it('on the rows API, /auth/me and /db/query each form is 401 unauthorized and reads nothing', async () => {
    for (const [what, authorization] of MALFORMED()) {
      for (const [method, path, body] of [
        ['GET', '/db/tables/open/rows', undefined],
        ['POST', '/db/tables/open/rows', { data: { a: 2 } }],
        ['GET', '/auth/me', undefined],
        ['POST', '/db/query', { sql: 'select 1 as x' }],
      ] as const) {
        const r = await call(method, path, body, { headers: { authorization } });
        expect(r.status, `${what} on ${method} ${path}`).toBe(401);
        expect(r.body).toEqual({ error: { code: 'unauthorized', message: 'malformed Authorization header: expected "Bearer <access token>" (lca_…)' } });
      }
    }
    const rows = await call('GET', '/db/tables/open/rows?count=exact', undefined, { key: s.keys.service });
    expect(rows.body.total).toBe(1);
  });

  it('a valid access token, no header, and key-only routes still work', async () => {
    expect((await call('GET', '/db/tables/open/rows', undefined, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    expect((await call('GET', '/auth/me', undefined, { headers: { authorization: `bearer ${token}` } })).status).toBe(200);
    expect((await call('GET', '/db/tables/open/rows')).status).toBe(200);
    // key-only: a stale or odd header never breaks a refresh or a login
    const login = await call('POST', '/auth/login', { email: 'tok@example.com', password: PASSWORD }, { headers: { authorization: 'Bearer abc' } });
    expect(login.status).toBe(200);
  });

  it('an operator session sent with a key is still ignored (the key wins)', async () => {
    const op = await startTestServer();
    try {
      const r = await op.req('/db/tables', { headers: { authorization: `Bearer ${op.operatorToken}` } });
      expect(r.status).toBe(200);
      await r.body?.cancel();
    } finally {
      await op.close();
    }
  });
});

describe('item 13: RLS is checked before foreign keys, so a 409 leaks nothing', () => {
  let s: TestServer;
  let call: ReturnType<typeof caller>;
  let alice: { id: string; token: string };
  let listId: string;
  const MISSING = '0190a0a0-0000-7000-8000-000000000000';

  beforeAll(async () => {
    s = await startTestServer();
    call = caller(s);
    const svc = { key: s.keys.service };
    const reg = await call('POST', '/auth/register', { email: 'alice@example.com', password: PASSWORD });
    alice = { id: reg.body.user.id, token: reg.body.access_token };
    expect((await call('POST', '/db/tables', { name: 'lists', type: 'relational', columns: [{ name: 'title', type: 'text' }] }, svc)).status).toBe(201);
    const t = await call(
      'POST',
      '/db/tables',
      {
        name: 'items',
        type: 'relational',
        columns: [
          { name: 'owner', type: 'text' },
          { name: 'list_id', type: 'uuid', references: { table: 'lists' } },
        ],
      },
      svc,
    );
    expect(t.status, t.text).toBe(201);
    const own = 'owner = auth.uid()';
    expect((await call('PUT', '/db/tables/items/rls', { enabled: true, policies: { select: own, insert: own, update: own } }, svc)).status).toBe(200);
    listId = (await call('POST', '/db/tables/lists/rows', { data: { title: 'l' } }, svc)).body.id;
  });
  afterAll(() => s.close());

  const as = () => ({ headers: { authorization: `Bearer ${alice.token}` } });
  const stored = async () => (await call('GET', '/db/tables/items/rows?count=exact&limit=0', undefined, { key: s.keys.service })).body.total as number;

  it('an insert the policy rejects is 403 rls_denied whether or not its foreign key exists', async () => {
    for (const list_id of [MISSING, listId]) {
      const r = await call('POST', '/db/tables/items/rows', { data: { owner: 'someone-else', list_id } }, as());
      expect(r.status).toBe(403);
      expect(r.body.error.code).toBe('rls_denied');
    }
    expect(await stored()).toBe(0);
  });

  it('an insert the policy accepts still gets 409 for a missing foreign key and stores nothing', async () => {
    const r = await call('POST', '/db/tables/items/rows', { data: { owner: alice.id, list_id: MISSING } }, as());
    expect(r.status).toBe(409);
    expect(r.body.error).toEqual({ code: 'conflict', message: 'the change violates a foreign key' });
    expect(await stored()).toBe(0);
    const ok = await call('POST', '/db/tables/items/rows', { data: { owner: alice.id, list_id: listId } }, as());
    expect(ok.status).toBe(201);
    expect(await stored()).toBe(1);
  });

  it('an update the policy rejects is 403 whether or not its foreign key exists; an accepted one with a missing key is 409', async () => {
    const row = (await call('GET', '/db/tables/items/rows', undefined, as())).body.rows[0];
    const path = `/db/tables/items/rows/${row.id}`;
    for (const list_id of [MISSING, listId]) {
      const r = await call('PATCH', path, { data: { owner: 'someone-else', list_id } }, as());
      expect(r.status).toBe(403);
      expect(r.body.error.code).toBe('rls_denied');
    }
    const fk = await call('PATCH', path, { data: { list_id: MISSING } }, as());
    expect(fk.status).toBe(409);
    expect(fk.body.error.code).toBe('conflict');
    const after = await call('GET', path, undefined, { key: s.keys.service });
    expect(after.body.data).toEqual({ owner: alice.id, list_id: listId });
  });

  it('the 403 for a missing foreign key is the same answer as for an existing one', async () => {
    const r = await s.req('/db/tables/items/rows', { method: 'POST', headers: { ...JSON_H, ...as().headers }, body: JSON.stringify({ data: { owner: 'x', list_id: MISSING } }) });
    expect(await errorOf(r)).toEqual({ code: 'rls_denied', message: 'row-level security does not allow this insert' });
  });
});

describe('item 14: GET /live/stream resumes after Last-Event-ID', () => {
  let s: TestServer;
  // A small ring, so that a resume reaches past it into the capped table.
  beforeAll(async () => {
    s = await startTestServer({ liveRingSize: 5 });
  });
  afterAll(() => s.close());

  const admin = () => ({ 'x-service-key': s.keys.service });
  const seqNow = async (): Promise<number> => ((await (await s.req('/live', { key: s.keys.service })).json()) as { seq: number }).seq;
  /** Requests the live log records, one event each. */
  const hits = async (n: number) => {
    for (let i = 0; i < n; i++) {
      const r = await s.req(`/health/key?n=${i}`);
      expect(r.status).toBe(200);
      await r.body?.cancel();
    }
  };
  const logs = async (sse: SseClient, n: number) => {
    const out: { id: string | undefined; seq: number; route: string }[] = [];
    for (let i = 0; i < n; i++) {
      const e = await sse.next((x) => x.event === 'log');
      const d = JSON.parse(e.data) as { seq: number; route: string };
      out.push({ id: e.id, seq: d.seq, route: d.route });
    }
    return out;
  };
  const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

  it('replays the missed events (past the in-memory ring) in order, then goes live without a gap or a repeat', async () => {
    const seen = await seqNow();
    await hits(12);
    const sse = await openSse(`${s.url}/live/stream`, { ...admin(), 'last-event-id': String(seen) });
    try {
      expect(sse.response.status).toBe(200);
      const hello = JSON.parse((await sse.next((e) => e.event === 'hello')).data) as { seq: number };
      expect(hello.seq).toBe(seen + 12);
      const replayed = await logs(sse, 12);
      expect(replayed.map((e) => e.seq)).toEqual(range(seen + 1, 12));
      expect(replayed.map((e) => e.id)).toEqual(range(seen + 1, 12).map(String));
      expect(new Set(replayed.map((e) => e.route))).toEqual(new Set(['/health/key']));
      await hits(2);
      expect((await logs(sse, 2)).map((e) => e.seq)).toEqual(range(seen + 13, 2));
    } finally {
      sse.close();
    }
  });

  it('a resume from the last event seen replays nothing; a malformed or future id is live only', async () => {
    for (const id of ['current', 'abc', '99999999']) {
      const now = await seqNow();
      const sse = await openSse(`${s.url}/live/stream`, { ...admin(), 'last-event-id': id === 'current' ? String(now) : id });
      try {
        const hello = JSON.parse((await sse.next((e) => e.event === 'hello')).data) as { seq: number };
        expect(hello.seq).toBe(now);
        await hits(1);
        expect((await logs(sse, 1)).map((e) => e.seq)).toEqual([now + 1]);
      } finally {
        sse.close();
      }
    }
  });
});

describe('item 15: a refresh repeated within the reuse interval answers the pair already issued', () => {
  interface Pair {
    access_token: string;
    refresh_token: string;
    expires_at: number;
    user: { id: string };
  }
  const sessionOf = async (s: TestServer, email: string): Promise<Pair> => {
    const r = await caller(s)('POST', '/auth/register', { email, password: PASSWORD });
    expect(r.status).toBe(200);
    return r.body as Pair;
  };
  const refresh = (s: TestServer, token: string) => caller(s)('POST', '/auth/refresh', { refresh_token: token });
  const me = (s: TestServer, access: string) => caller(s)('GET', '/auth/me', undefined, { headers: { authorization: `Bearer ${access}` } });

  describe('with the default interval (10 s)', () => {
    let s: TestServer;
    beforeAll(async () => {
      s = await startTestServer();
    });
    afterAll(() => s.close());

    it('4 parallel refreshes of one token (two tabs) all answer 200 with the same new pair; the session stays valid', async () => {
      const first = await sessionOf(s, 'tabs@example.com');
      const answers = await Promise.all(Array.from({ length: 4 }, () => refresh(s, first.refresh_token)));
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
      const pair = answers[0]!.body as Pair;
      expect(pair.refresh_token).toMatch(/^lcr_[0-9A-Za-z]{32}$/);
      expect(pair.refresh_token).not.toBe(first.refresh_token);
      for (const a of answers) {
        expect(a.body.refresh_token).toBe(pair.refresh_token);
        expect(a.body.access_token).toBe(pair.access_token);
        expect(a.body.expires_at).toBe(pair.expires_at);
        expect(a.body.user.id).toBe(first.user.id);
      }
      expect((await me(s, pair.access_token)).status).toBe(200);
      // the rotated-away access token still stops working at once
      expect((await me(s, first.access_token)).status).toBe(401);
      // and the chain goes on
      const next = await refresh(s, pair.refresh_token);
      expect(next.status).toBe(200);
      expect((await me(s, next.body.access_token)).status).toBe(200);
    });

    it('a late tab presenting the first token after two rotations gets the current pair', async () => {
      const p0 = await sessionOf(s, 'late@example.com');
      const p1 = (await refresh(s, p0.refresh_token)).body as Pair;
      const p2 = (await refresh(s, p1.refresh_token)).body as Pair;
      const late = await refresh(s, p0.refresh_token);
      expect(late.status).toBe(200);
      expect(late.body.refresh_token).toBe(p2.refresh_token);
      expect(late.body.access_token).toBe(p2.access_token);
      expect((await me(s, p2.access_token)).status).toBe(200);
      expect((await me(s, p1.access_token)).status).toBe(401);
    });

    it('a token of another session, or a made-up one, is still 401 and revokes nothing', async () => {
      const a = await sessionOf(s, 'other-a@example.com');
      const r = await refresh(s, `lcr_${'b'.repeat(32)}`);
      expect(r.status).toBe(401);
      expect(r.body.error).toEqual({ code: 'unauthorized', message: 'invalid refresh token' });
      expect((await me(s, a.access_token)).status).toBe(200);
    });
  });

  describe('past the interval (set to 1 s)', () => {
    let s: TestServer;
    beforeAll(async () => {
      s = await startTestServer({ authRefreshReuseIntervalS: 1 });
    });
    afterAll(() => s.close());

    it('reuse after the interval revokes the whole session, the rotated pair included', async () => {
      const first = await sessionOf(s, 'reuse@example.com');
      const rotated = await refresh(s, first.refresh_token);
      expect(rotated.status).toBe(200);
      await new Promise((r) => setTimeout(r, 1_300));
      const reuse = await refresh(s, first.refresh_token);
      expect(reuse.status).toBe(401);
      expect(reuse.body.error).toEqual({ code: 'unauthorized', message: 'refresh token already used; the session has been revoked' });
      expect((await me(s, rotated.body.access_token)).status).toBe(401);
      const after = await refresh(s, rotated.body.refresh_token);
      expect(after.status).toBe(401);
      expect(after.body.error.message).toBe('invalid refresh token');
    });
  });
});
