import { createHash } from 'node:crypto';
import { constants, createReadStream } from 'node:fs';
import { mkdir, open, rename, rm, readdir, lstat, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { v7 as uuidv7 } from 'uuid';
import { randomBase62 } from '../../control/random.js';
import { EdgeError, invalidField, notFound } from '../../core/errors.js';
import type { ProjectLease } from '../../project/registry.js';
import { uploadStore, type PartRow, type UploadRow } from './upload-store.js';

export const MiB = 1024 * 1024;
/** Multipart (docs/api.md "Multipart and TUS"): part sizes and count. */
export const MIN_PART_SIZE = 5 * MiB;
export const MAX_PART_SIZE = 64 * MiB;
export const DEFAULT_PART_SIZE = 8 * MiB;
export const MAX_PARTS = 10_000;

const UPLOAD_ID = /^[0-9A-Za-z]{24}$/;
const PROJECT = /^[A-Za-z0-9_-]{1,64}$/;

/** Who acts (the storage core's `Caller`). */
export interface UploadCaller {
  readonly serviceRole: boolean;
  readonly userId: string | null;
}

export interface StoredBytes {
  readonly ref: string;
  readonly size: number;
  readonly sha256: string;
}

/**
 * What uploads need of the storage core (StorageService): judging an upload before a byte is
 * read, committing an object for bytes already stored under a ref, and where refs live.
 */
export interface UploadTarget {
  planUpload(
    p: ProjectLease,
    caller: UploadCaller,
    bucket: string,
    key: string,
    contentType: string,
    declared: number | null,
  ): { readonly bucket: { readonly name: string }; readonly key: string; readonly contentType: string; readonly limit: { readonly bytes: number; readonly error: () => EdgeError } };
  commitObject(
    p: ProjectLease,
    caller: UploadCaller,
    o: { bucket: string; key: string; contentType: string; stored: StoredBytes },
    baseUrl: string,
  ): Promise<{ record: unknown; created: boolean }>;
  readonly files: {
    path(projectId: string, ref: string): string | null;
    put(projectId: string, body: AsyncIterable<Uint8Array>, limit: { bytes: number; error: () => EdgeError }): Promise<StoredBytes>;
  };
}

export interface MultipartStarted {
  upload_id: string;
  part_size: number;
  expires_at: string;
}

export interface PartReceived {
  part: number;
  size: number;
  etag: string;
}

export interface UploadInfo {
  upload_id: string;
  bucket: string;
  key: string;
  content_type: string;
  part_size: number;
  expires_at: string;
  parts: PartReceived[];
}

/** A TUS upload's state as HEAD and PATCH report it. */
export interface TusState {
  readonly id: string;
  readonly offset: number;
  readonly length: number;
  readonly expiresAt: string;
  /** The object record once the last byte arrived (the PATCH that completed it). */
  readonly record?: unknown;
}

/**
 * Unfinished uploads that end as one object: multipart (numbered parts, each streamed to its
 * offset in one file) and TUS 1.0 (one growing offset). Bytes live in
 * `projects/<id>/uploads/<upload_id>`; completion hashes the file, moves it under a fresh object
 * ref and commits the record through the storage core. Unfinished uploads expire (default 24 h):
 * an expired one is 404 and its file is removed by the next sweep of its project.
 */
export class UploadService {
  readonly #dataDir: string;
  readonly #target: UploadTarget;
  readonly #expiryS: number;
  readonly #now: () => number;
  /** Part writes in flight per upload (completion waits for none); a TUS PATCH holds its upload alone. */
  readonly #writing = new Map<string, number>();
  readonly #locked = new Set<string>();
  /** Uploads whose file exists but whose row is not yet written (a sweep leaves their file alone). */
  readonly #creating = new Set<string>();

  constructor(dataDir: string, target: UploadTarget, opts: { expiryS?: number; now?: () => number } = {}) {
    this.#dataDir = dataDir;
    this.#target = target;
    this.#expiryS = opts.expiryS ?? 86_400;
    this.#now = opts.now ?? Date.now;
  }

  #dir(projectId: string): string {
    if (!PROJECT.test(projectId)) throw new EdgeError('internal', `not a project id: ${projectId}`);
    return join(this.#dataDir, 'projects', projectId, 'uploads');
  }
  #file(projectId: string, id: string): string {
    return join(this.#dir(projectId), id);
  }

  /** Begins an upload: its row and its (empty) file, after the storage core judged bucket, key, type and caller. */
  async #begin(p: ProjectLease, caller: UploadCaller, row: Omit<UploadRow, 'id' | 'created_at' | 'expires_at' | 'owner' | 'received'>): Promise<UploadRow> {
    await this.sweep(p);
    const dir = this.#dir(p.projectId);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    if (!(await lstat(dir)).isDirectory()) throw new EdgeError('internal', 'the uploads folder is not a directory');
    const now = this.#now();
    const full: UploadRow = {
      ...row,
      id: randomBase62(24),
      owner: caller.userId,
      received: 0,
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + this.#expiryS * 1000).toISOString(),
    };
    const tag = `${p.projectId}/${full.id}`;
    this.#creating.add(tag);
    try {
      const fh = await open(this.#file(p.projectId, full.id), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600).catch(
        (err: unknown) => {
          throw diskError(err);
        },
      );
      await fh.close();
      try {
        uploadStore.insert(p, full);
      } catch (err) {
        await rm(this.#file(p.projectId, full.id), { force: true });
        throw err;
      }
    } finally {
      this.#creating.delete(tag);
    }
    return full;
  }

  /** The caller's unexpired upload of this kind, or 404. */
  #get(p: ProjectLease, caller: UploadCaller, id: string, kind: UploadRow['kind']): UploadRow {
    const row = UPLOAD_ID.test(id) ? uploadStore.get(p, id) : undefined;
    if (row === undefined || row.kind !== kind || Date.parse(row.expires_at) <= this.#now() || (!caller.serviceRole && row.owner !== caller.userId)) {
      throw notFound('upload', id);
    }
    return row;
  }

  /**
   * Removes expired uploads of a project (rows and files), at most `max` per call, and files
   * whose row is gone. Runs when an upload starts and from the storage housekeeping
   * (housekeeping.ts: as the project opens, and on the maintenance timer).
   */
  async sweep(p: ProjectLease, max = 1000): Promise<number> {
    const ids = uploadStore.expired(p, new Date(this.#now()).toISOString(), max);
    for (const id of ids) {
      if (this.#locked.has(`${p.projectId}/${id}`) || this.#writing.has(`${p.projectId}/${id}`)) continue;
      uploadStore.delete(p, id);
      await rm(this.#file(p.projectId, id), { force: true });
    }
    const names = await readdir(this.#dir(p.projectId)).catch(() => [] as string[]);
    for (const n of names) {
      const tag = `${p.projectId}/${n}`;
      if (UPLOAD_ID.test(n) && !this.#creating.has(tag) && !this.#locked.has(tag) && !uploadStore.exists(p, n)) await rm(this.#file(p.projectId, n), { force: true });
    }
    return ids.length;
  }

  // --- multipart

  /** POST /storage/multipart `{bucket, key, content_type?, part_size?}`. */
  async startMultipart(p: ProjectLease, caller: UploadCaller, body: Record<string, unknown>, keyOf: (raw: string) => string): Promise<MultipartStarted> {
    if (typeof body.bucket !== 'string') throw invalidField('bucket', 'must be a string');
    if (typeof body.key !== 'string') throw invalidField('key', 'must be a string');
    const ct = body.content_type ?? 'application/octet-stream';
    if (typeof ct !== 'string' || !/^[\w!#$&^.+-]+\/[\w!#$&^.+-]+(\s*;.*)?$/.test(ct) || ct.length > 255) throw invalidField('content_type', 'must be a media type');
    const ps = body.part_size ?? DEFAULT_PART_SIZE;
    if (typeof ps !== 'number' || !Number.isInteger(ps) || ps < MIN_PART_SIZE || ps > MAX_PART_SIZE) {
      throw invalidField('part_size', `must be an integer from ${MIN_PART_SIZE} to ${MAX_PART_SIZE} (bytes)`);
    }
    const plan = this.#target.planUpload(p, caller, body.bucket, keyOf(body.key), ct, null);
    const row = await this.#begin(p, caller, { kind: 'multipart', bucket: plan.bucket.name, key: plan.key, content_type: plan.contentType, part_size: ps, length: null });
    return { upload_id: row.id, part_size: ps, expires_at: row.expires_at };
  }

  /** PUT /storage/multipart/{id}/{part}: the body streamed to (part-1) x part_size in the upload's file. */
  async putPart(p: ProjectLease, caller: UploadCaller, id: string, partText: string, body: AsyncIterable<Uint8Array>, declared: number | null): Promise<PartReceived> {
    const row = this.#get(p, caller, id, 'multipart');
    if (!/^[1-9][0-9]{0,4}$/.test(partText) || Number(partText) > MAX_PARTS) throw invalidField('part', `must be an integer from 1 to ${MAX_PARTS}`);
    const part = Number(partText);
    const partSize = row.part_size!;
    const offset = (part - 1) * partSize;
    // note: the bucket, type, who may overwrite and the byte limit are judged again: time passed since the start.
    const plan = this.#target.planUpload(p, caller, row.bucket, row.key, row.content_type, null);
    const max = Math.min(partSize, Math.max(0, plan.limit.bytes - offset));
    const tooLarge = (): EdgeError =>
      max < partSize ? plan.limit.error() : new EdgeError('payload_too_large', `a part may have at most part_size (${partSize}) bytes`);
    if (declared !== null && declared > max) throw tooLarge();
    const k = `${p.projectId}/${id}`;
    if (this.#locked.has(k)) throw new EdgeError('conflict', 'the upload is being completed or aborted');
    this.#writing.set(k, (this.#writing.get(k) ?? 0) + 1);
    try {
      const w = { n: 0 };
      const sha = await writeAt(this.#file(p.projectId, id), body, offset, max, tooLarge, w);
      if (w.n === 0) throw invalidField('body', 'a part may not be empty');
      const etag = `"${sha}"`;
      // note: the row may be gone (aborted meanwhile): then the part is not recorded.
      if (!uploadStore.exists(p, id)) throw notFound('upload', id);
      uploadStore.putPart(p, id, { part, size: w.n, etag });
      return { part, size: w.n, etag };
    } finally {
      const n = this.#writing.get(k)! - 1;
      if (n === 0) this.#writing.delete(k);
      else this.#writing.set(k, n);
    }
  }

  /** GET /storage/multipart/{id}: the upload and its received parts. */
  info(p: ProjectLease, caller: UploadCaller, id: string): UploadInfo {
    const row = this.#get(p, caller, id, 'multipart');
    const parts = uploadStore.parts(p, id).map((r: PartRow) => ({ part: r.part, size: r.size, etag: r.etag }));
    return { upload_id: id, bucket: row.bucket, key: row.key, content_type: row.content_type, part_size: row.part_size!, expires_at: row.expires_at, parts };
  }

  /** POST /storage/multipart/{id}/complete: parts 1..N, all but the last exactly part_size, become the object. */
  async completeMultipart(p: ProjectLease, caller: UploadCaller, id: string, baseUrl: string): Promise<{ record: unknown; created: boolean }> {
    const row = this.#get(p, caller, id, 'multipart');
    const k = `${p.projectId}/${id}`;
    if (this.#writing.has(k) || this.#locked.has(k)) throw new EdgeError('conflict', 'parts of this upload are still being written, or it is being completed');
    const parts = uploadStore.parts(p, id);
    if (parts.length === 0) throw new EdgeError('invalid_request', 'the upload has no parts');
    let total = 0;
    for (let i = 0; i < parts.length; i++) {
      const r = parts[i]!;
      if (r.part !== i + 1) throw new EdgeError('invalid_request', `part ${i + 1} is missing`, { details: { part: i + 1 } });
      if (i < parts.length - 1 && r.size !== row.part_size) {
        throw new EdgeError('invalid_request', `part ${r.part} has ${r.size} bytes; every part but the last must have part_size (${row.part_size}) bytes`, {
          details: { part: r.part },
        });
      }
      total += r.size;
    }
    return this.#finish(p, caller, row, total, baseUrl);
  }

  /** DELETE /storage/multipart/{id} (and TUS termination): the row and the file go. */
  async abort(p: ProjectLease, caller: UploadCaller, id: string, kind: UploadRow['kind']): Promise<void> {
    this.#get(p, caller, id, kind);
    const k = `${p.projectId}/${id}`;
    if (this.#locked.has(k)) throw new EdgeError('conflict', 'the upload is being completed');
    uploadStore.delete(p, id);
    await rm(this.#file(p.projectId, id), { force: true });
  }

  /** Moves a finished upload's file under a fresh object ref and commits the object; the upload ends either way. */
  async #finish(p: ProjectLease, caller: UploadCaller, row: UploadRow, total: number, baseUrl: string): Promise<{ record: unknown; created: boolean }> {
    const k = `${p.projectId}/${row.id}`;
    this.#locked.add(k);
    const file = this.#file(p.projectId, row.id);
    try {
      const fh = await open(file, constants.O_RDWR | constants.O_NOFOLLOW);
      try {
        // note: a re-sent shorter last part leaves bytes past the end; they are not the object's.
        await fh.truncate(total);
        await fh.sync();
      } finally {
        await fh.close();
      }
      const sha256 = await hashFile(file);
      const ref = uuidv7();
      const dest = this.#target.files.path(p.projectId, ref);
      let stored: StoredBytes;
      if (dest !== null) {
        await mkdir(dirname(dest), { recursive: true, mode: 0o700 });
        await rename(file, dest);
        stored = { ref, size: total, sha256 };
      } else {
        stored = await this.#target.files.put(p.projectId, createReadStream(file), { bytes: total, error: () => new EdgeError('internal', 'the upload grew') });
      }
      uploadStore.delete(p, row.id);
      // note: commitObject checks the rules again and deletes the stored file when it refuses.
      return await this.#target.commitObject(p, caller, { bucket: row.bucket, key: row.key, contentType: row.content_type, stored }, baseUrl);
    } finally {
      uploadStore.delete(p, row.id);
      await rm(file, { force: true });
      this.#locked.delete(k);
    }
  }

  // --- TUS 1.0 (core, creation, termination, expiration)

  /** POST /storage/tus: `Upload-Length` and `Upload-Metadata` (`bucket`, `key`, `content_type`|`contentType`|`filetype`). */
  async tusCreate(p: ProjectLease, caller: UploadCaller, length: string | undefined, metadata: string | undefined, keyOf: (raw: string) => string, baseUrl: string): Promise<TusState> {
    if (length === undefined || !/^(0|[1-9][0-9]{0,15})$/.test(length)) throw new EdgeError('invalid_request', 'Upload-Length must be a non-negative integer (Upload-Defer-Length is not supported)');
    const meta = parseTusMetadata(metadata ?? '');
    const bucket = meta.get('bucket');
    const key = meta.get('key') ?? meta.get('filename');
    if (bucket === undefined || key === undefined) throw new EdgeError('invalid_request', 'Upload-Metadata must name the bucket and the key');
    const ct = meta.get('content_type') ?? meta.get('contentType') ?? meta.get('filetype') ?? 'application/octet-stream';
    if (!/^[\w!#$&^.+-]+\/[\w!#$&^.+-]+(\s*;.*)?$/.test(ct) || ct.length > 255) throw invalidField('content_type', 'must be a media type');
    const len = Number(length);
    const plan = this.#target.planUpload(p, caller, bucket, keyOf(key), ct, len);
    const row = await this.#begin(p, caller, { kind: 'tus', bucket: plan.bucket.name, key: plan.key, content_type: plan.contentType, part_size: null, length: len });
    if (len === 0) {
      const done = await this.#finish(p, caller, row, 0, baseUrl);
      return { id: row.id, offset: 0, length: 0, expiresAt: row.expires_at, record: done.record };
    }
    return { id: row.id, offset: 0, length: len, expiresAt: row.expires_at };
  }

  tusState(p: ProjectLease, caller: UploadCaller, id: string): TusState {
    const row = this.#get(p, caller, id, 'tus');
    return { id, offset: row.received, length: row.length!, expiresAt: row.expires_at };
  }

  /**
   * PATCH /storage/tus/{id}: appends the body at `Upload-Offset`, which must equal the bytes
   * received (else 409). Bytes that arrived before a cut are kept (the client resumes from HEAD).
   * The byte that completes the upload commits the object.
   */
  async tusPatch(p: ProjectLease, caller: UploadCaller, id: string, offsetText: string | undefined, body: AsyncIterable<Uint8Array>, baseUrl: string): Promise<TusState> {
    const row = this.#get(p, caller, id, 'tus');
    if (offsetText === undefined || !/^(0|[1-9][0-9]{0,15})$/.test(offsetText)) throw new EdgeError('invalid_request', 'Upload-Offset must be a non-negative integer');
    const k = `${p.projectId}/${id}`;
    if (this.#locked.has(k)) throw new EdgeError('conflict', 'another request is writing this upload');
    if (Number(offsetText) !== row.received) {
      throw new EdgeError('conflict', `Upload-Offset ${offsetText} does not match the ${row.received} bytes received`, { details: { offset: row.received } });
    }
    const length = row.length!;
    this.#locked.add(k);
    const w = { n: 0 };
    let failure: Error | null = null;
    try {
      await writeAt(this.#file(p.projectId, id), body, row.received, length - row.received, () => new EdgeError('payload_too_large', `the upload has ${length} bytes (Upload-Length)`), w);
    } catch (err) {
      failure = err instanceof Error ? err : new Error(String(err));
    } finally {
      this.#locked.delete(k);
    }
    const received = row.received + w.n;
    if (uploadStore.exists(p, id)) uploadStore.setReceived(p, id, received);
    if (failure !== null) throw failure;
    if (received === length) {
      const done = await this.#finish(p, caller, { ...row, received }, length, baseUrl);
      return { id, offset: received, length, expiresAt: row.expires_at, record: done.record };
    }
    return { id, offset: received, length, expiresAt: row.expires_at };
  }
}

/** `key base64,key2 base64` (TUS Upload-Metadata); a key without a value maps to ''. */
export function parseTusMetadata(h: string): Map<string, string> {
  const m = new Map<string, string>();
  if (h.trim() === '') return m;
  for (const pair of h.split(',')) {
    const [k, v, extra] = pair.trim().split(' ');
    if (k === undefined || k === '' || extra !== undefined || m.has(k)) throw new EdgeError('invalid_request', 'Upload-Metadata is malformed');
    if (v !== undefined && !/^[A-Za-z0-9+/]*={0,2}$/.test(v)) throw new EdgeError('invalid_request', `Upload-Metadata value of "${k}" is not base64`);
    m.set(k, v === undefined ? '' : Buffer.from(v, 'base64').toString('utf8'));
  }
  return m;
}

/**
 * Streams `body` into `file` from `position`, at most `max` bytes (then `tooLarge()`), fsynced;
 * `written.n` counts what reached the file (also when it fails). Returns the body's SHA-256.
 */
async function writeAt(
  file: string,
  body: AsyncIterable<Uint8Array>,
  position: number,
  max: number,
  tooLarge: () => EdgeError,
  written: { n: number },
): Promise<string> {
  let fh: FileHandle;
  try {
    fh = await open(file, constants.O_WRONLY | constants.O_NOFOLLOW);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new EdgeError('not_found', 'upload not found');
    throw diskError(err);
  }
  const hash = createHash('sha256');
  try {
    for await (const chunk of body) {
      if (written.n + chunk.length > max) throw tooLarge();
      hash.update(chunk);
      let off = 0;
      while (off < chunk.length) {
        const { bytesWritten } = await fh.write(chunk, off, chunk.length - off, position + written.n).catch((err: unknown) => {
          throw diskError(err);
        });
        off += bytesWritten;
        written.n += bytesWritten;
      }
    }
  } finally {
    // note: what was written is made durable even when the body broke off (TUS resumes from it).
    await fh.sync().catch(() => {});
    await fh.close();
  }
  return hash.digest('hex');
}

async function hashFile(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file, { highWaterMark: 1024 * 1024 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

function diskError(err: unknown): EdgeError {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOSPC' || code === 'EDQUOT') return new EdgeError('insufficient_storage', 'the disk is full', { cause: err });
  return new EdgeError('internal', 'the upload could not be written', { cause: err });
}
