-- Database service: the catalog of customer tables and their row-level security.

-- One row per table created through POST /db/tables (profiles is presented from its real columns).
CREATE TABLE "_svc_meta.tables" (
  name        TEXT PRIMARY KEY,
  kind        TEXT NOT NULL CHECK (kind IN ('document', 'relational')),
  -- note: the validated create body (columns, indexes) as JSON; the physical table is the source of truth for existence.
  def         TEXT NOT NULL,
  created_at  TEXT NOT NULL
);

-- Row-level security per table: the policy sources as written, and their compiled SQLite form.
CREATE TABLE "_svc_meta.rls" (
  tbl         TEXT PRIMARY KEY,
  enabled     INTEGER NOT NULL DEFAULT 0,
  policies    TEXT NOT NULL DEFAULT '{}',
  -- note: NULL means "compile from policies on first use" (used for the seeded profiles default).
  compiled    TEXT,
  version     INTEGER NOT NULL DEFAULT 1,
  updated_at  TEXT NOT NULL
);

-- public.profiles: a user reads and updates their own row.
INSERT INTO "_svc_meta.rls" (tbl, enabled, policies, compiled, version, updated_at)
VALUES ('profiles', 1, '{"select":"id = auth.uid()","update":"id = auth.uid()"}', NULL, 1, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
