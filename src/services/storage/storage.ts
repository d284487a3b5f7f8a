import type { Config } from '../../config.js';
import { randomBase62 } from '../../control/random.js';
import { conflict, EdgeError, invalidField, notFound } from '../../core/errors.js';
import type { ProjectLease, ProjectRegistry } from '../../project/registry.js';
import type { HandlerRequest } from '../../edge/route.js';
import type { TransformedBody } from './transform.js';
import type { ObjectStore, PutLimit, StoredObject } from './object-store.js';
import { ReadCache } from './read-cache.js';
import { SIGNED_DEFAULT_S, SIGNED_MAX_S, transformField, type UrlSigner } from './signing.js';
import { allowedMimeTypes, bucketName, mimeAllowed, SHORT_ID, SHORT_ID_LENGTH, essence } from './rules.js';
import { bucketStore, objectStore, type BucketRow, type ObjectRow, type ShortIdIndex } from './store.js';

/** Who acts: the service role sees everything; otherwise the user (if any) owns what it writes. */
export interface Caller {
  readonly serviceRole: boolean;
  readonly userId: string | null;
}

export interface Bucket {
  name: string;
  public: boolean;
  file_size_limit: number | null;
  allowed_mime_types: string[] | null;
  created_at: string;
}

/** An object record as the API shows it (docs/api.md "Storage", pinned). */
export interface ObjectRecord {
  id: string;
  bucket: string;
  key: string;
  size: number;
  content_type: string;
  etag: string;
  created_at: string;
  updated_at: string;
  url: string | null;
}

/** An object to read: its row, its bucket's publicity and its project. */
export interface ReadableObject {
  readonly projectId: string;
  readonly row: ObjectRow;
  readonly publicBucket: boolean;
}

/** What an upload is about to store, before a byte is read. */
export interface UploadPlan {
  readonly bucket: BucketRow;
  readonly key: string;
  readonly contentType: string;
  readonly limit: PutLimit;
}

const toBucket = (r: BucketRow): Bucket => ({
  name: r.name,
  public: r.public === 1,
  file_size_limit: r.file_size_limit,
  allowed_mime_types: r.allowed_mime_types === null ? null : (JSON.parse(r.allowed_mime_types) as string[]),
  created_at: r.created_at,
});

export const etagOf = (sha256: string): string => `"${sha256}"`;

const SHORT_ID_TRIES = 16;

/**
 * Buckets and objects of a project: the rules (names, types, limits, who may read and write) and
 * the order of a write (bytes durable under a fresh ref, then the row commits, then an old file
 * goes), over an `ObjectStore` and the server-wide short-id index.
 */
export class StorageService {
  /** The read path's image transform (image-read.ts), set by server.ts; null: reads ignore `w, h, …`. */
  transformer: ((obj: ReadableObject, req: HandlerRequest) => Promise<TransformedBody | null>) | null = null;
  /** Its lookup of an already cached variant that answers without waiting (null: not found that way). */
  transformerCached: ((obj: ReadableObject, req: HandlerRequest) => TransformedBody | null) | null = null;
  /** Public short-id reads and small files, in memory (read-cache.ts); every write below keeps it right. */
  readonly cache = new ReadCache();

  constructor(
    readonly config: Config,
    readonly registry: ProjectRegistry,
    readonly files: ObjectStore,
    readonly shortIds: ShortIdIndex,
    readonly signer: UrlSigner,
    readonly now: () => number = Date.now,
  ) {}

  // --- buckets

  listBuckets(p: ProjectLease): Bucket[] {
    return bucketStore.list(p).map(toBucket);
  }

  createBucket(p: ProjectLease, body: Record<string, unknown>): Bucket {
    const name = bucketName(body.name);
    if (body.public !== undefined && typeof body.public !== 'boolean') throw invalidField('public', 'must be a boolean');
    const limit = body.file_size_limit;
    if (limit !== undefined && limit !== null && (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1)) {
      throw invalidField('file_size_limit', 'must be a positive integer (bytes) or null');
    }
    const types = allowedMimeTypes(body.allowed_mime_types);
    const row: BucketRow = {
      name,
      public: body.public === true ? 1 : 0,
      file_size_limit: (limit as number | null | undefined) ?? null,
      allowed_mime_types: types === null ? null : JSON.stringify(types),
      created_at: new Date().toISOString(),
    };
    if (!bucketStore.insert(p, row)) throw conflict(`bucket "${name}" already exists`);
    return toBucket(row);
  }

