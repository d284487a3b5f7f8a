import type { ProjectLease } from '../../project/registry.js';

// The SQL of unfinished multipart and TUS uploads (schema/project/0009_storage_uploads.sql).

export interface UploadRow {
  id: string;
  kind: 'multipart' | 'tus';
  bucket: string;
  key: string;
  content_type: string;
  part_size: number | null;
  length: number | null;
  received: number;
  owner: string | null;
  created_at: string;
  expires_at: string;
}

export interface PartRow {
  part: number;
  size: number;
  etag: string;
}

const U = '"_svc_storage.uploads"';
const P = '"_svc_storage.upload_parts"';
const COLS = 'id, kind, bucket, key, content_type, part_size, length, received, owner, created_at, expires_at';

export const uploadStore = {
  insert: (p: ProjectLease, u: UploadRow): void =>
    void p
      .stmt(`INSERT INTO ${U} (${COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
      .run(u.id, u.kind, u.bucket, u.key, u.content_type, u.part_size, u.length, u.received, u.owner, u.created_at, u.expires_at),
  get: (p: ProjectLease, id: string): UploadRow | undefined => p.stmt(`SELECT ${COLS} FROM ${U} WHERE id = ?`).get(id) as UploadRow | undefined,
  delete: (p: ProjectLease, id: string): void => void p.stmt(`DELETE FROM ${U} WHERE id = ?`).run(id),
  setReceived: (p: ProjectLease, id: string, received: number): void => void p.stmt(`UPDATE ${U} SET received = ? WHERE id = ?`).run(received, id),
  /** Ids of uploads that expired before `now` (ISO), at most `limit`. */
  expired: (p: ProjectLease, now: string, limit: number): string[] =>
    (p.stmt(`SELECT id FROM ${U} WHERE expires_at <= ? ORDER BY expires_at LIMIT ?`).all(now, limit) as { id: string }[]).map((r) => r.id),
  exists: (p: ProjectLease, id: string): boolean => p.stmt(`SELECT 1 FROM ${U} WHERE id = ?`).get(id) !== undefined,
  putPart: (p: ProjectLease, id: string, part: PartRow): void =>
    void p
      .stmt(`INSERT INTO ${P} (upload_id, part, size, etag) VALUES (?, ?, ?, ?) ON CONFLICT (upload_id, part) DO UPDATE SET size = excluded.size, etag = excluded.etag`)
      .run(id, part.part, part.size, part.etag),
  parts: (p: ProjectLease, id: string): PartRow[] => p.stmt(`SELECT part, size, etag FROM ${P} WHERE upload_id = ? ORDER BY part`).all(id) as PartRow[],
};
