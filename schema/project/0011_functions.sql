-- Functions (docs/api.md "Functions and jobs"): one row per deployed name, and every
-- deployed version, immutable. `id` (AUTOINCREMENT, never reused) names a version's warm
-- isolate, so a name deleted and deployed again never meets an isolate of its past.
CREATE TABLE "_svc_meta.functions" (
  name        TEXT PRIMARY KEY,
  version     INTEGER NOT NULL,
  created_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL
);

CREATE TABLE "_svc_meta.function_versions" (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  name        TEXT NOT NULL,
  version     INTEGER NOT NULL,
  language    TEXT NOT NULL,
  -- The source as deployed, and the JavaScript module that runs (the same for js).
  source      TEXT NOT NULL,
  code        TEXT NOT NULL,
  size        INTEGER NOT NULL,
  sha256      TEXT NOT NULL,
  options     TEXT NOT NULL,
  created_at  TEXT NOT NULL,
  UNIQUE (name, version)
);