  /** Deletes a bucket; one holding objects only with `force` (then its objects and files go too). */
  async deleteBucket(p: ProjectLease, name: string, force: boolean): Promise<void> {
    if (bucketStore.get(p, name) === undefined) throw notFound('bucket', name);
    let refs: string[] = [];
    if (bucketStore.hasObjects(p, name)) {
      if (!force) throw conflict(`bucket "${name}" is not empty; delete its objects first or pass ?force=true`);
      refs = objectStore.refsOfBucket(p, name);
    }
    p.db.transaction(() => bucketStore.delete(p, name))();
    this.shortIds.releaseBucket(p.projectId, name);
    this.cache.clear();
    for (const ref of refs) await this.files.delete(p.projectId, ref);
  }

  bucket(p: ProjectLease, name: string): BucketRow {
    const b = bucketStore.get(p, name);
    if (b === undefined) throw notFound('bucket', name);
    return b;
  }

  // --- writes

  /**
   * Everything an upload is judged on before its body is read: the bucket, the key against the
   * bucket's short ids, the type against `allowed_mime_types`, who may overwrite, and the byte limit
   * (the bucket's `file_size_limit`, the server's object cap, the project's remaining quota); a
   * declared `Content-Length` over it is refused at once.
   */
  planUpload(p: ProjectLease, caller: Caller, bucketName: string, key: string, contentType: string, declared: number | null): UploadPlan {
    const bucket = this.bucket(p, bucketName);
    this.#checkKeyAndType(p, bucket, key, contentType);
    const existing = objectStore.get(p, bucket.name, key);
    if (existing !== undefined) this.#mayChange(caller, existing);
    const limit = this.#limit(p, bucket, existing?.size ?? 0);
    if (declared !== null && declared > limit.bytes) throw limit.error();
    return { bucket, key, contentType, limit };
  }

