-- The change log's seq becomes a plain rowid alias: AUTOINCREMENT wrote the
-- sqlite_sequence table on every change (one more page per committed write). Retention
-- must remove the oldest rows only (never the newest), so the numbering never restarts.
CREATE TABLE "_svc_meta.change_log_new" (
  seq         INTEGER PRIMARY KEY,
  at          TEXT NOT NULL,
  op          TEXT NOT NULL CHECK (op IN ('insert', 'update', 'delete')),
  tbl         TEXT NOT NULL,
  row_id      TEXT NOT NULL,
  data        TEXT,
  old         TEXT
);
INSERT INTO "_svc_meta.change_log_new" SELECT seq, at, op, tbl, row_id, data, old FROM "_svc_meta.change_log";
DROP TABLE "_svc_meta.change_log";
ALTER TABLE "_svc_meta.change_log_new" RENAME TO "_svc_meta.change_log";
CREATE INDEX "_svc_meta.change_log_tbl" ON "_svc_meta.change_log" (tbl, seq);
