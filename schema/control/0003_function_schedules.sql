-- Function schedules of every project (so a closed project's cron still fires), and the
-- earliest time each project has a job due (so the job worker finds due jobs without
-- opening every project). Both are indexes of what the project files hold.
CREATE TABLE fn_schedules (
  project_id  TEXT NOT NULL,
  function    TEXT NOT NULL,
  idx         INTEGER NOT NULL,
  cron        TEXT NOT NULL,
  args        TEXT NOT NULL,                 -- JSON
  next_ms     INTEGER NOT NULL,              -- the next firing
  PRIMARY KEY (project_id, function, idx)
);
CREATE INDEX fn_schedules_next ON fn_schedules(next_ms);

CREATE TABLE fn_job_wakeups (
  project_id  TEXT PRIMARY KEY,
  due_ms      INTEGER NOT NULL
);
CREATE INDEX fn_job_wakeups_due ON fn_job_wakeups(due_ms);

-- Projects with change triggers: their `triggers` cursor is caught up at start.
CREATE TABLE fn_trigger_projects (
  project_id  TEXT PRIMARY KEY
);
