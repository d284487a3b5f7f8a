-- The change log as a durable outbox: full row images and named consumer cursors.

-- The whole row as stored (every column, a document's `data` as JSON, blobs as hex) after
-- and before the change, JSON text; NULL for an insert's old_row and a delete's new_row, and
-- for rows logged before this migration.
ALTER TABLE "_svc_meta.change_log" ADD COLUMN new_row TEXT;
ALTER TABLE "_svc_meta.change_log" ADD COLUMN old_row TEXT;

-- One row per consumer of changes (realtime, webhooks, triggers, …): the last seq it has
-- processed. Retention never prunes past the slowest enabled cursor (up to a hard cap).
CREATE TABLE "_svc_meta.cursors" (
  name        TEXT PRIMARY KEY,
  seq         INTEGER NOT NULL,
  enabled     INTEGER NOT NULL DEFAULT 1,
  updated_at  TEXT NOT NULL
);
