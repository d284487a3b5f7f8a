import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { Sealer } from '../../src/control/seal.js';
import { ProjectRegistry } from '../../src/project/registry.js';
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
  const secrets = new SecretsService(new Sealer(randomBytes(32)), () => Date.UTC(2026, 0, 2, 3, 4, 5));
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
  return { secrets, use, editFile, sealed };
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
