import { ClientError, GraphQLClient } from 'graphql-request';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Reverse relations as a GraphQL user meets them: a parent lists its children
// (`projects { tasks { title } }`), batched per level, under RLS as the caller.
let s: TestServer;
const JSON_HEADERS = { 'content-type': 'application/json' };
const traced: string[] = [];

interface User {
  id: string;
  token: string;
}
let alice: User;
let bob: User;

/** A graphql-request client as the service role, or as a user (publishable key + bearer token). */
const client = (who?: User): GraphQLClient =>
  new GraphQLClient(`${s.url}/db/graphql`, {
    headers: who ? { 'x-service-key': s.keys.publishable, authorization: `Bearer ${who.token}` } : { 'x-service-key': s.keys.service },
  });

async function rest(method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await s.req(path, { method, key: s.keys.service, headers: JSON_HEADERS, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  expect(res.status, text).toBeLessThan(300);
  return text ? JSON.parse(text) : null;
}

async function register(email: string): Promise<User> {
  const res = await s.req('/auth/register', { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ email, password: 'correct horse battery staple 1' }) });
  const body = (await res.json()) as { user: { id: string }; access_token: string };
  expect(res.status).toBe(200);
  return { id: body.user.id, token: body.access_token };
}

const OWN = 'owner = auth.uid()';
beforeAll(async () => {
  s = await startTestServer({ sqlTrace: (sql) => traced.push(sql) });
  alice = await register('alice@example.com');
  bob = await register('bob@example.com');
  await rest('POST', '/db/tables', { name: 'projects', type: 'relational', columns: [{ name: 'name', type: 'text', nullable: false }, { name: 'owner', type: 'uuid' }] });
  await rest('POST', '/db/tables', {
    name: 'tasks',
    type: 'relational',
    columns: [
      { name: 'title', type: 'text', nullable: false },
      { name: 'priority', type: 'int8', nullable: false, default: 0 },
      { name: 'owner', type: 'uuid' },
      { name: 'project_id', type: 'uuid', references: { table: 'projects', column: 'id', on_delete: 'cascade' } },
    ],
  });
  // Two foreign keys to the same parent: the reverse fields are named after their columns.
  await rest('POST', '/db/tables', {
    name: 'links',
    type: 'relational',
    columns: [
      { name: 'label', type: 'text' },
      { name: 'from_id', type: 'uuid', references: { table: 'projects', column: 'id', on_delete: 'cascade' } },
      { name: 'to_id', type: 'uuid', references: { table: 'projects', column: 'id', on_delete: 'cascade' } },
    ],
  });
  for (const t of ['projects', 'tasks']) {
    await rest('PUT', `/db/tables/${t}/rls`, { enabled: true, policies: { select: OWN, insert: OWN, update: OWN, delete: OWN } });
  }
});
afterAll(() => s.close());

const INSERT_PROJECT = `mutation($p: projects_insert_input!) { insert_projects(object: $p) { id } }`;
const INSERT_TASK = `mutation($t: tasks_insert_input!) { insert_tasks(object: $t) { id } }`;

