-- Auth: users, sessions, refresh tokens, the token secret, user fields, roles, profiles.

-- Per-project settings of the auth service (the access-token signing secret).
CREATE TABLE "_svc_auth.config" (
  key    TEXT PRIMARY KEY,
  value  TEXT NOT NULL
);

CREATE TABLE "_svc_auth.users" (
  id              TEXT PRIMARY KEY,
  -- note: trimmed and lower-cased; NULL for an anonymous user.
  email           TEXT UNIQUE,
  password_hash   TEXT,
  name            TEXT,
  role            TEXT NOT NULL DEFAULT 'authenticated',
  email_verified  INTEGER NOT NULL DEFAULT 0,
  user_metadata   TEXT NOT NULL DEFAULT '{}',
  app_metadata    TEXT NOT NULL DEFAULT '{}',
  is_anonymous    INTEGER NOT NULL DEFAULT 0,
  created_at      TEXT NOT NULL,
  updated_at      TEXT NOT NULL,
  last_sign_in_at TEXT
);
CREATE INDEX "_svc_auth.users_role" ON "_svc_auth.users" (role);

CREATE TABLE "_svc_auth.sessions" (
  id           TEXT PRIMARY KEY,
  user_id      TEXT NOT NULL REFERENCES "_svc_auth.users" (id) ON DELETE CASCADE,
  aal          TEXT NOT NULL DEFAULT 'aal1',
  created_at   TEXT NOT NULL,
  refreshed_at TEXT NOT NULL,
  revoked_at   TEXT
);
CREATE INDEX "_svc_auth.sessions_user" ON "_svc_auth.sessions" (user_id);
CREATE INDEX "_svc_auth.sessions_revoked" ON "_svc_auth.sessions" (revoked_at) WHERE revoked_at IS NOT NULL;

-- Every refresh token ever issued, by SHA-256 hash (single use; a used one presented again revokes the session).
CREATE TABLE "_svc_auth.refresh_tokens" (
  hash        TEXT PRIMARY KEY,
  session_id  TEXT NOT NULL REFERENCES "_svc_auth.sessions" (id) ON DELETE CASCADE,
  -- note: the id (jti) of the access token issued with it, revoked when this pair is rotated.
  access_jti  TEXT NOT NULL,
  issued_at   TEXT NOT NULL,
  expires_at  TEXT NOT NULL,
  used_at     TEXT
);
CREATE INDEX "_svc_auth.refresh_tokens_session" ON "_svc_auth.refresh_tokens" (session_id);
CREATE INDEX "_svc_auth.refresh_tokens_used" ON "_svc_auth.refresh_tokens" (used_at) WHERE used_at IS NOT NULL;

-- Extra columns of profiles (the contract's user field definitions).
CREATE TABLE "_svc_meta.auth_user_fields" (
  name       TEXT PRIMARY KEY,
  type       TEXT NOT NULL CHECK (type IN ('text', 'bool', 'int8', 'timestamptz', 'float8')),
  required   INTEGER NOT NULL DEFAULT 0,
  in_signup  INTEGER NOT NULL DEFAULT 0,
  position   INTEGER NOT NULL
);

-- Customer-defined roles (besides the built-in authenticated and anon).
CREATE TABLE "_svc_meta.auth_roles" (
  name         TEXT PRIMARY KEY,
  description  TEXT NOT NULL DEFAULT '',
  created_at   TEXT NOT NULL
);

-- public.profiles: one row per user, id = the auth user id; user fields become extra columns.
CREATE TABLE profiles (
  id          TEXT PRIMARY KEY,
  name        TEXT,
  created_at  TEXT,
  updated_at  TEXT
);
