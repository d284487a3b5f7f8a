-- Control plane: projects, their API keys, operators and operator sessions.
CREATE TABLE projects (
  id          TEXT PRIMARY KEY,
  name        TEXT NOT NULL,
  created_at  TEXT NOT NULL
);

CREATE TABLE api_keys (
  id            TEXT PRIMARY KEY,
  project_id    TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  name          TEXT NOT NULL,
  kind          TEXT NOT NULL CHECK (kind IN ('publishable', 'service', 'custom')),
  hash          TEXT NOT NULL UNIQUE,   -- hex SHA-256 of the whole key
  hint          TEXT NOT NULL,          -- svc_live_ + first 4 chars, for listings
  scopes        TEXT NOT NULL,          -- JSON array
  role          TEXT NOT NULL,          -- service_role or anon
  sealed        TEXT,                   -- the key encrypted with master.key (bootstrap keys only)
  created_at    TEXT NOT NULL,
  last_used_at  TEXT,
  revoked_at    TEXT
);
CREATE INDEX api_keys_project ON api_keys(project_id);

CREATE TABLE operators (
  id             TEXT PRIMARY KEY,
  email          TEXT NOT NULL UNIQUE,
  password_hash  TEXT,
  created_at     TEXT NOT NULL
);

CREATE TABLE operator_sessions (
  id           TEXT PRIMARY KEY,
  operator_id  TEXT NOT NULL REFERENCES operators(id) ON DELETE CASCADE,
  hash         TEXT NOT NULL UNIQUE,
  created_at   TEXT NOT NULL,
  expires_at   TEXT NOT NULL,
  revoked_at   TEXT
);

-- Small key/value settings of the installation (e.g. which project `serve` bootstrapped).
CREATE TABLE settings (
  key    TEXT PRIMARY KEY,
  value  TEXT NOT NULL
);
