import { createCipheriv, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Sealer, deriveSealKey, type SealPurpose } from '../../src/control/seal.js';

const master = randomBytes(32);
const sealer = new Sealer(master);
const FORMAT = /^v2\.[\w-]{16}\.[\w-]{22}\.[\w-]*$/;
const NOT_OPEN = /does not open: it was sealed for another project, purpose or name, altered, or sealed under another master key$/;

/** The format versions before v2 wrote: AES-256-GCM directly under the master key, no additional data. */
function sealV1(key: Buffer, plain: string): string {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
  return ['v1', iv, c.getAuthTag(), body].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
}

const noReseal = (v: string): never => {
  throw new Error(`unexpected reseal to ${v}`);
};

describe('Sealer', () => {
  it('seals to v2 with a fresh nonce each time, and opens what it sealed', () => {
    const a = sealer.seal('proj1', 'jwt', 'jwt_secret', 'the plain secret');
    const b = sealer.seal('proj1', 'jwt', 'jwt_secret', 'the plain secret');
    expect(a).toMatch(FORMAT);
    expect(b).toMatch(FORMAT);
    expect(a).not.toBe(b);
    expect(a).not.toContain(Buffer.from('the plain secret').toString('base64url'));
    expect(sealer.open('proj1', 'jwt', 'jwt_secret', a, noReseal)).toBe('the plain secret');
    expect(sealer.open('proj1', 'jwt', 'jwt_secret', b, noReseal)).toBe('the plain secret');
    const empty = sealer.seal('proj1', 'secrets', 'EMPTY', '');
    expect(sealer.open('proj1', 'secrets', 'EMPTY', empty, noReseal)).toBe('');
    const unicode = 'clé ✓ 🔑';
    expect(sealer.open('p', 'webhooks', 'hook_1', sealer.seal('p', 'webhooks', 'hook_1', unicode), noReseal)).toBe(unicode);
  });

  it('another Sealer on the same master key opens it; one on another master key does not', () => {
    const sealed = sealer.seal('proj1', 'secrets', 'API_TOKEN', 'x');
    expect(new Sealer(Buffer.from(master)).open('proj1', 'secrets', 'API_TOKEN', sealed, noReseal)).toBe('x');
    expect(() => new Sealer(randomBytes(32)).open('proj1', 'secrets', 'API_TOKEN', sealed, noReseal)).toThrow(NOT_OPEN);
  });

  it('a value copied to another project, purpose or name (row) does not open, with a clear error', () => {
    const sealed = sealer.seal('proj1', 'secrets', 'API_TOKEN', 'x');
    expect(() => sealer.open('proj2', 'secrets', 'API_TOKEN', sealed, noReseal)).toThrow(
      'the sealed secrets value "API_TOKEN" of project proj2 does not open: it was sealed for another project, purpose or name, altered, or sealed under another master key',
    );
    expect(() => sealer.open('proj1', 'webhooks', 'API_TOKEN', sealed, noReseal)).toThrow(NOT_OPEN);
    expect(() => sealer.open('proj1', 'secrets', 'OTHER_TOKEN', sealed, noReseal)).toThrow(NOT_OPEN);
    // the parts are joined unambiguously: moving a character between project and name changes the data
    const joined = sealer.seal('ab', 'secrets', 'c', 'x');
    expect(() => sealer.open('a', 'secrets', 'bc', joined, noReseal)).toThrow(NOT_OPEN);
  });

  it('a tampered nonce, tag or ciphertext does not open', () => {
    const sealed = sealer.seal('proj1', 'storage', 'bucket/a', 'some longer plaintext');
    const [v, nonce, tag, body] = sealed.split('.') as [string, string, string, string];
    const flip = (s: string): string => {
      const b = Buffer.from(s, 'base64url');
      b[0]! ^= 1;
      return b.toString('base64url');
    };
    for (const bad of [[v, flip(nonce), tag, body], [v, nonce, flip(tag), body], [v, nonce, tag, flip(body)], [v, nonce, tag, body.slice(0, -2)]]) {
      expect(() => sealer.open('proj1', 'storage', 'bucket/a', bad.join('.'), noReseal)).toThrow(NOT_OPEN);
    }
  });

  it('a value in no known format is an error naming the record', () => {
    for (const bad of ['', 'plain', 'v3.a.b.c', 'v2.a.b', 'v2.a.b.c.d', 'v2..AAAAAAAAAAAAAAAAAAAAAA.x', 'v2.AAAAAAAAAAAAAAAA.short.x']) {
      expect(() => sealer.open('proj1', 'jwt', 'jwt_secret', bad, noReseal)).toThrow('the sealed jwt value "jwt_secret" of project proj1 has an unknown format');
    }
  });

  it('an old v1 value (sealed under the master key itself) opens, and is handed back resealed as v2', () => {
    const v1 = sealV1(master, 'legacy secret');
    const resealed: string[] = [];
    expect(sealer.open('proj1', 'jwt', 'jwt_secret', v1, (v) => resealed.push(v))).toBe('legacy secret');
    expect(resealed).toHaveLength(1);
    expect(resealed[0]).toMatch(FORMAT);
    // the new form opens only where it was resealed
    expect(sealer.open('proj1', 'jwt', 'jwt_secret', resealed[0]!, noReseal)).toBe('legacy secret');
    expect(() => sealer.open('proj2', 'jwt', 'jwt_secret', resealed[0]!, noReseal)).toThrow(NOT_OPEN);
    // a v1 value under another master key, or altered, does not open and is not resealed
    expect(() => sealer.open('proj1', 'jwt', 'jwt_secret', sealV1(randomBytes(32), 'x'), noReseal)).toThrow(NOT_OPEN);
    expect(() => sealer.open('proj1', 'jwt', 'jwt_secret', v1.slice(0, -2), noReseal)).toThrow(NOT_OPEN);
  });

  it('derives a distinct 32-byte key per (project, purpose), stable for the same master key', () => {
    const purposes: SealPurpose[] = ['jwt', 'keys', 'secrets', 'webhooks', 'storage', 'functions'];
    const keys = new Set<string>();
    for (const project of ['proj1', 'proj2', 'proj10']) {
      for (const purpose of purposes) {
        const k = deriveSealKey(master, project, purpose);
        expect(k).toHaveLength(32);
        expect(deriveSealKey(Buffer.from(master), project, purpose).equals(k)).toBe(true);
        keys.add(k.toString('hex'));
      }
    }
    keys.add(master.toString('hex'));
    keys.add(deriveSealKey(randomBytes(32), 'proj1', 'jwt').toString('hex'));
    expect(keys.size).toBe(3 * purposes.length + 2);
  });

  it('refuses an empty project or name, and a master key that is not 32 bytes', () => {
    expect(() => sealer.seal('', 'jwt', 'jwt_secret', 'x')).toThrow('a sealed value needs a non-empty project');
    expect(() => sealer.seal('proj1', 'jwt', '', 'x')).toThrow('a sealed value needs a non-empty name');
    expect(() => new Sealer(randomBytes(16))).toThrow('the master key must be 32 bytes');
  });
});
