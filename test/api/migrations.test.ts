import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type CreatedProject, type TestServer } from '../helpers/server.js';

// Migrations as Supabase users write them (issue 17 item 5, "Done when"): each file of
// test/fixtures/migrations/ is applied unchanged, as one script, through POST /db/query with the
// service key, in a project of its own; then two users who signed up through /auth use it through
// the rows API, GraphQL and /db/query (a user's SQL is read-only: writes go through the rows API
// and GraphQL), and each sees what Postgres with these policies would show them.
//
// Not here yet, waiting for a feature (each answers 400 unsupported_sql today):
//   02_user_profiles.sql   CREATE FUNCTION … LANGUAGE plpgsql + CREATE TRIGGER on auth.users
//                          (handle_new_user) and `create table profiles` adopting the built-in one
//   03_organizations.sql   policies with exists (…) / in (select …); also `check (slug ~ '…')`:
//                          a regular expression in a CHECK is refused ("operator ~", DDL only
//                          takes SQLite's own functions)
//   04_blog.sql            CREATE TYPE … AS ENUM, COMMENT ON, CREATE VIEW, GRANT
//   05_chat.sql            CREATE INDEX … USING gin, policies with exists / in (select …), and a
//                          bare boolean column in a policy (`not is_private`)
//   07_expenses.sql        `default auth.uid()` in CREATE TABLE (refused on purpose today)
//   09_notes.sql           PL/pgSQL trigger function + CREATE TRIGGER (set_updated_at)
//   10_feature_votes.sql   CREATE [OR REPLACE] VIEW, GRANT/REVOKE, COMMENT ON VIEW
//   11_team_tasks.sql      CREATE FUNCTION … LANGUAGE sql security definer, called in policies

let s: TestServer;
const JSON_H = { 'content-type': 'application/json' };
const PASSWORD = 'correct horse battery staple 1';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

interface User {
  id: string;
  token: string;
}
interface Res {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  text: string;
}

/** One migrated project and what its callers do with it. */
class App {
  alice!: User;
  bob!: User;
  constructor(readonly p: CreatedProject) {}

  async call(method: string, path: string, body: unknown, who: User | 'service' | 'anon'): Promise<Res> {
    const headers: Record<string, string> = body === undefined ? {} : { ...JSON_H };
    if (typeof who === 'object') headers.authorization = `Bearer ${who.token}`;
    const key = who === 'service' ? this.p.service : this.p.publishable;
    const res = await s.req(path, { method, key, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null, text };
  }

  async signUp(email: string, extra: Record<string, unknown> = {}): Promise<User> {
    const r = await this.call('POST', '/auth/register', { email, password: PASSWORD, ...extra }, 'anon');
    expect(r.status, r.text).toBe(200);
    return { id: r.body.user.id, token: r.body.access_token };
  }

  /** Rows API: POST a row, expecting `status`; answers the body. */
  insert(t: string, data: Record<string, unknown>, who: User | 'service' | 'anon'): Promise<Res> {
    return this.call('POST', `/db/tables/${t}/rows`, { data }, who);
  }
  async list(t: string, who: User | 'service' | 'anon', query = ''): Promise<Array<{ id: unknown; data: Record<string, unknown> }>> {
    const r = await this.call('GET', `/db/tables/${t}/rows${query}`, undefined, who);
    expect(r.status, r.text).toBe(200);
    return r.body.rows;
  }
  async sql(sql: string, who: User | 'service' | 'anon', params: unknown[] = []): Promise<Record<string, unknown>[]> {
    const r = await this.call('POST', '/db/query', { sql, params }, who);
    expect(r.status, `${sql}: ${r.text}`).toBe(200);
    return r.body.rows;
  }
  gql(query: string, who: User | 'service' | 'anon', variables: Record<string, unknown> = {}): Promise<Res> {
    return this.call('POST', '/db/graphql', { query, variables }, who);
  }
}

/** A fresh project with `file` applied unchanged as one script, and alice and bob signed up. */
async function migrate(file: string): Promise<App> {
  const app = new App(s.createProject(file.replace(/\W/g, '_')));
  const sql = readFileSync(new URL(`../fixtures/migrations/${file}`, import.meta.url), 'utf8');
  const r = await app.call('POST', '/db/query', { sql }, 'service');
  expect(r.status, r.text).toBe(200);
  app.alice = await app.signUp('alice@example.com');
  app.bob = await app.signUp('bob@example.com');
  return app;
}

/** The error of a failed rows-API or SQL call. */
function failed(r: Res, status: number, code: string): { message: string; details?: Record<string, unknown> } {
  expect(r.status, r.text).toBe(status);
  expect(r.body.error.code).toBe(code);
  return r.body.error;
}

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.close());

