-- Webhooks (src/services/webhooks/, docs/api.md "Webhooks"): the registered endpoints and the
-- delivery outbox. Reserved schema `_svc_webhooks`: not a table name a caller can create, and
-- not a schema the SQL translator maps, so no caller (not even the service role) reads or writes it
-- through the rows API, SQL, RPC or GraphQL.

CREATE TABLE "_svc_webhooks.webhooks" (
  id               TEXT PRIMARY KEY,
  url              TEXT NOT NULL,
  -- note: a JSON array of long event names (db.insert, db.update, db.delete).
  events           TEXT NOT NULL,
  tbl              TEXT,
  -- note: a JSON array of rows-API filter strings (field.op.value), ANDed; NULL: none.
  filter           TEXT,
  enabled          INTEGER NOT NULL DEFAULT 1,
  description      TEXT,
  -- note: the whsec_ secret sealed (Sealer, purpose `webhooks`, name = id).
  secret           TEXT NOT NULL,
  -- note: the previous secret during a rotation's overlap (sealed, name = id + ':old'), and its end.
  old_secret       TEXT,
  old_secret_until TEXT,
  -- note: the change log seq at creation: the webhook gets changes after it.
  since_seq        INTEGER NOT NULL,
  failure_count    INTEGER NOT NULL DEFAULT 0,
  disabled_reason  TEXT,
  created_at       TEXT NOT NULL,
  updated_at       TEXT NOT NULL
);

-- One row per (webhook, change): the outbox. `id` is the payload id and the webhook-id header.
CREATE TABLE "_svc_webhooks.deliveries" (
  id               TEXT PRIMARY KEY,
  webhook_id       TEXT NOT NULL REFERENCES "_svc_webhooks.webhooks" (id) ON DELETE CASCADE,
  type             TEXT NOT NULL,
  seq              INTEGER,
  payload          TEXT NOT NULL,
  test             INTEGER NOT NULL DEFAULT 0,
  status           TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed', 'dead')),
  attempts         INTEGER NOT NULL DEFAULT 0,
  next_attempt_at  TEXT,
  response_status  INTEGER,
  error            TEXT,
  duration_ms      INTEGER,
  created_at       TEXT NOT NULL
);
CREATE INDEX "_svc_webhooks.deliveries_due" ON "_svc_webhooks.deliveries" (next_attempt_at) WHERE status = 'pending';
CREATE INDEX "_svc_webhooks.deliveries_by_webhook" ON "_svc_webhooks.deliveries" (webhook_id, id);
