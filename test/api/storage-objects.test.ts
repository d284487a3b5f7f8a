import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorOf, startTestServer, type TestServer } from '../helpers/server.js';

// Storage buckets and objects (docs/api.md "Storage"): create/list/delete buckets, PUT/GET/list/delete
// objects, short ids (in the bucket path and at the root), and who may read and write what.
let s: TestServer;
const JSON_H = { 'content-type': 'application/json' };

async function call(method: string, path: string, body?: unknown, key: string | null = s.keys.service, headers: Record<string, string> = {}) {
  const res = await s.req(path, { method, key, headers: body === undefined ? headers : { ...JSON_H, ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as Record<string, unknown>) : null };
}

async function put(bucket: string, key: string, body: string | Uint8Array, type = 'text/plain', keyHeader: string = s.keys.service, headers: Record<string, string> = {}) {
  const res = await s.req(`/storage/objects/${bucket}/${key}`, { method: 'PUT', key: keyHeader, headers: { 'content-type': type, ...headers }, body });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const sha = (b: string | Uint8Array): string => createHash('sha256').update(b).digest('hex');

async function register(email: string): Promise<string> {
  const r = await call('POST', '/auth/register', { email, password: 'correct horse battery staple 1' }, s.keys.publishable);
  expect(r.status).toBe(200);
  return r.body!.access_token as string;
}

let alice: string;
let bob: string;

beforeAll(async () => {
  s = await startTestServer();
  expect((await call('POST', '/storage/buckets', { name: 'pub', public: true })).status).toBe(201);
  expect((await call('POST', '/storage/buckets', { name: 'priv', public: false })).status).toBe(201);
  alice = await register('alice@example.com');
  bob = await register('bob@example.com');
});
afterAll(() => s.close());

describe('buckets', () => {
  it('creates, lists (pinned shape) and refuses bad names, duplicates and non-service keys', async () => {
    const r = await call('POST', '/storage/buckets', { name: 'media_1', public: false, file_size_limit: 1000, allowed_mime_types: ['image/*', 'text/plain'] });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ name: 'media_1', public: false, file_size_limit: 1000, allowed_mime_types: ['image/*', 'text/plain'], created_at: expect.any(String) as string });
    const list = await call('GET', '/storage/buckets', undefined, s.keys.publishable);
    expect(list.status).toBe(200);
    expect((list.body!.buckets as { name: string }[]).map((b) => b.name)).toEqual(['media_1', 'priv', 'pub']);
    expect((list.body!.buckets as unknown[])[2]).toEqual({ name: 'pub', public: true, file_size_limit: null, allowed_mime_types: null, created_at: expect.any(String) as string });
    expect((await call('POST', '/storage/buckets', { name: 'media_1', public: true })).status).toBe(409);
    for (const name of ['A', 'x', '-ab', 'ab/c', 'a'.repeat(64), 7]) {
      const bad = await call('POST', '/storage/buckets', { name, public: true });
      expect(bad.status).toBe(400);
      expect((bad.body!.error as { code: string }).code).toBe('invalid_field');
    }
    expect((await call('POST', '/storage/buckets', { name: 'okname', allowed_mime_types: ['image/**'] })).status).toBe(400);
    const pub = await call('POST', '/storage/buckets', { name: 'nope', public: true }, s.keys.publishable);
    expect(pub.status).toBe(403);
    expect((pub.body!.error as { code: string }).code).toBe('forbidden');
    expect((await call('DELETE', '/storage/buckets/media_1', undefined, s.keys.publishable)).status).toBe(403);
  });

  it('deletes an empty bucket (204); a non-empty one is 409 unless ?force=true, which removes its objects', async () => {
    expect((await call('POST', '/storage/buckets', { name: 'gone', public: true })).status).toBe(201);
    const o = await put('gone', 'a.txt', 'hello');
    expect(o.status).toBe(201);
    expect(await (await fetch(`${s.url}/${o.body.id as string}`)).text()).toBe('hello');
    const del = await call('DELETE', '/storage/buckets/gone');
    expect(del.status).toBe(409);
    expect((del.body!.error as { code: string }).code).toBe('conflict');
    const forced = await s.req('/storage/buckets/gone?force=true', { method: 'DELETE', key: s.keys.service });
    expect(forced.status).toBe(204);
    expect(await forced.text()).toBe('');
    expect((await fetch(`${s.url}/${o.body.id as string}`)).status).toBe(404);
    expect((await call('DELETE', '/storage/buckets/gone')).status).toBe(404);
    expect((await call('POST', '/storage/buckets', { name: 'empty', public: true })).status).toBe(201);
    expect((await call('DELETE', '/storage/buckets/empty')).status).toBe(204);
  });
});

