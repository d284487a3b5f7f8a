import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorOf, startTestServer, type TestServer } from '../helpers/server.js';

// Secrets and settings (docs/api.md "Secrets and feature flags"): black-box through HTTP.

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.close());

const svc = () => ({ key: s.keys.service });
const put = (name: string, body: unknown, key = s.keys.service) =>
  s.req(`/secrets/${name}`, { method: 'PUT', key, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
type Entry = { name: string; secret: boolean; value: string; fingerprint: string; updated_at: string };
const list = async (): Promise<Entry[]> => ((await (await s.req('/secrets', svc())).json()) as { secrets: Entry[] }).secrets;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('secrets and settings', () => {
  it('writes a secret, lists it masked with a fingerprint that changes with the value, deletes it', async () => {
    const res = await put('STRIPE_KEY', { value: 'sk_test_alpha' });
    expect(res.status).toBe(200);
    const entry = (await res.json()) as Entry;
    expect(entry).toEqual({ name: 'STRIPE_KEY', secret: true, value: '********', fingerprint: expect.stringMatching(/^[0-9a-f]{8}$/), updated_at: expect.stringMatching(ISO) });
    expect((await list()).find((e) => e.name === 'STRIPE_KEY')).toEqual(entry);

    // the same value gives the same fingerprint (sealed with a fresh nonce each time); another value another one
    const again = (await (await put('STRIPE_KEY', { value: 'sk_test_alpha' })).json()) as Entry;
    expect(again.fingerprint).toBe(entry.fingerprint);
    const changed = (await (await put('STRIPE_KEY', { value: 'sk_test_beta' })).json()) as Entry;
    expect(changed.fingerprint).not.toBe(entry.fingerprint);
    expect(changed.value).toBe('********');

    const del = await s.req('/secrets/STRIPE_KEY', { method: 'DELETE', ...svc() });
    expect(del.status).toBe(204);
    expect(await del.text()).toBe('');
    expect((await list()).map((e) => e.name)).not.toContain('STRIPE_KEY');
    const again404 = await s.req('/secrets/STRIPE_KEY', { method: 'DELETE', ...svc() });
    expect(again404.status).toBe(404);
    expect((await errorOf(again404)).code).toBe('not_found');
  });

  it('shows settings in clear: the default setting names, and any name written with secret: false', async () => {
    expect((await (await put('EMAIL_FROM', { value: 'hello@example.com' })).json()) as Entry).toMatchObject({ name: 'EMAIL_FROM', secret: false, value: 'hello@example.com' });
    expect((await (await put('APP_TITLE', { value: 'Shop', secret: false })).json()) as Entry).toMatchObject({ secret: false, value: 'Shop' });
    // a default setting name can still be written as a secret
    expect((await (await put('AUTH_REDIRECT_URLS', { value: 'https://a.example', secret: true })).json()) as Entry).toMatchObject({ secret: true, value: '********' });
    // a setting turned into a secret by a later write is masked from then on
    expect((await (await put('APP_TITLE', { value: 'Shop', secret: true })).json()) as Entry).toMatchObject({ secret: true, value: '********' });
    const names = (await list()).map((e) => [e.name, e.secret, e.value]);
    expect(names).toEqual([
      ['APP_TITLE', true, '********'],
      ['AUTH_REDIRECT_URLS', true, '********'],
      ['EMAIL_FROM', false, 'hello@example.com'],
    ]);
    for (const n of ['APP_TITLE', 'AUTH_REDIRECT_URLS', 'EMAIL_FROM']) expect((await s.req(`/secrets/${n}`, { method: 'DELETE', ...svc() })).status).toBe(204);
    expect(await list()).toEqual([]);
  });

  it('accepts a name of 128 characters and a value of exactly 64 KiB', async () => {
    const name = '_' + 'a'.repeat(127);
    const res = await put(name, { value: 'x'.repeat(64 * 1024) });
    expect(res.status).toBe(200);
    expect((await s.req(`/secrets/${name}`, { method: 'DELETE', ...svc() })).status).toBe(204);
  });
});

describe('bad input', () => {
  const bad = async (res: Response, status: number, code: string, field?: string) => {
    expect(res.status).toBe(status);
    const e = await errorOf(res);
    expect(e.code).toBe(code);
    if (field !== undefined) expect(e.message.startsWith(`${field}:`)).toBe(true);
  };

  it('refuses bad names: ../x, a b, 129 characters, a leading digit, flags', async () => {
    // note: the edge refuses an encoded `/` or a `..` segment before routing; `..x` reaches the name rule
    await bad(await put('%2E%2E%2Fx', { value: 'v' }), 400, 'invalid_request');
    await bad(await put('x%2Fy', { value: 'v' }), 400, 'invalid_request');
    await bad(await put('..x', { value: 'v' }), 400, 'invalid_field', 'name');
    await bad(await put('a.b', { value: 'v' }), 400, 'invalid_field', 'name');
    await bad(await put('a%20b', { value: 'v' }), 400, 'invalid_field', 'name');
    await bad(await put('_' + 'a'.repeat(128), { value: 'v' }), 400, 'invalid_field', 'name');
    await bad(await put('1ABC', { value: 'v' }), 400, 'invalid_field', 'name');
    await bad(await put('flags', { value: 'v' }), 400, 'invalid_field', 'name');
    await bad(await s.req('/secrets/flags', { method: 'DELETE', ...svc() }), 400, 'invalid_field', 'name');
    await bad(await s.req('/secrets/a%20b', { method: 'DELETE', ...svc() }), 400, 'invalid_field', 'name');
    expect(await list()).toEqual([]);
  });

  it('refuses bad values: over 64 KiB, a number, missing, null, secret not a boolean, an unknown field, not an object', async () => {
    await bad(await put('BIG', { value: 'x'.repeat(64 * 1024 + 1) }), 400, 'invalid_field', 'value');
    // 64 KiB of characters, but more bytes in UTF-8
    await bad(await put('BIG', { value: 'é'.repeat(40 * 1024) }), 400, 'invalid_field', 'value');
    await bad(await put('NUM', { value: 42 }), 400, 'invalid_field', 'value');
    await bad(await put('NUM', {}), 400, 'invalid_field', 'value');
    await bad(await put('NUM', { value: null }), 400, 'invalid_field', 'value');
    await bad(await put('NUM', { value: 'v', secret: 'yes' }), 400, 'invalid_field', 'secret');
    await bad(await put('NUM', { value: 'v', secret: null }), 400, 'invalid_field', 'secret');
    await bad(await put('NUM', { value: 'v', secert: true }), 400, 'invalid_field', 'body');
    await bad(await put('NUM', ['v']), 400, 'invalid_body');
    const notJson = await s.req('/secrets/NUM', { method: 'PUT', ...svc(), headers: { 'content-type': 'application/json' }, body: '{"value":' });
    expect(notJson.status).toBe(400);
    expect(await list()).toEqual([]);
  });

  it('needs the service role: a publishable key gets 403 on every write and on the listings; no key 401', async () => {
    expect((await put('X', { value: 'seeded' })).status).toBe(200);
    const pub = s.keys.publishable;
    await bad(await put('X', { value: 'v' }, pub), 403, 'forbidden');
    await bad(await s.req('/secrets/X', { method: 'DELETE', key: pub }), 403, 'forbidden');
    await bad(await s.req('/secrets', { key: pub }), 403, 'forbidden');
    await bad(await s.req('/secrets/flags', { key: pub }), 403, 'forbidden');
    await bad(await s.req('/secrets/flags/f', { method: 'PUT', key: pub, body: JSON.stringify({ value: true }), headers: { 'content-type': 'application/json' } }), 403, 'forbidden');
    await bad(await s.req('/secrets/flags/f', { method: 'DELETE', key: pub }), 403, 'forbidden');
    await bad(await s.req('/secrets', { key: null }), 401, 'unauthorized');
    // an operator session with X-Service-Project acts as the service role
    const op = await s.req('/secrets', { key: null, headers: { authorization: `Bearer ${s.operatorToken}`, 'x-service-project': s.projectId } });
    expect(op.status).toBe(200);
    expect(((await op.json()) as { secrets: Entry[] }).secrets.map((e) => e.name)).toEqual(['X']);
    expect((await s.req('/secrets/X', { method: 'DELETE', ...svc() })).status).toBe(204);
  });
});
