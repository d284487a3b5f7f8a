/**
 * `@node-rs/argon2`, loaded on first use: its loader costs about 15 ms and 8 MB (it may run
 * `ldd --version` to tell musl from glibc), which a server that hashes no password before its
 * first sign-up or login need not pay at startup (docs/benchmarks.md "Status"). Every caller
 * hashes or verifies asynchronously anyway.
 */
type Argon2 = typeof import('@node-rs/argon2');

let loading: Promise<Argon2> | null = null;

export function argon2(): Promise<Argon2> {
  loading ??= import('@node-rs/argon2');
  return loading;
}