describe('reverse relations (a parent lists its children)', () => {
  let apollo = '';
  let gemini = '';
  it('lists each parent its children, as each user sees them under RLS', async () => {
    const a = client(alice);
    const b = client(bob);
    apollo = (await a.request<{ insert_projects: { id: string } }>(INSERT_PROJECT, { p: { name: 'Apollo', owner: alice.id } })).insert_projects.id;
    gemini = (await b.request<{ insert_projects: { id: string } }>(INSERT_PROJECT, { p: { name: 'Gemini', owner: bob.id } })).insert_projects.id;
    for (const [title, priority] of [['a1', 1], ['a2', 3], ['a3', 2]] as const) {
      await a.request(INSERT_TASK, { t: { title, priority, owner: alice.id, project_id: apollo } });
    }
    await b.request(INSERT_TASK, { t: { title: 'b1', owner: bob.id, project_id: gemini } });
    // Bob's task in Alice's project: Alice's list of her project's tasks does not show it.
    await b.request(INSERT_TASK, { t: { title: 'b-in-apollo', owner: bob.id, project_id: apollo } });

    const q = `{ projects(order: "name.asc") { name tasks(order: "title.asc") { title } } }`;
    expect(await a.request(q)).toEqual({ projects: [{ name: 'Apollo', tasks: [{ title: 'a1' }, { title: 'a2' }, { title: 'a3' }] }] });
    expect(await b.request(q)).toEqual({ projects: [{ name: 'Gemini', tasks: [{ title: 'b1' }] }] });
    expect(await client().request(q)).toEqual({
      projects: [
        { name: 'Apollo', tasks: [{ title: 'a1' }, { title: 'a2' }, { title: 'a3' }, { title: 'b-in-apollo' }] },
        { name: 'Gemini', tasks: [{ title: 'b1' }] },
      ],
    });
    // Bob reaches his own task, but the project it points at is Alice's: he cannot see it.
    expect(await b.request(`{ tasks(where: {title: {eq: "b-in-apollo"}}) { title project { name } } }`)).toEqual({ tasks: [{ title: 'b-in-apollo', project: null }] });
  });

  it('takes where, order, limit and offset per parent', async () => {
    const svc = client();
    const q = `{ projects(order: "name.asc") { name tasks(order: "priority.desc", limit: 2) { title } } }`;
    expect(await svc.request(q)).toEqual({
      projects: [
        { name: 'Apollo', tasks: [{ title: 'a2' }, { title: 'a3' }] },
        { name: 'Gemini', tasks: [{ title: 'b1' }] },
      ],
    });
    const paged = `{ projects(order: "name.asc") { name tasks(order: "priority.desc", limit: 2, offset: 1) { title } } }`;
    expect(await svc.request(paged)).toEqual({
      projects: [
        { name: 'Apollo', tasks: [{ title: 'a3' }, { title: 'a1' }] },
        { name: 'Gemini', tasks: [] },
      ],
    });
    const filtered = `{ projects(order: "name.asc") { name tasks(where: {priority: {gte: 2}}, order: "title.asc") { title priority } } }`;
    expect(await svc.request(filtered)).toEqual({
      projects: [
        { name: 'Apollo', tasks: [{ title: 'a2', priority: 3 }, { title: 'a3', priority: 2 }] },
        { name: 'Gemini', tasks: [] },
      ],
    });
    // Aliases with different arguments are different lists.
    const both = `{ projects(where: {name: {eq: "Apollo"}}) { top: tasks(order: "priority.desc", limit: 1) { title } low: tasks(order: "priority.asc", limit: 1) { title } } }`;
    expect(await svc.request(both)).toEqual({ projects: [{ top: [{ title: 'a2' }], low: [{ title: 'b-in-apollo' }] }] });
  });

  it('names the fields of two foreign keys to the same parent after their columns', async () => {
    const svc = client();
    await svc.request(`mutation($l: links_insert_input!) { insert_links(object: $l) { id } }`, { l: { label: 'apollo→gemini', from_id: apollo, to_id: gemini } });
    const r = await svc.request(`{ projects(order: "name.asc") { name links_by_from_id { label } links_by_to_id { label } } }`);
    expect(r).toEqual({
      projects: [
        { name: 'Apollo', links_by_from_id: [{ label: 'apollo→gemini' }], links_by_to_id: [] },
        { name: 'Gemini', links_by_from_id: [], links_by_to_id: [{ label: 'apollo→gemini' }] },
      ],
    });
    const type = await svc.request<{ __type: { fields: { name: string }[] } }>(`{ __type(name: "projects") { fields { name } } }`);
    const names = type.__type.fields.map((f) => f.name);
    expect(names).toEqual(expect.arrayContaining(['tasks', 'links_by_from_id', 'links_by_to_id']));
    expect(names).not.toContain('links');
  });

  it('reads each level in one statement, whatever the number of parents', async () => {
    const svc = client();
    for (let i = 0; i < 30; i++) {
      const p = (await svc.request<{ insert_projects: { id: string } }>(INSERT_PROJECT, { p: { name: `P${String(i).padStart(2, '0')}` } })).insert_projects.id;
      for (let j = 0; j < 3; j++) await svc.request(INSERT_TASK, { t: { title: `P${i}.${j}`, priority: j, project_id: p } });
    }
    const q = `{ projects(where: {name: {like: "P%"}}, limit: 30) { name tasks(limit: 2) { title project { name tasks(limit: 1) { title } } } } }`;
    await svc.request(q); // warm the schema and catalog caches
    traced.length = 0;
    const r = await svc.request<{ projects: { tasks: { project: { tasks: unknown[] } }[] }[] }>(q);
    expect(r.projects.length).toBe(30);
    expect(r.projects.every((p) => p.tasks.length === 2 && p.tasks.every((t) => t.project.tasks.length === 1))).toBe(true);
    // One statement per level: projects, their tasks, the tasks' projects, those projects' tasks.
    const touching = traced.filter((sql) => /"(projects|tasks)"/.test(sql) && !/_svc_meta/.test(sql));
    expect(touching.length).toBe(4);
  });

  it('answers a bad argument of a nested list as that field\'s error', async () => {
    try {
      await client().request(`{ projects(limit: 1) { name tasks(order: "nope.asc") { title } } }`);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ClientError);
      const e = err as ClientError;
      expect(e.response.status).toBe(200);
      expect(e.response.errors?.[0]?.extensions?.code).toBe('invalid_request');
      expect(e.response.errors?.[0]?.message).toMatch(/nope/);
    }
  });
});
