import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorOf, startTestServer, type TestServer } from '../helpers/server.js';

// Feature flags and their evaluation (docs/api.md "Flags"): black-box through HTTP.

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.close());

type Flag = { key: string; value: unknown; default: unknown; enabled: boolean; rollout: number; description: string | null; updated_at: string };
const putFlag = (key: string, body: unknown, k = s.keys.service) =>
  s.req(`/secrets/flags/${key}`, { method: 'PUT', key: k, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const flags = async (): Promise<Flag[]> => ((await (await s.req('/secrets/flags', { key: s.keys.service })).json()) as { flags: Flag[] }).flags;
const del = (key: string) => s.req(`/secrets/flags/${key}`, { method: 'DELETE', key: s.keys.service });
const evaluate = async (token?: string): Promise<Record<string, unknown>> => {
  const res = await s.req('/secrets/flags/evaluate', { headers: token ? { authorization: `Bearer ${token}` } : {} });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
  return ((await res.json()) as { flags: Record<string, unknown> }).flags;
};
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The pinned rule, computed here independently: SHA-256(`key:user_id`) as a 256-bit integer, mod 10,000. */
const bucket = (key: string, user: string): number => Number(BigInt('0x' + createHash('sha256').update(`${key}:${user}`).digest('hex')) % 10_000n);

async function anonymousUsers(n: number): Promise<{ id: string; token: string }[]> {
  const out: { id: string; token: string }[] = [];
  for (let i = 0; i < n; i++) {
    const res = await s.req('/auth/anonymous', { method: 'POST' });
    expect(res.status).toBe(200);
    const b = (await res.json()) as { access_token: string; user: { id: string } };
    out.push({ id: b.user.id, token: b.access_token });
  }
  return out;
}

describe('flags', () => {
  it('writes flags with their defaults, lists them, replaces and deletes one', async () => {
    const res = await putFlag('new-checkout', { value: true });
    expect(res.status).toBe(200);
    const f = (await res.json()) as Flag;
    expect(f).toEqual({ key: 'new-checkout', value: true, default: false, enabled: true, rollout: 100, description: null, updated_at: expect.stringMatching(ISO) });
    const theme = (await (await putFlag('ui.theme', { value: { color: 'teal', sizes: [1, 2] }, description: 'the theme', rollout: 0 })).json()) as Flag;
    expect(theme).toMatchObject({ key: 'ui.theme', value: { color: 'teal', sizes: [1, 2] }, default: null, enabled: true, rollout: 0, description: 'the theme' });
    const limit = (await (await putFlag('max_items', { value: 50, default: 10, enabled: false })).json()) as Flag;
    expect(limit).toMatchObject({ value: 50, default: 10, enabled: false, rollout: 100 });
    expect((await flags()).map((x) => x.key)).toEqual(['max_items', 'new-checkout', 'ui.theme']);
    expect((await flags())[1]).toEqual(f);

    // a write replaces the whole flag: fields left out take their defaults again
    const replaced = (await (await putFlag('max_items', { value: 'many' })).json()) as Flag;
    expect(replaced).toMatchObject({ value: 'many', default: null, enabled: true, rollout: 100, description: null });

    for (const k of ['max_items', 'new-checkout', 'ui.theme']) {
      const d = await del(k);
      expect(d.status).toBe(204);
      expect(await d.text()).toBe('');
    }
    expect(await flags()).toEqual([]);
    const missing = await del('max_items');
    expect(missing.status).toBe(404);
    expect((await errorOf(missing)).code).toBe('not_found');
  });

  it('evaluates: enabled at 100 % gives the value to everyone, disabled and 0 % give the default; a change shows in the next call', async () => {
    await putFlag('on', { value: 'blue' });
    await putFlag('off', { value: true, enabled: false });
    await putFlag('zero', { value: 7, default: 3, rollout: 0 });
    const [u] = await anonymousUsers(1);
    expect(await evaluate()).toEqual({ on: 'blue', off: false, zero: 3 });
    expect(await evaluate(u!.token)).toEqual({ on: 'blue', off: false, zero: 3 });

    await putFlag('off', { value: true });
    expect(await evaluate(u!.token)).toEqual({ on: 'blue', off: true, zero: 3 });
    await putFlag('zero', { value: 7, default: 3, rollout: 100 });
    expect(await evaluate()).toEqual({ on: 'blue', off: true, zero: 7 });
    expect((await del('on')).status).toBe(204);
    expect(await evaluate(u!.token)).toEqual({ off: true, zero: 7 });
    for (const k of ['off', 'zero']) expect((await del(k)).status).toBe(204);
    expect(await evaluate()).toEqual({});
  });

  it('rolls out by SHA-256(key:user_id) mod 10,000 < rollout × 100: exact membership, stable as the percentage grows', async () => {
    const users = await anonymousUsers(24);
    const key = 'beta.search';
    let previous = new Set<string>();
    for (const rollout of [0, 10, 25, 50, 75, 99, 100]) {
      expect((await putFlag(key, { value: 'v2', default: 'v1', rollout })).status).toBe(200);
      const inNow = new Set<string>();
      for (const u of users) {
        const got = (await evaluate(u.token))[key];
        expect(got).toBe(bucket(key, u.id) < rollout * 100 ? 'v2' : 'v1');
        if (got === 'v2') inNow.add(u.id);
      }
      // whoever was in stays in
      for (const id of previous) expect(inNow.has(id)).toBe(true);
      previous = inNow;
      // without a user, a partial rollout gives the default
      expect((await evaluate())[key]).toBe(rollout === 100 ? 'v2' : 'v1');
    }
    expect(previous.size).toBe(24);
    // the rule is per flag: another key buckets the same users differently
    await putFlag('other', { value: true, rollout: 50 });
    for (const u of users.slice(0, 6)) expect((await evaluate(u.token)).other).toBe(bucket('other', u.id) < 5000);
    for (const k of [key, 'other']) expect((await del(k)).status).toBe(204);
  });

  it('lets any key with data:read evaluate; no key is 401, a bad bearer token 401', async () => {
    expect((await s.req('/secrets/flags/evaluate', { key: s.keys.service })).status).toBe(200);
    const none = await s.req('/secrets/flags/evaluate', { key: null });
    expect(none.status).toBe(401);
    const badToken = await s.req('/secrets/flags/evaluate', { headers: { authorization: 'Bearer lca_not-a-token' } });
    expect(badToken.status).toBe(401);
  });
});

describe('bad flag input', () => {
  const bad = async (res: Response, status: number, code: string, field?: string) => {
    expect(res.status).toBe(status);
    const e = await errorOf(res);
    expect(e.code).toBe(code);
    if (field !== undefined) expect(e.message.startsWith(`${field}:`)).toBe(true);
  };
  const deep = (levels: number): unknown => (levels === 0 ? 1 : [deep(levels - 1)]);

  it('refuses bad keys: capitals, a space, 129 characters, a leading dot or dash, evaluate', async () => {
    await bad(await putFlag('Beta', { value: true }), 400, 'invalid_field', 'key');
    await bad(await putFlag('a%20b', { value: true }), 400, 'invalid_field', 'key');
    await bad(await putFlag('a'.repeat(129), { value: true }), 400, 'invalid_field', 'key');
    await bad(await putFlag('.a', { value: true }), 400, 'invalid_field', 'key');
    await bad(await putFlag('-a', { value: true }), 400, 'invalid_field', 'key');
    await bad(await putFlag('evaluate', { value: true }), 400, 'invalid_field', 'key');
    await bad(await s.req('/secrets/flags/evaluate', { method: 'DELETE', key: s.keys.service }), 400, 'invalid_field', 'key');
    await bad(await s.req('/secrets/flags/Beta', { method: 'DELETE', key: s.keys.service }), 400, 'invalid_field', 'key');
    expect((await putFlag('a'.repeat(128), { value: true })).status).toBe(200);
    expect((await del('a'.repeat(128))).status).toBe(204);
  });

  it('refuses bad values: 10 levels deep, over 8 KiB, missing; bad rollout, enabled, description, default; unknown fields', async () => {
    await bad(await putFlag('f', { value: deep(10) }), 400, 'invalid_field', 'value');
    await bad(await putFlag('f', { value: deep(9) }), 400, 'invalid_field', 'value');
    await bad(await putFlag('f', { value: 'x'.repeat(8 * 1024) }), 400, 'invalid_field', 'value');
    await bad(await putFlag('f', { value: { list: Array.from({ length: 2000 }, (_, i) => i) } }), 400, 'invalid_field', 'value');
    await bad(await putFlag('f', { value: true, default: deep(10) }), 400, 'invalid_field', 'default');
    await bad(await putFlag('f', {}), 400, 'invalid_field', 'value');
    for (const rollout of [101, -1, 50.5, '50', null]) await bad(await putFlag('f', { value: true, rollout }), 400, 'invalid_field', 'rollout');
    await bad(await putFlag('f', { value: true, enabled: 'yes' }), 400, 'invalid_field', 'enabled');
    await bad(await putFlag('f', { value: true, enabled: null }), 400, 'invalid_field', 'enabled');
    await bad(await putFlag('f', { value: true, description: 5 }), 400, 'invalid_field', 'description');
    await bad(await putFlag('f', { value: true, description: 'd'.repeat(1025) }), 400, 'invalid_field', 'description');
    await bad(await putFlag('f', { value: true, percent: 5 }), 400, 'invalid_field', 'body');
    await bad(await putFlag('f', [true]), 400, 'invalid_body');
    await bad(await putFlag('f', 'on'), 400, 'invalid_body');
    expect(await flags()).toEqual([]);
    // the limits themselves are accepted: 8 levels deep, 8 KiB of JSON
    expect((await putFlag('f', { value: deep(8) })).status).toBe(200);
    expect((await putFlag('f', { value: 'x'.repeat(8 * 1024 - 2) })).status).toBe(200);
    expect((await del('f')).status).toBe(204);
  });
});
