import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { App, failed, ISO, migrate as migrateOn } from '../helpers/migrations.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Migrations as Supabase users write them (issue 17 item 5, "Done when"): each file of
// test/fixtures/migrations/ is applied unchanged, as one script, through POST /db/query with the
// service key, in a project of its own; then two users who signed up through /auth use it through
// the rows API, GraphQL and /db/query (a user's SQL is read-only: writes go through the rows API
// and GraphQL), and each sees what Postgres with these policies would show them. All fifteen
// run: 01 to 07 here, 08 to 15 and what they need of policies, views and DDL in migrations-more.test.ts.

let s: TestServer;
const migrate = (file: string, alice: Record<string, unknown> = {}, bob: Record<string, unknown> = {}): Promise<App> => migrateOn(s, file, alice, bob);

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

describe('02_user_profiles.sql: the user-management starter, handle_new_user on sign-up', () => {
  let app: App;
  beforeAll(async () => {
    app = await migrate('02_user_profiles.sql', { user_metadata: { full_name: 'Alice Liddell', avatar_url: 'https://example.com/alice.png' } }, { user_metadata: { full_name: 'Bob Builder' } });
  });

  it('the trigger fills each new profile from the sign-up metadata', async () => {
    const { alice, bob } = app;
    expect(await app.sql('select id, full_name, avatar_url, username from profiles order by full_name', 'service')).toEqual([
      { id: alice.id, full_name: 'Alice Liddell', avatar_url: 'https://example.com/alice.png', username: null },
      { id: bob.id, full_name: 'Bob Builder', avatar_url: null, username: null },
    ]);
  });

  it('profiles are public; each user updates only their own; username rules hold', async () => {
    const { alice, bob } = app;
    expect((await app.list('profiles', 'anon', '?order=full_name&select=full_name')).map((r) => r.data.full_name)).toEqual(['Alice Liddell', 'Bob Builder']);
    expect(await app.sql('select full_name from profiles order by full_name', bob)).toEqual([{ full_name: 'Alice Liddell' }, { full_name: 'Bob Builder' }]);
    const up = await app.call('PATCH', `/db/tables/profiles/rows/${alice.id}`, { data: { username: 'alice', website: 'https://alice.example' } }, alice);
    expect(up.status, up.text).toBe(200);
    failed(await app.call('PATCH', `/db/tables/profiles/rows/${alice.id}`, { data: { username: 'hacked' } }, bob), 403, 'rls_denied');
    expect(failed(await app.call('PATCH', `/db/tables/profiles/rows/${bob.id}`, { data: { username: 'bo' } }, bob), 400, 'invalid_field').message)
      .toBe('new row for relation "profiles" violates check constraint "username_length"');
    expect(failed(await app.call('PATCH', `/db/tables/profiles/rows/${bob.id}`, { data: { username: 'alice' } }, bob), 409, 'conflict').message)
      .toBe('duplicate key value violates unique constraint "profiles_username_key"');
    const g = await app.gql('mutation($id: ID!) { update_profiles(id: $id, set: {username: "bob"}) { username full_name } }', bob, { id: bob.id });
    expect(g.body).toEqual({ data: { update_profiles: { username: 'bob', full_name: 'Bob Builder' } } });
    expect((await app.gql('{ profiles(order: "username.asc") { username website } }', 'anon')).body).toEqual({ data: { profiles: [
      { username: 'alice', website: 'https://alice.example' },
      { username: 'bob', website: null },
    ] } });
  });

  it('deleting a user deletes the profile (on delete cascade)', async () => {
    const carol = await app.signUp('carol@example.com', { user_metadata: { full_name: 'Carol' } });
    expect(await app.sql('select full_name from profiles where id = $1', 'service', [carol.id])).toEqual([{ full_name: 'Carol' }]);
    expect((await app.call('DELETE', `/auth/users/${carol.id}`, undefined, 'service')).status).toBe(204);
    expect(await app.sql('select count(*) as n from profiles where id = $1', 'service', [carol.id])).toEqual([{ n: 0 }]);
  });
});