  /** A key must not be one of the bucket's short ids (409), and the type one the bucket allows (415). */
  #checkKeyAndType(p: ProjectLease, bucket: BucketRow, key: string, contentType: string): void {
    if (SHORT_ID.test(key)) {
      const other = objectStore.byShortId(p, key);
      if (other !== undefined && other.bucket === bucket.name) throw conflict(`"${key}" is the short id of another object in this bucket; choose another key`);
    }
    const types = bucket.allowed_mime_types === null ? null : (JSON.parse(bucket.allowed_mime_types) as string[]);
    if (!mimeAllowed(types, contentType)) {
      throw new EdgeError('unsupported_media_type', `bucket "${bucket.name}" does not accept ${essence(contentType)}`);
    }
  }

  #limit(p: ProjectLease, bucket: BucketRow, replacing: number): PutLimit {
    let bytes = this.config.storageMaxObject;
    let error = (): EdgeError => new EdgeError('payload_too_large', `the object exceeds the limit of ${bytes} bytes`);
    if (bucket.file_size_limit !== null && bucket.file_size_limit < bytes) bytes = bucket.file_size_limit;
    const quota = this.config.storageQuota;
    if (quota > 0) {
      const left = Math.max(0, quota - objectStore.totalBytes(p) + replacing);
      if (left < bytes) {
        bytes = left;
        error = () => new EdgeError('quota_exceeded', `the project's storage quota of ${quota} bytes would be exceeded`);
      }
    }
    return { bytes, error };
  }

  /** Streams an upload into the store and commits its record (PUT /storage/objects/{bucket}/{key}). */
  async putObject(p: ProjectLease, caller: Caller, plan: UploadPlan, body: AsyncIterable<Uint8Array>, baseUrl: string): Promise<{ record: ObjectRecord; created: boolean }> {
    const stored = await this.files.put(p.projectId, body, plan.limit);
    return this.commitObject(p, caller, { bucket: plan.bucket.name, key: plan.key, contentType: plan.contentType, stored }, baseUrl);
  }

  /**
   * Commits an object record for bytes already stored under `stored.ref` (a PUT, or a multipart /
   * TUS upload completing). Rules are checked again (the bucket, who may overwrite, the quota), since
   * time passed since the upload began; on any failure the stored file is deleted. An overwrite keeps
   * the short id and deletes the old file after the commit.
   */
  async commitObject(
    p: ProjectLease,
    caller: Caller,
    o: { bucket: string; key: string; contentType: string; stored: StoredObject },
    baseUrl: string,
  ): Promise<{ record: ObjectRecord; created: boolean }> {
    let reserved: string | null = null;
    let result: { row: ObjectRow; old: ObjectRow | undefined };
    try {
      const bucket = this.bucket(p, o.bucket);
      this.#checkKeyAndType(p, bucket, o.key, o.contentType);
      const limit = this.#limit(p, bucket, objectStore.get(p, o.bucket, o.key)?.size ?? 0);
      if (o.stored.size > limit.bytes) throw limit.error();
      if (objectStore.get(p, o.bucket, o.key) === undefined) reserved = this.#newShortId(p, o.bucket);
      result = p.db.transaction(() => {
        const now = new Date().toISOString();
        const old = objectStore.get(p, o.bucket, o.key);
        const row: ObjectRow = {
          bucket: o.bucket,
          key: o.key,
          short_id: old?.short_id ?? reserved!,
          ref: o.stored.ref,
          size: o.stored.size,
          content_type: o.contentType,
          sha256: o.stored.sha256,
          owner: old !== undefined ? old.owner : caller.userId,
          created_at: old?.created_at ?? now,
          updated_at: now,
        };
        if (old !== undefined) {
          this.#mayChange(caller, old);
          objectStore.replace(p, row);
        } else {
          objectStore.insert(p, row);
        }
        return { row, old };
      })();
    } catch (err) {
      if (reserved !== null) this.shortIds.release(reserved);
      await this.files.delete(p.projectId, o.stored.ref).catch(() => {});
      throw err;
    }
    // note: before any await, so no read serves the replaced record from memory.
    this.cache.forgetObject(result.row.short_id);
    if (result.old !== undefined) {
      if (reserved !== null) this.shortIds.release(reserved);
      this.cache.forgetBytes(result.old.ref);
      if (result.old.ref !== result.row.ref) await this.files.delete(p.projectId, result.old.ref).catch(() => {});
    }
    const pub = bucketStore.get(p, o.bucket)?.public === 1;
    return { record: this.record(result.row, pub, baseUrl), created: result.old === undefined };
  }

  /** A fresh short id: not taken on the server, and not a key of the bucket. */
  #newShortId(p: ProjectLease, bucket: string): string {
    for (let i = 0; i < SHORT_ID_TRIES; i++) {
      const id = randomBase62(SHORT_ID_LENGTH);
      if (objectStore.keyExists(p, bucket, id)) continue;
      if (this.shortIds.reserve(id, p.projectId, bucket)) return id;
    }
    throw new EdgeError('unavailable', 'no free short id found; retry', { headers: { 'retry-after': '1' } });
  }

  async deleteObject(p: ProjectLease, caller: Caller, bucket: string, key: string): Promise<void> {
    const pub = this.bucket(p, bucket).public === 1;
    const row = objectStore.get(p, bucket, key);
    if (row === undefined || !this.#mayRead(caller, row, pub)) throw notFound('object', key);
    this.#mayChange(caller, row);
    p.db.transaction(() => objectStore.delete(p, bucket, key))();
    this.shortIds.release(row.short_id);
    this.cache.forgetObject(row.short_id);
    this.cache.forgetBytes(row.ref);
    await this.files.delete(p.projectId, row.ref).catch(() => {});
  }

  /**
   * Who may overwrite or delete an object: the service role, or the user who created it. An object
   * written without a user (a key alone) can be changed only by the service role.
   */
  #mayChange(caller: Caller, row: ObjectRow): void {
    if (caller.serviceRole) return;
    if (row.owner !== null && row.owner === caller.userId) return;
    throw new EdgeError('rls_denied', 'only the user who created this object (or the service role) may change it');
  }

  /** Who may read an object: anyone in a public bucket; in a private one the service role and its owner. */
  #mayRead(caller: Caller | null, row: ObjectRow, publicBucket: boolean): boolean {
    if (publicBucket) return true;
    if (caller === null) return false;
    return caller.serviceRole || (row.owner !== null && row.owner === caller.userId);
  }

  // --- reads

  listObjects(p: ProjectLease, caller: Caller, bucketName: string, prefix: string, limit: number, offset: number, baseUrl: string): { objects: ObjectRecord[]; limit: number; offset: number; next_offset: number | null } {
    const bucket = this.bucket(p, bucketName);
    const pub = bucket.public === 1;
    let rows: ObjectRow[];
    if (pub || caller.serviceRole) rows = objectStore.list(p, bucket.name, prefix, limit + 1, offset, undefined);
    else if (caller.userId !== null) rows = objectStore.list(p, bucket.name, prefix, limit + 1, offset, caller.userId);
    else rows = [];
    const more = rows.length > limit;
    if (more) rows.pop();
    return { objects: rows.map((r) => this.record(r, pub, baseUrl)), limit, offset, next_offset: more ? offset + limit : null };
  }

  /**
   * The object `rest` names in a bucket, for a caller with a key: a short id when it is one that
   * the index holds for this bucket, else a key. 404 when the caller may not read it.
   */
  readForCaller(p: ProjectLease, caller: Caller, bucketName: string, rest: string, key: () => string): ReadableObject {
    const bucket = this.bucket(p, bucketName);
    const pub = bucket.public === 1;
    let row: ObjectRow | undefined;
    if (SHORT_ID.test(rest)) {
      const hit = this.shortIds.lookup(rest);
      if (hit !== undefined && hit.project_id === p.projectId && hit.bucket === bucket.name) row = objectStore.byShortId(p, rest);
    }
    row ??= objectStore.get(p, bucket.name, key());
    if (row === undefined || !this.#mayRead(caller, row, pub)) throw notFound('object', rest);
    return { projectId: p.projectId, row, publicBucket: pub };
  }

  /**
   * A public read by short id without credentials: the object when the index holds the id (for
   * `bucket`, when given) in a public bucket; else undefined. The project is leased just for the lookup.
   */
  readPublic(shortId: string, bucket: string | null): ReadableObject | undefined {
    if (!SHORT_ID.test(shortId)) return undefined;
    const known = this.cache.object(shortId);
    if (known !== undefined) return bucket === null || known.row.bucket === bucket ? known : undefined;
    const hit = this.shortIds.lookup(shortId);
    if (hit === undefined || (bucket !== null && hit.bucket !== bucket)) return undefined;
    const p = this.registry.acquire(hit.project_id);
    try {
      const row = objectStore.byShortId(p, shortId);
      if (row === undefined || bucketStore.get(p, row.bucket)?.public !== 1) return undefined;
      const obj = { projectId: hit.project_id, row, publicBucket: true };
      this.cache.keepObject(shortId, obj);
      return obj;
    } finally {
      p.release();
    }
  }

  // --- signed URLs

  /**
   * A signed URL for an object the caller may read: `expires_in` seconds (default 3600, at least
   * the server's minimum (60 s), at most 7 days), the optional `transform` bound into the signature.
   */
  sign(p: ProjectLease, caller: Caller, bucket: string, key: string, body: Record<string, unknown>, baseUrl: string): { url: string; path: string; expires_at: string } {
    const min = this.config.storageSignedMinS;
    const ttl = body.expires_in ?? SIGNED_DEFAULT_S;
    if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < min || ttl > SIGNED_MAX_S) throw invalidField('expires_in', `must be an integer ${min}-${SIGNED_MAX_S} (seconds)`);
    const transform = transformField(body.transform);
    this.readForCaller(p, caller, bucket, key, () => key);
    const exp = Math.floor(this.now() / 1000) + ttl;
    const token = this.signer.token(p.projectId, bucket, key, exp, transform);
    const path = `/storage/signed/${bucket}/${key.split('/').map(encodeURIComponent).join('/')}?${transform === '' ? '' : transform + '&'}token=${token}`;
    return { url: baseUrl + path, path, expires_at: new Date(exp * 1000).toISOString() };
  }

  /** The object a signed URL names, once its token is verified (403 otherwise); 404 when it is gone. */
  readSigned(bucket: string, key: string, token: string | null, transform: string): ReadableObject {
    const projectId = this.signer.verify(token, bucket, key, transform, Math.floor(this.now() / 1000));
    const p = this.registry.acquire(projectId);
    try {
      const b = bucketStore.get(p, bucket);
      const row = b === undefined ? undefined : objectStore.get(p, bucket, key);
      if (row === undefined) throw notFound('object', key);
      return { projectId, row, publicBucket: b!.public === 1 };
    } finally {
      p.release();
    }
  }

  /** Forgets a deleted project (its files went with its folder). */
  forgetProject(projectId: string): void {
    this.files.forget(projectId);
    this.signer.forget(projectId);
    this.cache.clear();
  }

  /** Whether the short-id index holds `id` (a one-segment path is a short id only then). */
  isShortId(id: string): boolean {
    return SHORT_ID.test(id) && this.shortIds.lookup(id) !== undefined;
  }

  record(r: ObjectRow, publicBucket: boolean, baseUrl: string): ObjectRecord {
    return {
      id: r.short_id,
      bucket: r.bucket,
      key: r.key,
      size: r.size,
      content_type: r.content_type,
      etag: etagOf(r.sha256),
      created_at: r.created_at,
      updated_at: r.updated_at,
      url: publicBucket ? `${baseUrl}/storage/objects/${r.bucket}/${r.short_id}` : null,
    };
  }

  /** The file of an object, when the store keeps one on the local disk. */
  filePath(o: ReadableObject): string | null {
    return this.files.path(o.projectId, o.row.ref);
  }
}