describe('PUT, GET, list and DELETE objects', () => {
  it('answers 201 with the pinned record, then 200 on an overwrite that keeps the short id', async () => {
    const r = await put('pub', 'docs/hello.txt', 'hello world');
    expect(r.status).toBe(201);
    const id = r.body.id as string;
    expect(id).toMatch(/^[0-9A-Za-z]{10}$/);
    expect(r.body).toEqual({
      id,
      bucket: 'pub',
      key: 'docs/hello.txt',
      size: 11,
      content_type: 'text/plain',
      etag: `"${sha('hello world')}"`,
      created_at: expect.any(String) as string,
      updated_at: r.body.created_at,
      url: `${s.url}/storage/objects/pub/${id}`,
    });
    const again = await put('pub', 'docs/hello.txt', 'hello again', 'text/markdown');
    expect(again.status).toBe(200);
    expect(again.body.id).toBe(id);
    expect(again.body.size).toBe(11);
    expect(again.body.content_type).toBe('text/markdown');
    expect(again.body.created_at).toBe(r.body.created_at);
    const got = await s.req('/storage/objects/pub/docs/hello.txt');
    expect(got.status).toBe(200);
    expect(await got.text()).toBe('hello again');
    expect(got.headers.get('content-type')).toBe('text/markdown');
  });

  it('a private bucket record has url null; a body without Content-Type is application/octet-stream', async () => {
    const res = await s.req('/storage/objects/priv/raw.bin', { method: 'PUT', key: s.keys.service, body: new Uint8Array([1, 2, 3]) });
    expect(res.status).toBe(201);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body.url).toBeNull();
    expect(body.content_type).toBe('application/octet-stream');
  });

  it('stores an empty object', async () => {
    const r = await put('pub', 'empty.txt', '');
    expect(r.status).toBe(201);
    expect(r.body.size).toBe(0);
    expect(r.body.etag).toBe(`"${sha('')}"`);
    const got = await fetch(`${s.url}/${r.body.id as string}`);
    expect(got.status).toBe(200);
    expect(got.headers.get('content-length')).toBe('0');
    expect(await got.text()).toBe('');
  });

  it('streams a 3 MiB body chunked and reads back the same bytes', async () => {
    const size = 3 * 1024 * 1024;
    const data = new Uint8Array(size);
    for (let i = 0; i < size; i++) data[i] = (i * 31) & 0xff;
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (let off = 0; off < size; off += 100_000) c.enqueue(data.slice(off, Math.min(size, off + 100_000)));
        c.close();
      },
    });
    const res = await fetch(`${s.url}/storage/objects/pub/big.bin`, { method: 'PUT', headers: { 'x-service-key': s.keys.service, 'content-type': 'application/octet-stream' }, body, duplex: 'half' } as RequestInit);
    expect(res.status).toBe(201);
    const rec = (await res.json()) as Record<string, unknown>;
    expect(rec.size).toBe(size);
    expect(rec.etag).toBe(`"${sha(data)}"`);
    const got = new Uint8Array(await (await s.req('/storage/objects/pub/big.bin')).arrayBuffer());
    expect(sha(got)).toBe(sha(data));
  });

  it('lists by prefix with limit/offset/next_offset', async () => {
    expect((await call('POST', '/storage/buckets', { name: 'listed', public: true })).status).toBe(201);
    for (const k of ['a/1', 'a/2', 'a/3', 'b/1', 'a%/x']) expect((await put('listed', encodeURIComponent(k).replaceAll('%2F', '/'), k)).status).toBe(201);
    const all = await call('GET', '/storage/objects/listed?prefix=a/&limit=2', undefined, s.keys.publishable);
    expect(all.status).toBe(200);
    expect((all.body!.objects as { key: string }[]).map((o) => o.key)).toEqual(['a/1', 'a/2']);
    expect(all.body!.limit).toBe(2);
    expect(all.body!.offset).toBe(0);
    expect(all.body!.next_offset).toBe(2);
    const next = await call('GET', '/storage/objects/listed?prefix=a/&limit=2&offset=2', undefined, s.keys.publishable);
    expect((next.body!.objects as { key: string }[]).map((o) => o.key)).toEqual(['a/3']);
    expect(next.body!.next_offset).toBeNull();
    const pct = await call('GET', `/storage/objects/listed?prefix=${encodeURIComponent('a%')}`, undefined, s.keys.publishable);
    expect((pct.body!.objects as { key: string }[]).map((o) => o.key)).toEqual(['a%/x']);
    const first = (all.body!.objects as Record<string, unknown>[])[0]!;
    expect(Object.keys(first).sort()).toEqual(['bucket', 'content_type', 'created_at', 'etag', 'id', 'key', 'size', 'updated_at', 'url']);
    expect((await call('GET', '/storage/objects/listed?limit=0', undefined, s.keys.publishable)).status).toBe(400);
    expect((await call('GET', '/storage/objects/nobucket', undefined, s.keys.publishable)).status).toBe(404);
  });

  it('deletes an object: 204, then 404 by key and by short id', async () => {
    const r = await put('pub', 'tmp/del.txt', 'bye');
    const id = r.body.id as string;
    // note: read first, so a copy kept in memory would show if the delete left it there.
    expect(await (await fetch(`${s.url}/${id}`)).text()).toBe('bye');
    expect(await (await fetch(`${s.url}/storage/objects/pub/${id}`)).text()).toBe('bye');
    const del = await s.req('/storage/objects/pub/tmp/del.txt', { method: 'DELETE', key: s.keys.service });
    expect(del.status).toBe(204);
    expect((await s.req('/storage/objects/pub/tmp/del.txt')).status).toBe(404);
    // note: an id the index no longer holds is a key: without credentials 401, with a key 404.
    expect((await fetch(`${s.url}/storage/objects/pub/${id}`)).status).toBe(401);
    expect((await s.req(`/storage/objects/pub/${id}`)).status).toBe(404);
    expect((await fetch(`${s.url}/${id}`)).status).toBe(404);
    expect((await s.req('/storage/objects/pub/tmp/del.txt', { method: 'DELETE', key: s.keys.service })).status).toBe(404);
  });

  it('reads need storage:read and writes storage:write (401 missing_scope)', async () => {
    const readOnly = s.server.projects.createKey(s.projectId, 'ro', ['storage:read'], false).secret;
    const dataOnly = s.server.projects.createKey(s.projectId, 'data', ['data:read', 'data:write'], false).secret;
    expect((await s.req('/storage/objects/pub/docs/hello.txt', { key: readOnly })).status).toBe(200);
    const w = await s.req('/storage/objects/pub/ro.txt', { method: 'PUT', key: readOnly, body: 'x' });
    expect(w.status).toBe(401);
    expect((await errorOf(w)).code).toBe('missing_scope');
    expect((await s.req('/storage/objects/pub/docs/hello.txt', { method: 'DELETE', key: readOnly })).status).toBe(401);
    const r = await s.req('/storage/objects/pub/docs/hello.txt', { key: dataOnly });
    expect(r.status).toBe(401);
    expect((await errorOf(r)).code).toBe('missing_scope');
    expect((await s.req('/storage/buckets', { key: dataOnly })).status).toBe(401);
    // note: without any credentials a public short id still reads.
    const id = ((await (await s.req('/storage/objects/pub?prefix=docs/', { key: readOnly })).json()) as { objects: { id: string }[] }).objects[0]!.id;
    expect((await fetch(`${s.url}/${id}`)).status).toBe(200);
  });

  it('needs storage scopes and a known bucket', async () => {
    expect((await put('nobucket', 'x', 'y')).status).toBe(404);
    const noKey = await fetch(`${s.url}/storage/objects/pub/x`, { method: 'PUT', body: 'y' });
    expect(noKey.status).toBe(401);
    expect((await fetch(`${s.url}/storage/buckets`)).status).toBe(401);
    const custom = await s.req('/storage/objects/pub/x', { method: 'PUT', key: 'svc_live_' + 'x'.repeat(32), body: 'y' });
    expect(custom.status).toBe(401);
  });
});

