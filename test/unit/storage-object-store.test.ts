import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import type * as FsPromises from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { EdgeError } from '../../src/core/errors.js';
import type { LocalObjectStore } from '../../src/services/storage/object-store.js';

// The local ObjectStore (src/services/storage/object-store.ts): temp file → fsync → rename, limits,
// failures leave nothing behind, ranges, and a full disk mapped to 507.

/** When set, every file write fails with this errno code (a full disk, without filling one). */
const fault = vi.hoisted(() => ({ code: null as string | null }));
vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof FsPromises>();
  return {
    ...real,
    open: async (...args: Parameters<typeof real.open>) => {
      const fh = await real.open(...args);
      const write = fh.write.bind(fh) as (...a: unknown[]) => Promise<{ bytesWritten: number }>;
      (fh as unknown as { write: unknown }).write = (...a: unknown[]) => {
        if (fault.code !== null) return Promise.reject(Object.assign(new Error(`${fault.code}: injected`), { code: fault.code }));
        return write(...a);
      };
      return fh;
    },
  };
});

const PROJECT = 'p1';
let dir: string;
let store: LocalObjectStore;
const limit = (bytes: number) => ({ bytes, error: () => new EdgeError('payload_too_large', 'too big') });
const objects = (): string => join(dir, 'projects', PROJECT, 'objects');
const tmp = (): string[] => readdirSync(join(objects(), '.tmp'));
const stored = (): string[] => readdirSync(objects()).filter((f) => f !== '.tmp');

async function* chunks(...parts: (string | Error)[]): AsyncGenerator<Uint8Array> {
  for (const p of parts) {
    if (p instanceof Error) throw p;
    yield Buffer.from(p);
  }
}

async function collect(it: AsyncIterable<Uint8Array>): Promise<string> {
  const out: Buffer[] = [];
  for await (const c of it) out.push(Buffer.from(c));
  return Buffer.concat(out).toString();
}

beforeAll(async () => {
  // note: the store is imported afresh, after the mock above is in place: the unit project runs its
  // files in one process (vitest.config.ts, `isolate: false`), where an earlier file may already have
  // loaded the store with the real node:fs/promises.
  vi.resetModules();
  const { LocalObjectStore } = await import('../../src/services/storage/object-store.js');
  dir = mkdtempSync(join(tmpdir(), 'pe-objstore-'));
  store = new LocalObjectStore(dir);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('LocalObjectStore', () => {
  it('stores a stream under a UUIDv7 ref with its size and SHA-256, leaving no temp file', async () => {
    const r = await store.put(PROJECT, chunks('hello ', 'world'), limit(100));
    expect(r.ref).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(r.size).toBe(11);
    expect(r.sha256).toBe(createHash('sha256').update('hello world').digest('hex'));
    expect(readFileSync(store.path(PROJECT, r.ref)!, 'utf8')).toBe('hello world');
    expect(tmp()).toEqual([]);
    expect(await collect(store.get(PROJECT, r.ref))).toBe('hello world');
    expect(await collect(store.get(PROJECT, r.ref, { first: 6, last: 10 }))).toBe('world');
    await store.delete(PROJECT, r.ref);
    expect(existsSync(store.path(PROJECT, r.ref)!)).toBe(false);
    await store.delete(PROJECT, r.ref);
  });

  it('stops past the limit with the limit error and keeps nothing', async () => {
    const before = stored();
    await expect(store.put(PROJECT, chunks('12345', '67890', 'x'), limit(10))).rejects.toMatchObject({ code: 'payload_too_large' });
    expect(tmp()).toEqual([]);
    expect(stored()).toEqual(before);
  });

  it('a body that fails mid-way (the client went) keeps nothing and rethrows', async () => {
    const before = stored();
    await expect(store.put(PROJECT, chunks('abc', new Error('client gone')), limit(100))).rejects.toThrow('client gone');
    expect(tmp()).toEqual([]);
    expect(stored()).toEqual(before);
  });

  it('a full disk is 507 insufficient_storage, nothing kept', async () => {
    const before = stored();
    fault.code = 'ENOSPC';
    try {
      await expect(store.put(PROJECT, chunks('abc'), limit(100))).rejects.toMatchObject({ code: 'insufficient_storage', status: 507 });
    } finally {
      fault.code = null;
    }
    expect(tmp()).toEqual([]);
    expect(stored()).toEqual(before);
  });

  it('refuses refs it did not make, and a symlink planted as a project objects folder', async () => {
    expect(() => store.path(PROJECT, '../../etc/passwd')).toThrow();
    const other = 'p2';
    const target = mkdtempSync(join(tmpdir(), 'pe-objstore-out-'));
    try {
      const { mkdirSync } = await import('node:fs');
      mkdirSync(join(dir, 'projects', other), { recursive: true });
      symlinkSync(target, join(dir, 'projects', other, 'objects'));
      await expect(store.put(other, chunks('x'), limit(10))).rejects.toThrow(/not a directory/);
      expect(readdirSync(target)).toEqual([]);
    } finally {
      rmSync(target, { recursive: true, force: true });
    }
  });
});