describe('03_organizations.sql: organisations, memberships and projects through exists', () => {
  let app: App;
  let acme: string;
  let bobco: string;
  beforeAll(async () => {
    app = await migrate('03_organizations.sql');
  });

  it('a user creates an organisation and adds members; the slug rule holds', async () => {
    const { alice, bob } = app;
    const o = await app.insert('organizations', { name: 'Acme', slug: 'acme', created_by: alice.id }, alice);
    expect(o.status, o.text).toBe(201);
    acme = o.body.id;
    // the invitation flow (service role) adds members; users cannot add themselves
    await app.sql(`insert into memberships (org_id, user_id, role) values ($1, $2, 'owner'), ($1, $3, 'member')`, 'service', [acme, alice.id, bob.id]);
    expect(failed(await app.insert('organizations', { name: 'Bad', slug: 'Not A Slug', created_by: alice.id }, alice), 400, 'invalid_field').message)
      .toBe('new row for relation "organizations" violates check constraint "organizations_slug_check"');
    const b = await app.gql('mutation($u: UUID!) { insert_organizations(object: {name: "Bob Co", slug: "bob-co", created_by: $u}) { id slug } }', bob, { u: bob.id });
    expect(b.body.errors, b.text).toBeUndefined();
    bobco = b.body.data.insert_organizations.id;
    failed(await app.insert('memberships', { org_id: bobco, user_id: alice.id, role: 'owner' }, alice), 403, 'rls_denied');
    const dup = await app.call('POST', '/db/query', { sql: 'insert into memberships (org_id, user_id) values ($1, $2)', params: [acme, bob.id] }, 'service');
    expect(failed(dup, 409, 'conflict').message).toBe('duplicate key value violates unique constraint "memberships_org_id_user_id_key"');
  });

  it('members see their organisations and projects, and create projects only there', async () => {
    const { alice, bob } = app;
    expect((await app.list('organizations', alice)).map((o) => o.data.slug)).toEqual(['acme']);
    expect((await app.list('organizations', bob, '?order=slug')).map((o) => o.data.slug)).toEqual(['acme', 'bob-co']);
    expect(await app.list('organizations', 'anon')).toEqual([]);
    expect((await app.insert('projects', { org_id: acme, name: 'Rocket' }, bob)).status).toBe(201);
    failed(await app.insert('projects', { org_id: bobco, name: 'Sneaky' }, alice), 403, 'rls_denied');
    expect((await app.list('projects', alice)).map((p) => p.data.name)).toEqual(['Rocket']);
    expect(await app.sql(`select o.slug, count(p.id) as projects from organizations o left join projects p on p.org_id = o.id group by o.id order by o.slug`, bob)).toEqual([
      { slug: 'acme', projects: 1 },
      { slug: 'bob-co', projects: 0 },
    ]);
    expect((await app.gql('{ organizations { slug projects { name } } }', alice)).body).toEqual({ data: { organizations: [{ slug: 'acme', projects: [{ name: 'Rocket' }] }] } });
    // only an owner renames the organisation
    failed(await app.call('PATCH', `/db/tables/organizations/rows/${acme}`, { data: { name: 'Bobs now' } }, bob), 403, 'rls_denied');
    expect((await app.call('PATCH', `/db/tables/organizations/rows/${acme}`, { data: { name: 'Acme Inc' } }, alice)).status).toBe(200);
    // a member who leaves no longer sees the organisation
    const mine = await app.list('memberships', bob);
    expect(mine.map((m) => m.data.role)).toEqual(['member']);
    expect((await app.call('DELETE', `/db/tables/memberships/rows/${mine[0]!.id}`, undefined, bob)).status).toBe(204);
    expect((await app.list('organizations', bob)).map((o) => o.data.slug)).toEqual(['bob-co']);
    expect(await app.list('projects', bob)).toEqual([]);
  });
});

