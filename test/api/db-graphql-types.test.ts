import { ClientError, GraphQLClient } from 'graphql-request';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Typed inputs and scalars as a GraphQL user meets them: `<t>_insert_input`/`<t>_set_input`
// with each column's type, `UUID`, `DateTime`, `BigInt`, `JSON`; bad values are a 400 before
// anything runs; the JSON `data` argument still works.
let s: TestServer;
const JSON_HEADERS = { 'content-type': 'application/json' };

interface User {
  id: string;
  token: string;
}
let alice: User;
let bob: User;

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

/** The request's failure as graphql-request reports it: HTTP status, first message and code. */
async function failure(p: Promise<unknown>): Promise<{ status: number; message: string; code: unknown }> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(ClientError);
    const r = (err as ClientError).response;
    return { status: r.status, message: r.errors?.[0]?.message ?? '', code: r.errors?.[0]?.extensions?.code };
  }
  throw new Error('the request succeeded');
}

const count = async (): Promise<number> => ((await rest('GET', '/db/tables/events/rows?count=exact&limit=0')) as { total: number }).total;

beforeAll(async () => {
  s = await startTestServer();
  alice = await register('alice@example.com');
  bob = await register('bob@example.com');
  await rest('POST', '/db/tables', {
    name: 'events',
    type: 'relational',
    columns: [
      { name: 'title', type: 'text', nullable: false },
      { name: 'seats', type: 'int8', nullable: false, default: 10 },
      { name: 'price', type: 'float8' },
      { name: 'public', type: 'bool' },
      { name: 'starts_at', type: 'timestamptz', nullable: false },
      { name: 'meta', type: 'jsonb' },
      { name: 'owner', type: 'uuid' },
    ],
  });
  const own = 'owner = auth.uid()';
  await rest('PUT', '/db/tables/events/rls', { enabled: true, policies: { select: own, insert: own, update: own, delete: own } });
});
afterAll(() => s.close());

const INSERT = `mutation($e: events_insert_input!) { insert_events(object: $e) { id title seats price public starts_at meta owner created_at } }`;

describe('typed inputs', () => {
  it('describes each column with its type; required only when NOT NULL without a default', async () => {
    type Field = { name: string; type: { kind: string; name: string | null; ofType: { name: string } | null } };
    const r = await client().request<{ ins: { inputFields: Field[] }; set: { inputFields: Field[] }; obj: { fields: Field[] } }>(`{
      ins: __type(name: "events_insert_input") { inputFields { name type { kind name ofType { name } } } }
      set: __type(name: "events_set_input") { inputFields { name type { kind name ofType { name } } } }
      obj: __type(name: "events") { fields { name type { kind name ofType { name } } } }
    }`);
    const show = (f: Field): string => (f.type.kind === 'NON_NULL' ? `${f.type.ofType!.name}!` : f.type.name!);
    const of = (fields: Field[]): Record<string, string> => Object.fromEntries(fields.map((f) => [f.name, show(f)]));
    expect(of(r.ins.inputFields)).toEqual({ title: 'String!', seats: 'BigInt', price: 'Float', public: 'Boolean', starts_at: 'DateTime!', meta: 'JSON', owner: 'UUID' });
    expect(of(r.set.inputFields)).toEqual({ title: 'String', seats: 'BigInt', price: 'Float', public: 'Boolean', starts_at: 'DateTime', meta: 'JSON', owner: 'UUID' });
    expect(of(r.obj.fields)).toMatchObject({ id: 'ID!', seats: 'BigInt!', starts_at: 'DateTime!', owner: 'UUID', created_at: 'DateTime!', updated_at: 'DateTime!' });
  });

  it('inserts and updates typed rows as each user, under RLS', async () => {
    const a = client(alice);
    const row = { title: 'Launch', price: 9.5, public: true, starts_at: '2030-01-02T03:04:05+02:00', meta: { tags: ['x'] }, owner: alice.id.toUpperCase() };
    const r = await a.request<{ insert_events: Record<string, unknown> }>(INSERT, { e: row });
    expect(r.insert_events).toMatchObject({ title: 'Launch', seats: 10, price: 9.5, public: true, starts_at: '2030-01-02T01:04:05.000Z', meta: { tags: ['x'] }, owner: alice.id });
    expect(new Date(r.insert_events.created_at as string).toISOString()).toBe(r.insert_events.created_at);
    const id = r.insert_events.id as string;
    const u = await a.request(`mutation($id: ID!, $s: events_set_input!) { update_events(id: $id, set: $s) { seats starts_at } }`, { id, s: { seats: '42', starts_at: '2030-06-01' } });
    expect(u).toEqual({ update_events: { seats: 42, starts_at: '2030-06-01T00:00:00.000Z' } });
    // Bob sees none of it, and may not write a row for Alice.
    expect(await client(bob).request(`{ events { id } }`)).toEqual({ events: [] });
    const forged = await failure(client(bob).request(INSERT, { e: { title: 'x', starts_at: '2030-01-01', owner: alice.id } }));
    expect(forged).toMatchObject({ status: 200, code: 'rls_denied' });
    expect(await count()).toBe(1);
  });

  it('keeps the JSON data argument, and takes exactly one of the two (else 400)', async () => {
    const svc = client();
    const viaJson = await svc.request<{ insert_events: { seats: number } }>(`mutation { insert_events(data: {title: "Json", starts_at: "2030-01-01T00:00:00Z", seats: 3}) { seats } }`);
    expect(viaJson.insert_events.seats).toBe(3);
    const before = await count();
    const both = await failure(svc.request(`mutation { insert_events(object: {title: "x", starts_at: "2030-01-01"}, data: {title: "y"}) { id } }`));
    expect(both).toMatchObject({ status: 400, code: 'invalid_request' });
    expect(both.message).toMatch(/exactly one of object \(typed\) or data \(JSON\)/);
    const neither = await failure(svc.request(`mutation { insert_events { id } }`));
    expect(neither).toMatchObject({ status: 400, code: 'invalid_request' });
    const noSet = await failure(svc.request(`mutation { update_events(id: "x") { id } }`));
    expect(noSet.status).toBe(400);
    expect(noSet.message).toMatch(/exactly one of set/);
    expect(await count()).toBe(before);
  });
});