describe('01_todos.sql: Supabase quickstart todo list', () => {
  let app: App;
  beforeAll(async () => {
    app = await migrate('01_todos.sql');
  });

  it('each user writes their own todos through the rows API and GraphQL; a todo for someone else is refused', async () => {
    const { alice, bob } = app;
    const a1 = await app.insert('todos', { user_id: alice.id, task: 'buy milk' }, alice);
    expect(a1.status, a1.text).toBe(201);
    expect(a1.body).toEqual({ id: 1, data: { user_id: alice.id, task: 'buy milk', is_complete: false, inserted_at: expect.stringMatching(ISO) } });
    expect((await app.insert('todos', { user_id: alice.id, task: 'call mum' }, alice)).status).toBe(201);
    failed(await app.insert('todos', { user_id: bob.id, task: 'forged for bob' }, alice), 403, 'rls_denied');
    // check (char_length(task) > 3)
    const short = failed(await app.insert('todos', { user_id: alice.id, task: 'abc' }, alice), 400, 'invalid_field');
    expect(short.message).toBe('new row for relation "todos" violates check constraint "todos_task_check"');
    const g = await app.gql('mutation($u: UUID!) { insert_todos(object: {user_id: $u, task: "walk the dog"}) { id task is_complete } }', bob, { u: bob.id });
    expect(g.body).toEqual({ data: { insert_todos: { id: '3', task: 'walk the dog', is_complete: false } } });
    // anonymous callers have no policy for insert
    failed(await app.insert('todos', { user_id: alice.id, task: 'anon todo' }, 'anon'), 403, 'rls_denied');
  });

  it('each user reads only their own todos, through every door', async () => {
    const { alice, bob } = app;
    expect((await app.list('todos', alice, '?order=id')).map((r) => r.data.task)).toEqual(['buy milk', 'call mum']);
    expect((await app.list('todos', bob)).map((r) => r.data.task)).toEqual(['walk the dog']);
    expect(await app.list('todos', 'anon')).toEqual([]);
    expect((await app.call('GET', '/db/tables/todos/rows/3', undefined, alice)).status).toBe(404);
    expect((await app.gql('{ todos(order: "id.asc") { id task } }', alice)).body).toEqual({ data: { todos: [{ id: '1', task: 'buy milk' }, { id: '2', task: 'call mum' }] } });
    expect((await app.gql('{ todos_by_id(id: "1") { task } }', bob)).body).toEqual({ data: { todos_by_id: null } });
    expect(await app.sql('select id, task, is_complete from todos order by id', alice)).toEqual([
      { id: 1, task: 'buy milk', is_complete: false },
      { id: 2, task: 'call mum', is_complete: false },
    ]);
    expect(await app.sql('select count(*) as n, bool_or(user_id = auth.uid()) as mine from public.todos', bob)).toEqual([{ n: 1, mine: true }]);
    expect(await app.sql('select count(*) as n from todos', 'anon')).toEqual([{ n: 0 }]);
    expect(await app.sql('select count(*) as n from todos', 'service')).toEqual([{ n: 3 }]);
  });

  it('updates and deletes reach only the caller\'s own todos', async () => {
    const { alice, bob } = app;
    expect((await app.call('PATCH', '/db/tables/todos/rows/1', { data: { is_complete: true } }, bob)).status).toBe(404);
    const done = await app.call('PATCH', '/db/tables/todos/rows/1', { data: { is_complete: true } }, alice);
    expect(done.status, done.text).toBe(200);
    expect(done.body.data.is_complete).toBe(true);
    const g = await app.gql('mutation { update_todos(id: "3", set: {is_complete: true}) { task is_complete } }', alice);
    expect(g.body.data).toEqual({ update_todos: null });
    expect(g.body.errors[0].extensions.code).toBe('not_found');
    expect((await app.call('DELETE', '/db/tables/todos/rows/2', undefined, bob)).status).toBe(404);
    expect((await app.gql('mutation { delete_todos(id: "2") }', alice)).body).toEqual({ data: { delete_todos: true } });
    expect(await app.sql('select task, is_complete from todos order by id', 'service')).toEqual([
      { task: 'buy milk', is_complete: true },
      { task: 'walk the dog', is_complete: false },
    ]);
  });
});