describe('04_blog.sql: posts with a status enum, comments, a published_posts view', () => {
  let app: App;
  let hello: string;
  let draft: string;
  let bobs: string;
  beforeAll(async () => {
    app = await migrate('04_blog.sql');
  });

  it('authors write posts; the enum takes its labels only', async () => {
    const { alice, bob } = app;
    const h = await app.insert('posts', { author_id: alice.id, title: 'Hello world', slug: 'hello-world', body: 'First!', status: 'published', published_at: '2030-01-01T09:00:00Z' }, alice);
    expect(h.status, h.text).toBe(201);
    expect(h.body.data).toMatchObject({ title: 'Hello world', status: 'published', published_at: '2030-01-01T09:00:00.000Z' });
    hello = h.body.id;
    const d = await app.gql('mutation($a: UUID!) { insert_posts(object: {author_id: $a, title: "Work in progress", slug: "wip"}) { id status body } }', alice, { a: alice.id });
    expect(d.body.errors, d.text).toBeUndefined();
    expect(d.body.data.insert_posts).toMatchObject({ status: 'draft', body: '' });
    draft = d.body.data.insert_posts.id;
    const b = await app.insert('posts', { author_id: bob.id, title: 'Bob writes', slug: 'bob-writes', status: 'published', published_at: '2030-02-01T09:00:00Z' }, bob);
    expect(b.status, b.text).toBe(201);
    bobs = b.body.id;
    const bad = await app.insert('posts', { author_id: alice.id, title: 'Secret', slug: 'secret', status: 'secret' }, alice);
    expect(bad.status, bad.text).toBe(400);
    expect(bad.body.error.message).toBe('invalid input value for enum post_status: "secret"');
    const badSql = await app.call('POST', '/db/query', { sql: `update posts set status = 'deleted' where slug = 'wip'` }, 'service');
    expect(badSql.status).toBe(400);
    expect(badSql.body.error.details.sqlstate).toBe('22P02');
    expect(await app.sql(`select 'archived'::post_status as s`, 'service')).toEqual([{ s: 'archived' }]);
    expect(failed(await app.insert('posts', { author_id: alice.id, title: 'Dup', slug: 'hello-world' }, alice), 409, 'conflict').message)
      .toBe('duplicate key value violates unique constraint "posts_slug_key"');
    failed(await app.insert('posts', { author_id: alice.id, title: 'Forged', slug: 'forged' }, bob), 403, 'rls_denied');
  });

  it('drafts are visible to their author only; only the author edits', async () => {
    const { alice, bob } = app;
    expect((await app.list('posts', alice, '?order=slug')).map((r) => r.data.slug)).toEqual(['bob-writes', 'hello-world', 'wip']);
    expect((await app.list('posts', bob, '?order=slug')).map((r) => r.data.slug)).toEqual(['bob-writes', 'hello-world']);
    expect((await app.list('posts', 'anon', '?order=slug')).map((r) => r.data.slug)).toEqual(['bob-writes', 'hello-world']);
    expect((await app.call('GET', `/db/tables/posts/rows/${draft}`, undefined, bob)).status).toBe(404);
    failed(await app.call('PATCH', `/db/tables/posts/rows/${hello}`, { data: { title: 'Hijacked' } }, bob), 403, 'rls_denied');
    expect(await app.sql(`select slug, status from posts where status <> 'archived' order by slug`, bob)).toEqual([
      { slug: 'bob-writes', status: 'published' },
      { slug: 'hello-world', status: 'published' },
    ]);
  });

  it('comments and the published_posts view, read as each caller', async () => {
    const { alice, bob } = app;
    const c = await app.gql('mutation($p: UUID!, $a: UUID!) { insert_comments(object: {post_id: $p, author_id: $a, body: "Nice post"}) { id body } }', bob, { p: hello, a: bob.id });
    expect(c.body).toEqual({ data: { insert_comments: { id: '1', body: 'Nice post' } } });
    expect((await app.insert('comments', { post_id: hello, author_id: alice.id, body: 'Thanks!' }, alice)).status).toBe(201);
    failed(await app.insert('comments', { post_id: hello, author_id: alice.id, body: 'anon' }, 'anon'), 403, 'rls_denied');
    expect(failed(await app.insert('comments', { post_id: hello, author_id: alice.id, body: '' }, alice), 400, 'invalid_field').message)
      .toBe('new row for relation "comments" violates check constraint "comments_body_check"');
    const view = 'select title, slug, comment_count from published_posts order by published_at desc';
    expect(await app.sql(view, 'anon')).toEqual([
      { title: 'Bob writes', slug: 'bob-writes', comment_count: 0 },
      { title: 'Hello world', slug: 'hello-world', comment_count: 2 },
    ]);
    expect((await app.gql('{ published_posts(order: "slug.asc") { slug comment_count } }', bob)).body).toEqual({ data: { published_posts: [
      { slug: 'bob-writes', comment_count: 0 },
      { slug: 'hello-world', comment_count: 2 },
    ] } });
    // publishing the draft puts it in the view, for everyone
    expect((await app.call('PATCH', `/db/tables/posts/rows/${draft}`, { data: { status: 'published', published_at: '2030-03-01T00:00:00Z' } }, alice)).status).toBe(200);
    expect((await app.list('published_posts', bob, '?order=published_at.desc')).map((r) => r.data.slug)).toEqual(['wip', 'bob-writes', 'hello-world']);
    expect(await app.sql(`select count(*) as n from published_posts where author_id = $1`, 'anon', [alice.id])).toEqual([{ n: 2 }]);
    expect(bobs).toBeTruthy();
  });

  it('the comments are kept and shown as descriptions', async () => {
    const t = await app.gql('{ __type(name: "posts") { description fields { name description } } }', app.alice);
    expect(t.body.data.__type.description).toBe('Blog posts. Drafts are visible to their author only.');
    expect(t.body.data.__type.fields.find((f: { name: string }) => f.name === 'status').description).toContain('draft, published or archived');
  });
});

