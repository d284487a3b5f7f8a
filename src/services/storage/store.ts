import type Database from 'better-sqlite3';
import type { ProjectLease } from '../../project/registry.js';

// The storage service's SQL: buckets and objects in the project's file, the short-id index in control.db.

export interface BucketRow {
  name: string;
  public: number;
  file_size_limit: number | null;
  allowed_mime_types: string | null;
  created_at: string;
}

export interface ObjectRow {
  bucket: string;
  key: string;
  short_id: string;
  ref: string;
  size: number;
  content_type: string;
  sha256: string;
  owner: string | null;
  created_at: string;
  updated_at: string;
}

const B = '"_svc_storage.buckets"';
const O = '"_svc_storage.objects"';
const OBJECT_COLS = 'bucket, key, short_id, ref, size, content_type, sha256, owner, created_at, updated_at';

export const bucketStore = {
  list: (p: ProjectLease): BucketRow[] => p.stmt(`SELECT name, public, file_size_limit, allowed_mime_types, created_at FROM ${B} ORDER BY name`).all() as BucketRow[],
  get: (p: ProjectLease, name: string): BucketRow | undefined =>
    p.stmt(`SELECT name, public, file_size_limit, allowed_mime_types, created_at FROM ${B} WHERE name = ?`).get(name) as BucketRow | undefined,
  /** False when the name is taken. */
  insert: (p: ProjectLease, b: BucketRow): boolean =>
    p
      .stmt(`INSERT INTO ${B} (name, public, file_size_limit, allowed_mime_types, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING`)
      .run(b.name, b.public, b.file_size_limit, b.allowed_mime_types, b.created_at).changes === 1,
  delete: (p: ProjectLease, name: string): void => void p.stmt(`DELETE FROM ${B} WHERE name = ?`).run(name),
  hasObjects: (p: ProjectLease, name: string): boolean => p.stmt(`SELECT 1 FROM ${O} WHERE bucket = ? LIMIT 1`).get(name) !== undefined,
};

export const objectStore = {
  get: (p: ProjectLease, bucket: string, key: string): ObjectRow | undefined =>
    p.stmt(`SELECT ${OBJECT_COLS} FROM ${O} WHERE bucket = ? AND key = ?`).get(bucket, key) as ObjectRow | undefined,
  byShortId: (p: ProjectLease, shortId: string): ObjectRow | undefined =>
    p.stmt(`SELECT ${OBJECT_COLS} FROM ${O} WHERE short_id = ?`).get(shortId) as ObjectRow | undefined,
  /** Objects of a bucket by key, from `offset`; `owner` (when not undefined) keeps only that owner's. */
  list: (p: ProjectLease, bucket: string, prefix: string, limit: number, offset: number, owner: string | null | undefined): ObjectRow[] => {
    // note: a prefix is matched as a range of keys (no LIKE: `%` and `_` in keys mean themselves).
    const hi = prefix === '' ? null : prefix + '\u{10FFFF}';
    if (owner === undefined) {
      return p
        .stmt(`SELECT ${OBJECT_COLS} FROM ${O} WHERE bucket = ? AND key >= ? AND (? IS NULL OR key < ?) ORDER BY key LIMIT ? OFFSET ?`)
        .all(bucket, prefix, hi, hi, limit, offset) as ObjectRow[];
    }
    return p
      .stmt(`SELECT ${OBJECT_COLS} FROM ${O} WHERE bucket = ? AND key >= ? AND (? IS NULL OR key < ?) AND owner IS ? ORDER BY key LIMIT ? OFFSET ?`)
      .all(bucket, prefix, hi, hi, owner, limit, offset) as ObjectRow[];
  },
  insert: (p: ProjectLease, o: ObjectRow): void =>
    void p
      .stmt(`INSERT INTO ${O} (${OBJECT_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
      .run(o.bucket, o.key, o.short_id, o.ref, o.size, o.content_type, o.sha256, o.owner, o.created_at, o.updated_at),
  /** Points an existing record at a new file; false when the record is gone. */
  replace: (p: ProjectLease, o: ObjectRow): boolean =>
    p
      .stmt(`UPDATE ${O} SET ref = ?, size = ?, content_type = ?, sha256 = ?, updated_at = ? WHERE bucket = ? AND key = ?`)
      .run(o.ref, o.size, o.content_type, o.sha256, o.updated_at, o.bucket, o.key).changes === 1,
  delete: (p: ProjectLease, bucket: string, key: string): void => void p.stmt(`DELETE FROM ${O} WHERE bucket = ? AND key = ?`).run(bucket, key),
  refsOfBucket: (p: ProjectLease, bucket: string): string[] => (p.stmt(`SELECT ref FROM ${O} WHERE bucket = ?`).all(bucket) as { ref: string }[]).map((r) => r.ref),
  /** Whether a bucket holds an object under this key (a short-id candidate must not equal one). */
  keyExists: (p: ProjectLease, bucket: string, key: string): boolean => p.stmt(`SELECT 1 FROM ${O} WHERE bucket = ? AND key = ?`).get(bucket, key) !== undefined,
  /** Bytes the project's objects take. */
  totalBytes: (p: ProjectLease): number => (p.stmt(`SELECT coalesce(sum(size), 0) AS n FROM ${O}`).get() as { n: number }).n,
};

/** The server-wide short-id index in control.db. */
export class ShortIdIndex {
  readonly #lookup: Database.Statement;
  readonly #reserve: Database.Statement;
  readonly #release: Database.Statement;
  readonly #releaseBucket: Database.Statement;

  constructor(control: Database.Database) {
    this.#lookup = control.prepare('SELECT project_id, bucket FROM storage_short_ids WHERE short_id = ?');
    this.#reserve = control.prepare('INSERT INTO storage_short_ids (short_id, project_id, bucket) VALUES (?, ?, ?) ON CONFLICT (short_id) DO NOTHING');
    this.#release = control.prepare('DELETE FROM storage_short_ids WHERE short_id = ?');
    this.#releaseBucket = control.prepare('DELETE FROM storage_short_ids WHERE project_id = ? AND bucket = ?');
  }

  lookup(shortId: string): { project_id: string; bucket: string } | undefined {
    return this.#lookup.get(shortId) as { project_id: string; bucket: string } | undefined;
  }

  /** False when the id is taken (anywhere on the server). */
  reserve(shortId: string, projectId: string, bucket: string): boolean {
    return this.#reserve.run(shortId, projectId, bucket).changes === 1;
  }

  release(shortId: string): void {
    this.#release.run(shortId);
  }

  releaseBucket(projectId: string, bucket: string): void {
    this.#releaseBucket.run(projectId, bucket);
  }
}
