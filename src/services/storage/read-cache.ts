import { readFileSync } from 'node:fs';
import type { ReadableObject } from './storage.js';

/** Objects this small are kept in memory once read (their files never change: a ref is written once). */
export const SMALL_OBJECT_BYTES = 64 * 1024;
const BYTES_CAP = 32 * 1024 * 1024;
const OBJECTS_CAP = 10_000;

/**
 * What public reads by short id need, kept in memory: the object a short id names (dropped by
 * every write that changes it: overwrite, delete, bucket delete, project delete), and the bytes
 * of small files by ref (immutable, so never stale; dropped when the file is deleted). Both are
 * bounded and evict the oldest entry first.
 */
export class ReadCache {
  readonly #objects = new Map<string, ReadableObject>();
  readonly #bytes = new Map<string, Buffer>();
  #byteTotal = 0;

  object(shortId: string): ReadableObject | undefined {
    return this.#objects.get(shortId);
  }

  keepObject(shortId: string, o: ReadableObject): void {
    if (this.#objects.size >= OBJECTS_CAP) this.#objects.delete(this.#objects.keys().next().value!);
    this.#objects.set(shortId, o);
  }

  forgetObject(shortId: string): void {
    this.#objects.delete(shortId);
  }

  /** Drops everything (a bucket or project deleted: rare, and never wrong). */
  clear(): void {
    this.#objects.clear();
    this.#bytes.clear();
    this.#byteTotal = 0;
  }

  /** The bytes of a small file, read once (synchronously: at most SMALL_OBJECT_BYTES); null for larger files. */
  bytes(ref: string, path: string, size: number): Buffer | null {
    if (size > SMALL_OBJECT_BYTES) return null;
    let b = this.#bytes.get(ref);
    if (b !== undefined) return b;
    b = readFileSync(path);
    if (b.length !== size) return null;
    while (this.#byteTotal + b.length > BYTES_CAP && this.#bytes.size > 0) {
      const [k, v] = this.#bytes.entries().next().value!;
      this.#bytes.delete(k);
      this.#byteTotal -= v.length;
    }
    this.#bytes.set(ref, b);
    this.#byteTotal += b.length;
    return b;
  }

  forgetBytes(ref: string): void {
    const b = this.#bytes.get(ref);
    if (b === undefined) return;
    this.#bytes.delete(ref);
    this.#byteTotal -= b.length;
  }
}
