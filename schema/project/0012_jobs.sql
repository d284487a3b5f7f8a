-- Durable function jobs (docs/api.md "Jobs, schedules and triggers").
--
-- A job is claimable while its status is queued, failed (a retry is due at due_ms) or running
-- (its lease ends at due_ms: a job of a killed process is claimed again once the lease ends).
-- due_ms is therefore the one time the claim query orders by; the partial index holds only
-- claimable rows, so claiming stays an index range scan however many rows are finished.
CREATE TABLE "_svc_functions.jobs" (
  id            TEXT PRIMARY KEY,
  function      TEXT NOT NULL,
  args          TEXT NOT NULL,               -- JSON
  status        TEXT NOT NULL CHECK (status IN ('queued','running','succeeded','failed','dead','cancelled')),
  run_at        TEXT NOT NULL,               -- when it was asked to run first
  due_ms        INTEGER,                     -- queued/failed: next run; running: lease end; else NULL
  attempts      INTEGER NOT NULL DEFAULT 0,
  max_attempts  INTEGER NOT NULL,
  user_id       TEXT,                        -- who enqueued it (never a token)
  role          TEXT NOT NULL,               -- and as which role it runs
  scopes        TEXT,                        -- JSON array: the enqueuing key's scopes (NULL: those of the role)
  idem_key      TEXT,                        -- <owner>\n<idempotency key>
  created_ms    INTEGER NOT NULL,
  created_at    TEXT NOT NULL,
  claim         TEXT,                        -- the running attempt's token (a stale worker cannot finish a reclaimed job)
  result        TEXT,                        -- JSON
  logs          TEXT,                        -- JSON array
  last_error    TEXT,
  finished_at   TEXT
);
CREATE INDEX "_svc_functions.jobs_claim" ON "_svc_functions.jobs"(due_ms) WHERE status IN ('queued','failed','running');
CREATE INDEX "_svc_functions.jobs_status" ON "_svc_functions.jobs"(status, id);
CREATE INDEX "_svc_functions.jobs_user" ON "_svc_functions.jobs"(user_id, id);
CREATE INDEX "_svc_functions.jobs_function" ON "_svc_functions.jobs"(function) WHERE status IN ('queued','failed','running');
CREATE INDEX "_svc_functions.jobs_idem" ON "_svc_functions.jobs"(idem_key) WHERE idem_key IS NOT NULL;

-- Change triggers of functions: a matching change of the durable change log enqueues a job
-- (read through the `triggers` consumer cursor).
CREATE TABLE "_svc_functions.triggers" (
  function  TEXT NOT NULL,
  idx       INTEGER NOT NULL,
  tbl       TEXT NOT NULL,
  events    TEXT NOT NULL,                   -- JSON array of insert/update/delete
  filter    TEXT,                            -- JSON object field -> value, or NULL
  PRIMARY KEY (function, idx)
);