describe('short ids', () => {
  it('serves a public object by short id without credentials, in the bucket path and at the root (GET and HEAD)', async () => {
    const r = await put('pub', 'short/one.txt', 'short body');
    const id = r.body.id as string;
    for (const path of [`/storage/objects/pub/${id}`, `/${id}`]) {
      const got = await fetch(s.url + path);
      expect(got.status).toBe(200);
      expect(await got.text()).toBe('short body');
      const head = await fetch(s.url + path, { method: 'HEAD' });
      expect(head.status).toBe(200);
      expect(head.headers.get('content-length')).toBe('10');
      expect(await head.text()).toBe('');
    }
    // note: a key in the bucket path is a key, read with one.
    expect(await (await s.req(`/storage/objects/pub/${id}`)).text()).toBe('short body');
    // note: the short id names the object of its own bucket only.
    expect((await fetch(`${s.url}/storage/objects/priv/${id}`)).status).toBe(404);
  });

  it('without credentials: a key path is 401, a private short id 404 (also at the root)', async () => {
    const p = await put('priv', 'secret.txt', 'top secret');
    const id = p.body.id as string;
    expect((await fetch(`${s.url}/storage/objects/pub/short/one.txt`)).status).toBe(401);
    expect((await fetch(`${s.url}/storage/objects/priv/secret.txt`)).status).toBe(401);
    const priv = await fetch(`${s.url}/storage/objects/priv/${id}`);
    expect(priv.status).toBe(404);
    expect((await errorOf(priv)).code).toBe('not_found');
    expect((await fetch(`${s.url}/${id}`)).status).toBe(404);
    // note: with the service key the same short id reads.
    expect(await (await s.req(`/storage/objects/priv/${id}`, { key: s.keys.service })).text()).toBe('top secret');
  });

  it('a PUT of a key equal to one of the bucket short ids is 409', async () => {
    const r = await put('pub', 'taken.txt', 'x');
    const clash = await put('pub', r.body.id as string, 'y');
    expect(clash.status).toBe(409);
    expect((clash.body.error as { code: string }).code).toBe('conflict');
  });

  it('other one-segment paths keep the 404 of an unknown path, for every method (never 405)', async () => {
    for (const [method, path] of [
      ['GET', '/nothing'],
      ['GET', '/AAAAAAAAAA'],
      ['POST', '/AAAAAAAAAA'],
      ['DELETE', '/whatever'],
      ['PUT', '/abc'],
    ] as const) {
      const res = await fetch(s.url + path, { method });
      expect(res.status).toBe(404);
      expect(await errorOf(res)).toEqual({ code: 'not_found', message: `route "${method} ${path}" not found` });
    }
    expect((await fetch(`${s.url}/health`)).status).toBe(200);
  });
});

