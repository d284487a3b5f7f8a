-- Storage: unfinished multipart and TUS uploads (docs/api.md "Multipart and TUS"). The bytes
-- live in projects/<id>/uploads/<id> until completion moves them under objects/<ref>.
CREATE TABLE "_svc_storage.uploads" (
  id            TEXT PRIMARY KEY,
  -- note: 'multipart' (numbered parts of part_size) or 'tus' (one growing offset up to length).
  kind          TEXT NOT NULL,
  bucket        TEXT NOT NULL,
  key           TEXT NOT NULL,
  content_type  TEXT NOT NULL,
  part_size     INTEGER,
  length        INTEGER,
  received      INTEGER NOT NULL DEFAULT 0,
  -- note: the user who began it; NULL when begun with a key alone. Only they (or the service role) continue it.
  owner         TEXT,
  created_at    TEXT NOT NULL,
  expires_at    TEXT NOT NULL
);
CREATE INDEX "_svc_storage.uploads_expires" ON "_svc_storage.uploads" (expires_at);

CREATE TABLE "_svc_storage.upload_parts" (
  upload_id  TEXT NOT NULL REFERENCES "_svc_storage.uploads" (id) ON DELETE CASCADE,
  part       INTEGER NOT NULL,
  size       INTEGER NOT NULL,
  etag       TEXT NOT NULL,
  PRIMARY KEY (upload_id, part)
) WITHOUT ROWID;
