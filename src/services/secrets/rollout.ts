import { createHash } from 'node:crypto';

/** Rollout buckets per flag: a percentage p lets in the users whose bucket is below p × 100. */
export const BUCKETS = 10_000;

/**
 * A user's bucket for a flag, 0..9999: SHA-256 of `<key>:<user_id>` (UTF-8), read as an
 * unsigned big-endian 256-bit integer, mod 10,000. Fixed per (flag, user), so a user who is
 * in at some percentage stays in as the percentage grows (docs/api.md "Flags").
 */
export function bucketOf(key: string, userId: string): number {
  const digest = createHash('sha256').update(`${key}:${userId}`, 'utf8').digest();
  let r = 0;
  // note: Horner's rule mod 10,000 over the 32 bytes: r stays below 2^24, exact in a double.
  for (let i = 0; i < digest.length; i++) r = (r * 256 + digest[i]!) % BUCKETS;
  return r;
}

/** Whether a user is inside a flag's rollout (a whole percentage 0-100). */
export function inRollout(key: string, userId: string, rollout: number): boolean {
  if (rollout >= 100) return true;
  if (rollout <= 0) return false;
  return bucketOf(key, userId) < rollout * 100;
}
