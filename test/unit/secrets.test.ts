import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { Sealer } from '../../src/control/seal.js';
import { EventBus } from '../../src/events/bus.js';
import { ProjectRegistry } from '../../src/project/registry.js';
import { FlagsView } from '../../src/services/secrets/flags.js';
import { bucketOf, inRollout } from '../../src/services/secrets/rollout.js';
import { SecretsService } from '../../src/services/secrets/secrets.js';

// The internal read API (`SecretsService.get`) and what is at rest. This file edits project
// files directly (moved and altered ciphertexts), which an API test must not do.

const dirs: string[] = [];
const regs: ProjectRegistry[] = [];
afterEach(() => {
  regs.splice(0).forEach((r) => r.closeAll());
  dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true }));
});

function setup() {
  const dataDir = mkdtempSync(join(tmpdir(), 'pe-secrets-'));
  dirs.push(dataDir);
  for (const id of ['p1', 'p2']) mkdirSync(join(dataDir, 'projects', id), { recursive: true });
  const reg = new ProjectRegistry(loadConfig({ dataDir }, {}));
  regs.push(reg);
  const bus = new EventBus();
  const secrets = new SecretsService(new Sealer(randomBytes(32)), bus, () => Date.UTC(2026, 0, 2, 3, 4, 5));
  /** Runs `fn` with a lease of the project, released after. */
  const use = <T>(id: string, fn: (l: ReturnType<ProjectRegistry['acquire']>) => T): T => {
    const l = reg.acquire(id);
    try {
      return fn(l);
    } finally {
      l.release();
    }
  };
  /** Edits the project file through its own connection, the server's connection closed first. */
  const editFile = (id: string, sql: string, ...params: unknown[]): void => {
    reg.forget(id);
    const db = new Database(join(dataDir, 'projects', id, 'project.db'));
    try {
      db.prepare(sql).run(...params);
    } finally {
      db.close();
    }
  };
  const sealed = (id: string, name: string): string =>
    use(id, (l) => (l.db.prepare('SELECT value FROM "_svc_secrets.values" WHERE name = ?').get(name) as { value: string }).value);
  return { secrets, use, editFile, sealed, bus };
}

describe('SecretsService.get (the internal read API)', () => {
  it('answers the plaintext, null for a missing or malformed name, and sees every write at the next call', () => {
    const { secrets, use } = setup();
    use('p1', (l) => {
      expect(secrets.get(l, 'API_TOKEN')).toBeNull();
      expect(secrets.get(l, '../etc')).toBeNull();
      secrets.put(l, 'API_TOKEN', { value: 'first' });
      expect(secrets.get(l, 'API_TOKEN')).toBe('first');
    });
    use('p1', (l) => {
      expect(secrets.get(l, 'API_TOKEN')).toBe('first');
      secrets.put(l, 'API_TOKEN', { value: 'second' });
      expect(secrets.get(l, 'API_TOKEN')).toBe('second');
      secrets.put(l, 'EMAIL_FROM', { value: 'a@example.com' });
      expect(secrets.get(l, 'EMAIL_FROM')).toBe('a@example.com');
    });
    // per project: another project has none of these
    use('p2', (l) => expect(secrets.get(l, 'API_TOKEN')).toBeNull());
    use('p1', (l) => {
      secrets.delete(l, 'API_TOKEN');
      expect(secrets.get(l, 'API_TOKEN')).toBeNull();
    });
  });

  it('keeps its per-project cache bounded: thousands of missing names, and values stay right', () => {
    const { secrets, use } = setup();
    use('p1', (l) => {
      secrets.put(l, 'KEPT', { value: 'kept-value' });
      for (let i = 0; i < 5000; i++) expect(secrets.get(l, `MISSING_${i}`)).toBeNull();
      expect(secrets.get(l, 'KEPT')).toBe('kept-value');
      secrets.put(l, 'MISSING_7', { value: 'now-there' });
      expect(secrets.get(l, 'MISSING_7')).toBe('now-there');
    });
  });

  it('stores only sealed values: v2 format, a fresh nonce per write, never the plaintext', () => {
    const { secrets, use, sealed } = setup();
    use('p1', (l) => secrets.put(l, 'K', { value: 'plain-text-canary' }));
    const a = sealed('p1', 'K');
    use('p1', (l) => secrets.put(l, 'K', { value: 'plain-text-canary' }));
    const b = sealed('p1', 'K');
    expect(a).toMatch(/^v2\.[\w-]{16}\.[\w-]{22}\.[\w-]+$/);
    expect(b).not.toBe(a);
    expect(a).not.toContain('plain-text-canary');
    expect(a).not.toContain(Buffer.from('plain-text-canary').toString('base64url'));
  });
});

