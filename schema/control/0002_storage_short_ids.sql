-- Storage short ids, unique across the server: legacy URLs (/<short id>) name no project.
CREATE TABLE storage_short_ids (
  short_id    TEXT PRIMARY KEY,
  project_id  TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  bucket      TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX storage_short_ids_bucket ON storage_short_ids(project_id, bucket);
