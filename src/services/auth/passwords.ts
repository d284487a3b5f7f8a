import type { Options } from '@node-rs/argon2';
import { argon2 } from '../../control/argon2.js';

/**
 * argon2id with the OWASP Password Storage Cheat Sheet baseline: 19 MiB, 2 passes,
 * 1 lane, 32-byte output, 16-byte random salt. Hashing runs on libuv's thread pool
 * (the async API), so the event loop stays responsive.
 */
export const ARGON2: Options = {
  algorithm: 2, // note: Algorithm.Argon2id; the enum is a `const enum` that isolatedModules cannot inline.
  memoryCost: 19_456,
  timeCost: 2,
  parallelism: 1,
  outputLen: 32,
};

export const hashPassword = async (password: string): Promise<string> => (await argon2()).hash(password, ARGON2);

let dummy: Promise<string> | null = null;

/**
 * Checks a password against a stored hash. With no hash (unknown e-mail, or a user
 * without a password) it verifies against a dummy hash of the same cost, so both
 * answers take about as long.
 */
export async function checkPassword(stored: string | null, password: string): Promise<boolean> {
  const { hash, verify } = await argon2();
  if (stored === null) {
    dummy ??= hash('dummy password for timing', ARGON2);
    await verify(await dummy, password).catch(() => false);
    return false;
  }
  try {
    return await verify(stored, password);
  } catch {
    return false;
  }
}
