-- Storage: buckets and object records (the bytes live in projects/<id>/objects/<ref>, docs/api.md "Storage").
CREATE TABLE "_svc_storage.buckets" (
  name                TEXT PRIMARY KEY,
  public              INTEGER NOT NULL DEFAULT 0,
  -- note: bytes; NULL: only the server's object cap.
  file_size_limit     INTEGER,
  -- note: a JSON array of types (`image/png`, `image/*`); NULL: any type.
  allowed_mime_types  TEXT,
  created_at          TEXT NOT NULL
);

CREATE TABLE "_svc_storage.objects" (
  bucket        TEXT NOT NULL REFERENCES "_svc_storage.buckets" (name) ON DELETE CASCADE,
  key           TEXT NOT NULL,
  -- note: the public short id, also indexed server-wide in control.db (storage_short_ids).
  short_id      TEXT NOT NULL UNIQUE,
  -- note: the file name under objects/ (a UUIDv7); a key never becomes a path.
  ref           TEXT NOT NULL,
  size          INTEGER NOT NULL,
  content_type  TEXT NOT NULL,
  sha256        TEXT NOT NULL,
  -- note: the user who created the object; NULL when written without a user (a key alone).
  owner         TEXT,
  created_at    TEXT NOT NULL,
  updated_at    TEXT NOT NULL,
  PRIMARY KEY (bucket, key)
) WITHOUT ROWID;