describe('scalars', () => {
  const bad: Array<[string, Record<string, unknown>, RegExp]> = [
    ['a UUID that is not one', { title: 't', starts_at: '2030-01-01', owner: 'not-a-uuid' }, /UUID cannot represent/],
    ['a date that does not exist', { title: 't', starts_at: '2030-02-30T00:00:00Z' }, /DateTime cannot represent/],
    ['a date in another format', { title: 't', starts_at: '01/02/2030' }, /DateTime cannot represent/],
    ['an int8 past 2^53', { title: 't', starts_at: '2030-01-01', seats: '9007199254740993' }, /BigInt cannot represent/],
    ['an int8 with a fraction', { title: 't', starts_at: '2030-01-01', seats: 1.5 }, /BigInt cannot represent/],
    ['a missing required column', { starts_at: '2030-01-01' }, /title/],
    ['an unknown column', { title: 't', starts_at: '2030-01-01', nope: 1 }, /nope/],
  ];
  for (const [what, e, message] of bad) {
    it(`refuses ${what} in variables with 400, writing nothing`, async () => {
      const before = await count();
      const f = await failure(client().request(INSERT, { e }));
      expect(f.status).toBe(400);
      expect(f.code).toBe('invalid_request');
      expect(f.message).toMatch(message);
      expect(await count()).toBe(before);
    });
  }

  it('refuses a bad literal at validation (400), writing nothing', async () => {
    const lit = await failure(client().request(`mutation { insert_events(object: {title: "t", starts_at: "yesterday"}) { id } }`));
    expect(lit).toMatchObject({ status: 400, code: 'invalid_request' });
    expect(lit.message).toMatch(/DateTime cannot represent "yesterday"/);
    const before = await count();
    const int = await failure(client().request(`mutation { insert_events(object: {title: "t", starts_at: "2030-01-01", seats: 99999999999999999999}) { id } }`));
    expect(int.status).toBe(400);
    expect(int.message).toMatch(/BigInt cannot represent/);
    expect(await count()).toBe(before);
  });
});

describe('validated documents', () => {
  it('answers a repeated query the same, and sees a table change at once', async () => {
    const svc = client();
    await rest('POST', '/db/tables', { name: 'notes', type: 'relational', columns: [{ name: 'body', type: 'text' }] });
    await svc.request(`mutation { insert_notes(object: {body: "hi"}) { id } }`);
    const q = `{ notes { body } }`;
    for (let i = 0; i < 3; i++) expect(await svc.request(q)).toEqual({ notes: [{ body: 'hi' }] });
    await rest('DELETE', '/db/tables/notes');
    const gone = await failure(svc.request(q));
    expect(gone).toMatchObject({ status: 400, code: 'invalid_request' });
    expect(gone.message).toMatch(/notes/);
  });

  it('answers an unknown operationName with 400', async () => {
    // note: graphql-request sends the document's own operation name, so this one goes by fetch.
    const res = await s.req('/db/graphql', { method: 'POST', key: s.keys.service, headers: JSON_HEADERS, body: JSON.stringify({ query: 'query A { events { id } }', operationName: 'B' }) });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { errors: { message: string; extensions: { code: string } }[] };
    expect(body.errors[0]).toMatchObject({ message: 'Unknown operation named "B".', extensions: { code: 'invalid_request' } });
  });
});
