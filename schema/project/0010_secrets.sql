-- Secrets and settings of the project (docs/api.md "Secrets and feature flags"), and its feature flags.

-- One row per name. `value` is always sealed (src/control/seal.ts: purpose `secrets`, the
-- project id and the name as additional data), settings included; `secret` only decides
-- whether the listing shows it in clear.
CREATE TABLE "_svc_secrets.values" (
  name        TEXT PRIMARY KEY,
  secret      INTEGER NOT NULL,
  value       TEXT NOT NULL,
  updated_at  TEXT NOT NULL
);

-- Feature flags: `value` and `default_value` are JSON text; `rollout` a whole percentage 0-100.
CREATE TABLE "_svc_secrets.flags" (
  key            TEXT PRIMARY KEY,
  value          TEXT NOT NULL,
  default_value  TEXT NOT NULL,
  enabled        INTEGER NOT NULL,
  rollout        INTEGER NOT NULL,
  description    TEXT,
  updated_at     TEXT NOT NULL
);