describe('05_chat.sql: rooms with tags, members, messages with jsonb metadata', () => {
  let app: App;
  let lobby: string;
  let secret: string;
  beforeAll(async () => {
    app = await migrate('05_chat.sql');
  });

  it('users create rooms and join them; private rooms stay hidden from others', async () => {
    const { alice, bob } = app;
    const l = await app.insert('rooms', { name: 'Lobby', tags: ['general', 'welcome'], created_by: alice.id }, alice);
    expect(l.status, l.text).toBe(201);
    lobby = l.body.id;
    const p = await app.gql('mutation($u: UUID!) { insert_rooms(object: {name: "Secret", is_private: true, created_by: $u}) { id tags } }', alice, { u: alice.id });
    expect(p.body.data.insert_rooms.tags).toEqual([]);
    secret = p.body.data.insert_rooms.id;
    expect((await app.list('rooms', bob)).map((r) => r.data.name)).toEqual(['Lobby']);
    expect((await app.list('rooms', alice, '?order=name')).map((r) => r.data.name)).toEqual(['Lobby', 'Secret']);
    failed(await app.insert('room_members', { room_id: secret, user_id: alice.id }, bob), 403, 'rls_denied');
    for (const [who, room] of [[alice, lobby], [bob, lobby], [alice, secret]] as const) {
      expect((await app.insert('room_members', { room_id: room, user_id: who.id }, who)).status).toBe(201);
    }
  });

  it('members send and read messages; metadata and mentions query as jsonb and arrays', async () => {
    const { alice, bob } = app;
    const m = await app.insert('messages', { room_id: lobby, sender_id: alice.id, content: 'hi @bob', metadata: { client: 'web', reply_to: null }, mentions: [bob.id] }, alice);
    expect(m.status, m.text).toBe(201);
    expect((await app.insert('messages', { room_id: lobby, sender_id: bob.id, content: 'hello!', metadata: { client: 'ios' } }, bob)).status).toBe(201);
    expect((await app.insert('messages', { room_id: secret, sender_id: alice.id, content: 'psst' }, alice)).status).toBe(201);
    failed(await app.insert('messages', { room_id: secret, sender_id: bob.id, content: 'let me in' }, bob), 403, 'rls_denied');
    expect((await app.list('messages', bob, '?order=created_at')).map((r) => r.data.content)).toEqual(['hi @bob', 'hello!']);
    expect(await app.sql(`select content, metadata->>'client' as client from messages where metadata @> '{"client": "web"}' and $1 = any(mentions)`, bob, [bob.id]))
      .toEqual([{ content: 'hi @bob', client: 'web' }]);
    expect(await app.sql(`select r.name, count(m.id) as messages, array_length(r.tags, 1) as tags from rooms r left join messages m on m.room_id = r.id group by r.id order by r.name`, alice)).toEqual([
      { name: 'Lobby', messages: 2, tags: 2 },
      { name: 'Secret', messages: 1, tags: null },
    ]);
    expect((await app.gql('{ rooms { name messages(order: "created_at.asc") { content } } }', bob)).body).toEqual({ data: { rooms: [{ name: 'Lobby', messages: [{ content: 'hi @bob' }, { content: 'hello!' }] }] } });
    const edit = await app.call('PATCH', `/db/tables/messages/rows/${m.body.id}`, { data: { content: 'hi @bob!!' } }, bob);
    expect(edit.status).toBe(403);
  });
});

