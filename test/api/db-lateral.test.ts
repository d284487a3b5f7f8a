import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

// LATERAL and set-returning functions in the select list through POST /db/query as a user
// (docs/sql.md "LATERAL and set-returning functions in the select list"): the lateral
// subquery's tables are read under the caller's RLS like any other subquery's.

let s: TestServer;
const JSON_H = { 'content-type': 'application/json' };

interface Caller {
  key?: string | null;
  token?: string;
}
async function sql(text: string, who: Caller) {
  const headers: Record<string, string> = { ...JSON_H };
  if (who.token) headers.authorization = `Bearer ${who.token}`;
  const res = await s.req('/db/query', { method: 'POST', key: who.key ?? s.keys.publishable, headers, body: JSON.stringify({ sql: text }) });
  const body = await res.text();
  return { status: res.status, body: JSON.parse(body), text: body };
}
const svc = (): Caller => ({ key: s.keys.service });
async function rows(text: string, who: Caller) {
  const r = await sql(text, who);
  expect(r.status, `${text}: ${r.text}`).toBe(200);
  return r.body.rows as Record<string, unknown>[];
}

interface User {
  id: string;
  token: string;
}
async function register(email: string): Promise<User> {
  const res = await s.req('/auth/register', { method: 'POST', key: s.keys.publishable, headers: JSON_H, body: JSON.stringify({ email, password: 'correct horse battery staple 1' }) });
  const body = (await res.json()) as { user: { id: string }; access_token: string };
  expect(res.status).toBe(200);
  return { id: body.user.id, token: body.access_token };
}

let alice: User;
let bob: User;

beforeAll(async () => {
  s = await startTestServer();
  alice = await register('alice@example.com');
  bob = await register('bob@example.com');
  const made = await sql(
    `create table boards (id int primary key, name text not null);
    alter table boards enable row level security;
    create policy "boards are public" on boards for select using (true);
    create table cards (
      id int primary key,
      board_id int not null references boards (id),
      owner uuid not null references auth.users on delete cascade,
      title text not null,
      stars int not null default 0,
      labels text[] not null default '{}'
    );
    alter table cards enable row level security;
    create policy "own cards" on cards for all to authenticated using (owner = auth.uid());
    insert into boards (id, name) values (1, 'one'), (2, 'two'), (3, 'three');
    insert into cards (id, board_id, owner, title, stars, labels) values
      (1, 1, '${alice.id}', 'alice low', 1, '{a,b}'),
      (2, 1, '${bob.id}', 'bob high', 9, '{secret}'),
      (3, 2, '${bob.id}', 'bob only', 5, '{hidden}'),
      (4, 3, '${alice.id}', 'alice top', 7, '{}');`,
    svc(),
  );
  expect(made.status, made.text).toBe(200);
});
afterAll(() => s.close());

describe('LATERAL under RLS', () => {
  const best = `select b.name, c.title, c.stars from boards b left join lateral (select title, stars from cards where cards.board_id = b.id order by stars desc limit 1) c on true order by b.id`;

  it('the service role sees every card', async () => {
    expect(await rows(best, svc())).toEqual([
      { name: 'one', title: 'bob high', stars: 9 },
      { name: 'two', title: 'bob only', stars: 5 },
      { name: 'three', title: 'alice top', stars: 7 },
    ]);
  });

  it("a user's lateral subquery reads only the rows the policy shows them (LEFT JOIN pads the rest)", async () => {
    expect(await rows(best, { token: alice.token })).toEqual([
      { name: 'one', title: 'alice low', stars: 1 },
      { name: 'two', title: null, stars: null },
      { name: 'three', title: 'alice top', stars: 7 },
    ]);
    const counts = await rows(`select b.name, l.n from boards b cross join lateral (select count(*) as n, max(stars) as top from cards c where c.board_id = b.id) l order by b.id`, { token: bob.token });
    expect(counts).toEqual([
      { name: 'one', n: 1 },
      { name: 'two', n: 1 },
      { name: 'three', n: 0 },
    ]);
  });

  it('an anonymous caller sees no cards through LATERAL; an inner join drops every board', async () => {
    expect(await rows(`select b.name, c.title from boards b join lateral (select title from cards where cards.board_id = b.id limit 1) c on true`, {})).toEqual([]);
  });

  it("a set-returning function in the select list unnests only the caller's rows", async () => {
    expect(await rows(`select id, unnest(labels) as label from cards order by id, label`, { token: alice.token })).toEqual([
      { id: 1, label: 'a' },
      { id: 1, label: 'b' },
    ]);
    const r = await sql(`select id from cards where unnest(labels) = 'secret'`, { token: alice.token });
    expect(r.status).toBe(400);
    expect(r.body.error.details.sqlstate).toBe('0A000');
  });
});
