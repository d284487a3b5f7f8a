import { createHash } from 'node:crypto';
import { constants, lstatSync, mkdirSync, openSync, closeSync, fsyncSync, statSync } from 'node:fs';
import { lstat, open, opendir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { v7 as uuidv7 } from 'uuid';
import { EdgeError } from '../../core/errors.js';

/** What `put` stored: the file's ref (its name), its size and its SHA-256 (hex). */
export interface StoredObject {
  readonly ref: string;
  readonly size: number;
  readonly sha256: string;
}

/** An inclusive byte range, as `Range: bytes=first-last` names it. */
export interface ByteRange {
  readonly first: number;
  readonly last: number;
}

/**
 * Why a `put` stops reading: its limit (the smallest of the bucket's, the server's and the
 * project's remaining quota) and the error to throw past it (413 `payload_too_large` or
 * `quota_exceeded`).
 */
export interface PutLimit {
  readonly bytes: number;
  readonly error: () => EdgeError;
}

/**
 * Where object bytes live (DESIGN.md §8: S3-compatible later, behind this interface). A key never
 * reaches a store: files are named by refs the store makes. `put` leaves nothing behind when it
 * fails (over the limit, the body aborted, the disk full); the caller deletes a ref it stored but
 * could not commit.
 */
export interface ObjectStore {
  /** Streams a body to a new file: temp file, fsync, rename; then it is durable under `ref`. */
  put(projectId: string, body: AsyncIterable<Uint8Array>, limit: PutLimit): Promise<StoredObject>;
  /** The stored file's bytes (a range of them), as a stream. */
  get(projectId: string, ref: string, range?: ByteRange): AsyncIterable<Uint8Array>;
  /** A local path to the file, when the store has one (then reads go out as file answers, with ranges). */
  path(projectId: string, ref: string): string | null;
  /** Removes a stored file; a missing one is no error. */
  delete(projectId: string, ref: string): Promise<void>;
  /** Forgets what it knows of a deleted project (its folder is removed with the project's). */
  forget(projectId: string): void;
}

const REF = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const PROJECT = /^[A-Za-z0-9_-]{1,64}$/;

/** Files on the local disk under `<dataDir>/projects/<project>/objects/<ref>`, temp files in `objects/.tmp/`. */
export class LocalObjectStore implements ObjectStore {
  readonly #dataDir: string;
  /** Projects whose objects folder was checked (a real directory, not a symlink). */
  readonly #ready = new Set<string>();

  constructor(dataDir: string) {
    this.#dataDir = dataDir;
  }

  #dir(projectId: string): string {
    if (!PROJECT.test(projectId)) throw new EdgeError('internal', `not a project id: ${projectId}`);
    return join(this.#dataDir, 'projects', projectId, 'objects');
  }

  /** The objects folder and its temp folder, created on first use; a symlink planted in their place is refused. */
  #prepare(projectId: string): string {
    const dir = this.#dir(projectId);
    if (this.#ready.has(projectId)) return dir;
    for (const d of [dir, join(dir, '.tmp')]) {
      mkdirSync(d, { recursive: true, mode: 0o700 });
      if (!lstatSync(d).isDirectory()) throw new EdgeError('internal', `${d} is not a directory (a symlink?)`);
    }
    this.#ready.add(projectId);
    return dir;
  }

  path(projectId: string, ref: string): string | null {
    if (!REF.test(ref)) throw new EdgeError('internal', `not an object ref: ${ref}`);
    return join(this.#dir(projectId), ref);
  }

  async put(projectId: string, body: AsyncIterable<Uint8Array>, limit: PutLimit): Promise<StoredObject> {
    const dir = this.#prepare(projectId);
    const ref = uuidv7();
    const tmp = join(dir, '.tmp', ref);
    // note: O_EXCL|O_NOFOLLOW: never writes through anything planted under that name.
    const fh = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600).catch((err: unknown) => {
      throw diskError(err);
    });
    const hash = createHash('sha256');
    let size = 0;
    let closed = false;
    try {
      for await (const chunk of body) {
        size += chunk.length;
        if (size > limit.bytes) throw limit.error();
        hash.update(chunk);
        // note: awaiting the write before taking the next chunk is the backpressure: the body
        // stream pauses the socket while its queue is full (src/http/body-stream.ts).
        let off = 0;
        while (off < chunk.length) {
          const { bytesWritten } = await fh.write(chunk, off, chunk.length - off).catch((err: unknown) => {
            throw diskError(err);
          });
          off += bytesWritten;
        }
      }
      await fh.sync().catch((err: unknown) => {
        throw diskError(err);
      });
      closed = true;
      await fh.close();
      await rename(tmp, join(dir, ref));
      syncDir(dir);
      return { ref, size, sha256: hash.digest('hex') };
    } catch (err) {
      if (!closed) await fh.close().catch(() => {});
      await rm(tmp, { force: true }).catch(() => {});
      throw err;
    }
  }

  async *get(projectId: string, ref: string, range?: ByteRange): AsyncIterable<Uint8Array> {
    const p = this.path(projectId, ref)!;
    const fh = await open(p, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      const stream = fh.createReadStream({ start: range?.first, end: range?.last, highWaterMark: 64 * 1024, autoClose: false });
      for await (const chunk of stream) yield chunk as Buffer;
    } finally {
      await fh.close();
    }
  }

  async delete(projectId: string, ref: string): Promise<void> {
    await rm(this.path(projectId, ref)!, { force: true });
  }

  /**
   * Removes temp files a crash left in `objects/.tmp/`: plain files last written before
   * `before` (epoch ms). An upload in flight writes its temp file as bytes arrive, so only a
   * dead one is that old. Looks at most `max` entries per call (the rest waits for the next).
   */
  async sweepTemp(projectId: string, before: number, max = 1000): Promise<number> {
    const tmp = join(this.#dir(projectId), '.tmp');
    const dir = await opendir(tmp).catch(() => null);
    if (dir === null) return 0;
    let seen = 0;
    let removed = 0;
    try {
      for await (const e of dir) {
        if (++seen > max) break;
        if (!e.isFile()) continue;
        const st = await lstat(join(tmp, e.name)).catch(() => null);
        if (st === null || st.mtimeMs >= before) continue;
        await rm(join(tmp, e.name), { force: true });
        removed++;
      }
    } finally {
      await dir.close().catch(() => {});
    }
    return removed;
  }

  forget(projectId: string): void {
    this.#ready.delete(projectId);
  }

  /** Bytes of a stored file (for checks; the metadata row is the source of truth). */
  sizeOf(projectId: string, ref: string): number {
    return statSync(this.path(projectId, ref)!).size;
  }
}

/** A full disk (or a quota of the file system) is 507; anything else stays internal. */
function diskError(err: unknown): unknown {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT') return new EdgeError('insufficient_storage', 'the disk is full; the object was not stored', { cause: err });
  return err;
}

/** Makes a rename durable: fsync of the folder that holds the new name. */
function syncDir(dir: string): void {
  let fd: number | null = null;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // note: some file systems refuse fsync on a folder; the file itself is already synced.
  } finally {
    if (fd !== null) closeSync(fd);
  }
}
