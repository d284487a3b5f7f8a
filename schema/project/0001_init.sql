-- Platform tables of every project. Reserved schemas map to tables named "schema.table".

-- The live log's capped table (the in-memory ring is its hot copy).
CREATE TABLE "_svc_meta.live_log" (
  seq          INTEGER PRIMARY KEY,
  at           TEXT NOT NULL,
  kind         TEXT NOT NULL CHECK (kind IN ('request', 'change')),
  method       TEXT,
  route        TEXT,
  status       INTEGER,
  duration_ms  REAL,
  label        TEXT
);

-- The durable change log: every committed row change, in order (realtime resume, webhooks).
CREATE TABLE "_svc_meta.change_log" (
  seq         INTEGER PRIMARY KEY AUTOINCREMENT,
  at          TEXT NOT NULL,
  op          TEXT NOT NULL CHECK (op IN ('insert', 'update', 'delete')),
  tbl         TEXT NOT NULL,
  row_id      TEXT NOT NULL,
  data        TEXT,
  old         TEXT
);
CREATE INDEX "_svc_meta.change_log_tbl" ON "_svc_meta.change_log" (tbl, seq);