describe('06_inventory.sql: products and a stock ledger with numeric rules', () => {
  let app: App;
  const ids: Record<string, string> = {};
  beforeAll(async () => {
    app = await migrate('06_inventory.sql');
  });

  it('each owner adds products; checks and the per-owner unique SKU answer as Postgres', async () => {
    const { alice, bob } = app;
    const w = await app.insert('products', { owner_id: alice.id, sku: 'WID-1', name: 'Widget', unit_price: 19.99, quantity: 5 }, alice);
    expect(w.status, w.text).toBe(201);
    expect(w.body.data).toEqual({ owner_id: alice.id, sku: 'WID-1', name: 'Widget', unit_price: 19.99, quantity: 5, reorder_level: 10, weight_kg: null });
    ids.widget = w.body.id;
    const g = await app.gql('mutation($o: UUID!) { insert_products(object: {owner_id: $o, sku: "GAD-1", name: "Gadget", unit_price: 2.5, quantity: 4, weight_kg: 0.25}) { id sku unit_price quantity weight_kg } }', alice, { o: alice.id });
    expect(g.body.errors, g.text).toBeUndefined();
    expect(g.body.data.insert_products).toMatchObject({ sku: 'GAD-1', unit_price: 2.5, quantity: 4, weight_kg: 0.25 });
    ids.gadget = g.body.data.insert_products.id;
    // the same SKU is fine for another owner, not twice for one
    const b = await app.insert('products', { owner_id: bob.id, sku: 'WID-1', name: 'Bob widget', unit_price: 1, quantity: 0 }, bob);
    expect(b.status, b.text).toBe(201);
    ids.bobs = b.body.id;
    const dup = failed(await app.insert('products', { owner_id: alice.id, sku: 'WID-1', name: 'Again', unit_price: 1 }, alice), 409, 'conflict');
    expect(dup.message).toBe('duplicate key value violates unique constraint "products_owner_id_sku_key"');
    expect(dup.details).toMatchObject({ sqlstate: '23505', table: 'products', detail: `Key (owner_id, sku)=(${alice.id}, WID-1) already exists.` });
    expect(failed(await app.insert('products', { owner_id: alice.id, sku: 'NEG', name: 'Negative', unit_price: -1 }, alice), 400, 'invalid_field').message)
      .toBe('new row for relation "products" violates check constraint "products_unit_price_check"');
    expect(failed(await app.call('PATCH', `/db/tables/products/rows/${ids.widget}`, { data: { quantity: -1 } }, alice), 400, 'invalid_field').message)
      .toBe('new row for relation "products" violates check constraint "products_quantity_check"');
    failed(await app.insert('products', { owner_id: alice.id, sku: 'X', name: 'For alice, by bob', unit_price: 1 }, bob), 403, 'rls_denied');
    expect((await app.call('PATCH', `/db/tables/products/rows/${ids.widget}`, { data: { unit_price: 0 } }, bob)).status).toBe(404);
  });

  it('stock movements: checks on delta and reason, the owner only', async () => {
    const { alice, bob } = app;
    expect((await app.insert('stock_movements', { product_id: ids.widget, owner_id: alice.id, delta: -2, reason: 'sale' }, alice)).status).toBe(201);
    const g = await app.gql('mutation($p: UUID!, $o: UUID!) { insert_stock_movements(object: {product_id: $p, owner_id: $o, delta: 10, reason: "purchase", unit_cost: 1.25}) { id delta reason unit_cost } }', alice, { p: ids.gadget, o: alice.id });
    expect(g.body).toEqual({ data: { insert_stock_movements: { id: '2', delta: 10, reason: 'purchase', unit_cost: 1.25 } } });
    expect(failed(await app.insert('stock_movements', { product_id: ids.widget, owner_id: alice.id, delta: 0, reason: 'sale' }, alice), 400, 'invalid_field').message)
      .toBe('new row for relation "stock_movements" violates check constraint "stock_movements_delta_check"');
    expect(failed(await app.insert('stock_movements', { product_id: ids.widget, owner_id: alice.id, delta: -1, reason: 'theft' }, alice), 400, 'invalid_field').message)
      .toBe('new row for relation "stock_movements" violates check constraint "stock_movements_reason_check"');
    failed(await app.insert('stock_movements', { product_id: ids.widget, owner_id: alice.id, delta: 1, reason: 'return' }, bob), 403, 'rls_denied');
    expect(await app.list('stock_movements', bob)).toEqual([]);
  });

  it('each owner\'s figures, with Postgres\' numeric and integer rules', async () => {
    const { alice, bob } = app;
    expect(await app.sql(`select sku, quantity, unit_price, unit_price * quantity as stock_value, round(unit_price * 1.2, 2) as gross_price
                          from products order by sku`, alice)).toEqual([
      { sku: 'GAD-1', quantity: 4, unit_price: 2.5, stock_value: 10, gross_price: 3 },
      { sku: 'WID-1', quantity: 5, unit_price: 19.99, stock_value: 99.95, gross_price: 23.99 },
    ]);
    // integer division truncates, % is the remainder, avg of integers is numeric
    expect(await app.sql('select sum(quantity) / count(*) as per_product, sum(quantity) % 2 as odd, avg(quantity) as mean from products', alice))
      .toEqual([{ per_product: 4, odd: 1, mean: 4.5 }]);
    expect(await app.sql(`select p.sku, p.quantity + coalesce(sum(m.delta), 0) as projected, count(m.id) as moves
                          from products p left join stock_movements m on m.product_id = p.id
                          group by p.id order by p.sku`, alice)).toEqual([
      { sku: 'GAD-1', projected: 14, moves: 1 },
      { sku: 'WID-1', projected: 3, moves: 1 },
    ]);
    expect(await app.sql('select sku from products where quantity <= reorder_level order by sku', bob)).toEqual([{ sku: 'WID-1' }]);
    // integer * integer stays integer: past int4 it is Postgres' 22003, never a float
    const over = await app.call('POST', '/db/query', { sql: 'select quantity * 1000000000 as big from products' }, alice);
    expect(failed(over, 400, 'invalid_request').message).toBe('integer out of range');
    expect(over.body.error.details.sqlstate).toBe('22003');
    expect(await app.sql('select quantity::bigint * 1000000000 as big from products order by sku', alice)).toEqual([{ big: 4000000000 }, { big: 5000000000 }]);
  });

  it('GraphQL lists each owner\'s products with their movements', async () => {
    const { alice, bob } = app;
    expect((await app.gql('{ products(order: "sku.asc") { sku stock_movements { delta reason } } }', alice)).body).toEqual({ data: { products: [
      { sku: 'GAD-1', stock_movements: [{ delta: 10, reason: 'purchase' }] },
      { sku: 'WID-1', stock_movements: [{ delta: -2, reason: 'sale' }] },
    ] } });
    expect((await app.gql('{ products { sku name stock_movements { delta } } }', bob)).body).toEqual({ data: { products: [{ sku: 'WID-1', name: 'Bob widget', stock_movements: [] }] } });
  });
});

