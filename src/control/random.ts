import { createHash, randomInt, timingSafeEqual } from 'node:crypto';

// Random secrets (API keys, tokens, ids) and the digests they are stored under.

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `n` characters drawn uniformly from base62 by a CSPRNG. */
export function randomBase62(n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += BASE62[randomInt(62)];
  return s;
}

export const sha256Hex = (s: string): string => createHash('sha256').update(s).digest('hex');

/** Constant-time equality of two hex digests of the same algorithm. */
export function digestEquals(a: string, b: string): boolean {
  const ba = Buffer.from(a, 'hex');
  const bb = Buffer.from(b, 'hex');
  return ba.length === bb.length && timingSafeEqual(ba, bb);
}