describe('change events', () => {
  it('announces writes and deletes of secrets and flags by name, never with a value; a failed delete announces nothing', async () => {
    const { secrets, use, bus } = setup();
    const seen: unknown[] = [];
    bus.on('secrets.changed', (e) => void seen.push(['secrets', e]));
    bus.on('flags.changed', (e) => void seen.push(['flags', e]));
    use('p1', (l) => {
      secrets.put(l, 'TOKEN', { value: 'never-in-an-event' });
      secrets.delete(l, 'TOKEN');
      expect(() => secrets.delete(l, 'TOKEN')).toThrow('secret "TOKEN" not found');
      secrets.putFlag(l, 'beta', { value: true, rollout: 10 });
      secrets.deleteFlag(l, 'beta');
    });
    await bus.idle();
    const at = '2026-01-02T03:04:05.000Z';
    expect(seen).toEqual([
      ['secrets', { projectId: 'p1', at, name: 'TOKEN', op: 'put' }],
      ['secrets', { projectId: 'p1', at, name: 'TOKEN', op: 'delete' }],
      ['flags', { projectId: 'p1', at, key: 'beta', op: 'put' }],
      ['flags', { projectId: 'p1', at, key: 'beta', op: 'delete' }],
    ]);
  });
});

describe('AAD binding: a moved or altered ciphertext does not open', () => {
  const NOT_OPEN = /does not open/;

  it('a value moved to another row fails (never the other value); the rows left alone still open', () => {
    const { secrets, use, editFile, sealed } = setup();
    use('p1', (l) => {
      secrets.put(l, 'ALPHA', { value: 'alpha-value' });
      secrets.put(l, 'BRAVO', { value: 'bravo-value' });
    });
    editFile('p1', 'UPDATE "_svc_secrets.values" SET value = ? WHERE name = ?', sealed('p1', 'ALPHA'), 'BRAVO');
    use('p1', (l) => {
      expect(() => secrets.get(l, 'BRAVO')).toThrow(NOT_OPEN);
      expect(secrets.get(l, 'ALPHA')).toBe('alpha-value');
      // the listing opens every value (its fingerprint), so it fails too
      expect(() => secrets.list(l)).toThrow(NOT_OPEN);
    });
    // a failure is not cached as a value: it fails again
    use('p1', (l) => expect(() => secrets.get(l, 'BRAVO')).toThrow(NOT_OPEN));
  });

  it('a value copied to another project under the same name fails', () => {
    const { secrets, use, editFile, sealed } = setup();
    use('p1', (l) => secrets.put(l, 'SHARED', { value: 'p1-value' }));
    use('p2', (l) => secrets.put(l, 'SHARED', { value: 'p2-value' }));
    editFile('p2', 'UPDATE "_svc_secrets.values" SET value = ? WHERE name = ?', sealed('p1', 'SHARED'), 'SHARED');
    use('p2', (l) => expect(() => secrets.get(l, 'SHARED')).toThrow(NOT_OPEN));
    use('p1', (l) => expect(secrets.get(l, 'SHARED')).toBe('p1-value'));
  });

  it('an altered ciphertext fails, and the error names the record, not the value', () => {
    const { secrets, use, editFile, sealed } = setup();
    use('p1', (l) => secrets.put(l, 'TOKEN', { value: 'token-canary-123' }));
    const parts = sealed('p1', 'TOKEN').split('.');
    const body = Buffer.from(parts[3]!, 'base64url');
    body[0] = body[0]! ^ 1;
    editFile('p1', 'UPDATE "_svc_secrets.values" SET value = ? WHERE name = ?', [...parts.slice(0, 3), body.toString('base64url')].join('.'), 'TOKEN');
    use('p1', (l) => {
      let err: unknown;
      try {
        secrets.get(l, 'TOKEN');
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(Error);
      expect((err as Error).message).toBe(
        'the sealed secrets value "TOKEN" of project p1 does not open: it was sealed for another project, purpose or name, altered, or sealed under another master key',
      );
    });
  });
});

describe('rollout arithmetic', () => {
  /** The rule as pinned, computed with BigInt: SHA-256(`key:user_id`) as a big-endian integer, mod 10,000. */
  const reference = (key: string, user: string): number => Number(BigInt('0x' + createHash('sha256').update(`${key}:${user}`).digest('hex')) % 10_000n);

  it('matches known buckets', () => {
    expect(bucketOf('a', 'b')).toBe(8776);
    expect(bucketOf('new-checkout', 'user-1')).toBe(7890);
    expect(reference('new-checkout', 'user-1')).toBe(7890);
  });

  it('over 500 known user ids: matches the reference, lets in about the percentage, and keeps everyone in as it grows', () => {
    const ids = Array.from({ length: 500 }, (_, i) => `user-${i}`);
    for (const id of ids) expect(bucketOf('beta', id)).toBe(reference('beta', id));
    const counts: number[] = [];
    let previous = new Set<string>();
    for (const pct of [0, 1, 10, 25, 50, 90, 100]) {
      const inNow = new Set(ids.filter((id) => inRollout('beta', id, pct)));
      for (const id of previous) expect(inNow.has(id)).toBe(true);
      previous = inNow;
      counts.push(inNow.size);
    }
    // exact, from the reference rule (so a change of the hash, the key format or the modulus fails)
    expect(counts).toEqual([0, 1, 10, 25, 50, 90, 100].map((p) => ids.filter((id) => reference('beta', id) < p * 100).length));
    // known figures for these 500 ids: near the percentage of 500
    expect(counts).toEqual([0, 7, 55, 138, 256, 439, 500]);
    // a growing set of users: the answer of a user depends on that user alone, so the first 500 keep theirs
    const more = Array.from({ length: 1000 }, (_, i) => `user-${i}`).filter((id) => inRollout('beta', id, 25));
    expect(more.filter((id) => ids.includes(id)).length).toBe(138);
  });
});

describe('Sealer.mac (the fingerprint key)', () => {
  it('is fixed per (project, purpose, data) and differs across projects, purposes and data', () => {
    const sealer = new Sealer(Buffer.alloc(32, 7));
    const a = sealer.mac('p1', 'secrets', 'value').toString('hex');
    expect(a).toHaveLength(64);
    expect(sealer.mac('p1', 'secrets', 'value').toString('hex')).toBe(a);
    expect(new Sealer(Buffer.alloc(32, 7)).mac('p1', 'secrets', 'value').toString('hex')).toBe(a);
    expect(sealer.mac('p2', 'secrets', 'value').toString('hex')).not.toBe(a);
    expect(sealer.mac('p1', 'webhooks', 'value').toString('hex')).not.toBe(a);
    expect(sealer.mac('p1', 'secrets', 'value2').toString('hex')).not.toBe(a);
    expect(new Sealer(Buffer.alloc(32, 8)).mac('p1', 'secrets', 'value').toString('hex')).not.toBe(a);
  });
});

describe('FlagsView (the cached evaluation)', () => {
  const row = (key: string, value: string, rollout: number, enabled = 1) => ({ key, value, default_value: 'false', enabled, rollout, description: null, updated_at: 'x' });

  it('answers every user right past its per-user cache (1,500 users, twice)', () => {
    const view = new FlagsView([row('a', 'true', 30), row('b', '"on"', 100), row('c', '1', 50, 0)]);
    expect(view.evaluate(null)).toBe('{"flags":{"a":false,"b":"on","c":false}}');
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 1500; i++) {
        const id = `u${i}`;
        expect(view.evaluate(id)).toBe(`{"flags":{"a":${bucketOf('a', id) < 3000},"b":"on","c":false}}`);
      }
    }
  });

  it('answers the same text for every user when no flag is under a partial rollout', () => {
    const view = new FlagsView([row('x', '{"k":[1,2]}', 100), row('y', '2', 0)]);
    expect(view.evaluate('anyone')).toBe('{"flags":{"x":{"k":[1,2]},"y":false}}');
    expect(view.evaluate(null)).toBe(view.evaluate('someone else'));
    expect(new FlagsView([]).evaluate('u')).toBe('{"flags":{}}');
  });
});