describe('07_expenses.sql: accounts and transactions whose owner defaults to the caller (default auth.uid())', () => {
  let app: App;
  const ids: Record<string, string> = {};
  beforeAll(async () => {
    app = await migrate('07_expenses.sql');
  });

  it('each user adds accounts and transactions without naming an owner: the row is the inserter\'s', async () => {
    const { alice, bob } = app;
    const a = await app.insert('accounts', { name: 'Alice current' }, alice);
    expect(a.status, a.text).toBe(201);
    expect(a.body.data).toEqual({ user_id: alice.id, name: 'Alice current', currency: 'EUR', opening_balance: 0 });
    ids.alice = a.body.id;
    const g = await app.gql('mutation { insert_accounts(object: {name: "Bob savings", currency: "USD", opening_balance: 100.5}) { id user_id name currency opening_balance } }', bob);
    expect(g.body.errors, g.text).toBeUndefined();
    expect(g.body.data.insert_accounts).toMatchObject({ user_id: bob.id, name: 'Bob savings', currency: 'USD', opening_balance: 100.5 });
    ids.bob = g.body.data.insert_accounts.id;
    const t = await app.insert('transactions', { account_id: ids.alice, amount: -42.5, category: 'groceries' }, alice);
    expect(t.status, t.text).toBe(201);
    expect(t.body.data).toMatchObject({ user_id: alice.id, account_id: ids.alice, amount: -42.5, category: 'groceries', occurred_on: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/) });
    const gt = await app.gql('mutation($a: UUID!) { insert_transactions(object: {account_id: $a, amount: 2000, category: "salary"}) { user_id amount category } }', bob, { a: ids.bob });
    expect(gt.body).toEqual({ data: { insert_transactions: { user_id: bob.id, amount: 2000, category: 'salary' } } });
    // an owner named explicitly is the policy's to judge: bob cannot file a row as alice's
    failed(await app.insert('accounts', { user_id: alice.id, name: 'forged by bob' }, bob), 403, 'rls_denied');
    failed(await app.insert('transactions', { user_id: alice.id, account_id: ids.alice, amount: 1 }, bob), 403, 'rls_denied');
    expect((await app.insert('accounts', { user_id: bob.id, name: 'Bob cash' }, bob)).body.data.user_id).toBe(bob.id);
    // anon has no user: the default is NULL, refused by the policy (to authenticated) before NOT NULL
    failed(await app.insert('accounts', { name: 'anon account' }, 'anon'), 403, 'rls_denied');
    // a user's SQL is read-only: writes go through the rows API and GraphQL
    failed(await app.call('POST', '/db/query', { sql: "insert into accounts (name) values ('by sql')" }, alice), 401, 'missing_scope');
  });

  it('each user reads only their own, through every door', async () => {
    const { alice, bob } = app;
    expect((await app.list('accounts', alice)).map((r) => r.data.name)).toEqual(['Alice current']);
    expect((await app.list('accounts', bob, '?order=name')).map((r) => r.data.name)).toEqual(['Bob cash', 'Bob savings']);
    expect(await app.list('transactions', 'anon')).toEqual([]);
    expect((await app.gql('{ transactions { amount category account { name } } }', alice)).body).toEqual({ data: { transactions: [{ amount: -42.5, category: 'groceries', account: { name: 'Alice current' } }] } });
    expect(await app.sql(`select a.name, sum(t.amount) as total, bool_and(t.user_id = auth.uid()) as mine
                          from accounts a join transactions t on t.account_id = a.id group by a.name`, bob)).toEqual([{ name: 'Bob savings', total: 2000, mine: true }]);
    expect(await app.sql('select u.email, count(*) as n from accounts a join auth.users u on u.id = a.user_id group by u.email order by u.email', 'service'))
      .toEqual([{ email: 'alice@example.com', n: 1 }, { email: 'bob@example.com', n: 2 }]);
    expect(await app.sql("select column_default from information_schema.columns where table_name = 'accounts' and column_name = 'user_id'", 'service'))
      .toEqual([{ column_default: 'auth.uid()' }]);
  });
});