describe('who may read and write', () => {
  it('a user owns what it creates: others (and the key alone) may not overwrite or delete it', async () => {
    const mine = await put('priv', 'alice/a.txt', 'alice data', 'text/plain', s.keys.publishable, { authorization: `Bearer ${alice}` });
    expect(mine.status).toBe(201);
    const over = await put('priv', 'alice/a.txt', 'bob data', 'text/plain', s.keys.publishable, { authorization: `Bearer ${bob}` });
    expect(over.status).toBe(403);
    expect((over.body.error as { code: string }).code).toBe('rls_denied');
    expect((await put('priv', 'alice/a.txt', 'anon', 'text/plain', s.keys.publishable)).status).toBe(403);
    expect((await put('priv', 'alice/a.txt', 'alice 2', 'text/plain', s.keys.publishable, { authorization: `Bearer ${alice}` })).status).toBe(200);
    const asBob = await s.req('/storage/objects/priv/alice/a.txt', { method: 'DELETE', headers: { authorization: `Bearer ${bob}` } });
    expect(asBob.status).toBe(404);
    // note: in a public bucket everyone reads it, so a delete by another user is refused, not hidden.
    expect((await put('pub', 'alice/p.txt', 'alice public', 'text/plain', s.keys.publishable, { authorization: `Bearer ${alice}` })).status).toBe(201);
    const pubDel = await s.req('/storage/objects/pub/alice/p.txt', { method: 'DELETE', headers: { authorization: `Bearer ${bob}` } });
    expect(pubDel.status).toBe(403);
    expect((await errorOf(pubDel)).code).toBe('rls_denied');
    expect((await s.req('/storage/objects/pub/alice/p.txt', { method: 'DELETE', headers: { authorization: `Bearer ${alice}` } })).status).toBe(204);
  });

  it('private objects read only by their owner and the service role; lists filter the same way', async () => {
    await put('priv', 'alice/b.txt', 'alice b', 'text/plain', s.keys.publishable, { authorization: `Bearer ${alice}` });
    expect(await (await s.req('/storage/objects/priv/alice/b.txt', { headers: { authorization: `Bearer ${alice}` } })).text()).toBe('alice b');
    expect((await s.req('/storage/objects/priv/alice/b.txt', { headers: { authorization: `Bearer ${bob}` } })).status).toBe(404);
    expect((await s.req('/storage/objects/priv/alice/b.txt')).status).toBe(404);
    const aliceList = await call('GET', '/storage/objects/priv?prefix=alice/', undefined, s.keys.publishable, { authorization: `Bearer ${alice}` });
    expect((aliceList.body!.objects as { key: string }[]).map((o) => o.key)).toEqual(['alice/a.txt', 'alice/b.txt']);
    const bobList = await call('GET', '/storage/objects/priv', undefined, s.keys.publishable, { authorization: `Bearer ${bob}` });
    expect(bobList.body!.objects).toEqual([]);
    const anonList = await call('GET', '/storage/objects/priv', undefined, s.keys.publishable);
    expect(anonList.body!.objects).toEqual([]);
    const svcList = await call('GET', '/storage/objects/priv?prefix=alice/');
    expect((svcList.body!.objects as unknown[]).length).toBe(2);
    const del = await s.req('/storage/objects/priv/alice/b.txt', { method: 'DELETE', headers: { authorization: `Bearer ${alice}` } });
    expect(del.status).toBe(204);
  });

  it('an invalid access token is 401 even on a public read', async () => {
    expect((await s.req('/storage/objects/pub/docs/hello.txt', { headers: { authorization: 'Bearer lca_nope' } })).status).toBe(401);
  });
});
