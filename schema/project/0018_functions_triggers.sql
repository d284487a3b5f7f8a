-- SQL functions and triggers made through /db/query (docs/sql.md "Functions and triggers").
-- A function keeps its CREATE FUNCTION text; a trigger its spec (JSON), the SQLite triggers
-- it was compiled into (names) and the tables its statements write (the raw-SQL change
-- capture follows them). The SQLite triggers themselves live in sqlite_master.
CREATE TABLE "_svc_meta.sql_functions" (
  name TEXT PRIMARY KEY,
  language TEXT NOT NULL,
  returns TEXT NOT NULL,
  definer INTEGER NOT NULL DEFAULT 0,
  source TEXT NOT NULL,
  created_at TEXT NOT NULL
);

CREATE TABLE "_svc_meta.sql_triggers" (
  tbl TEXT NOT NULL,
  name TEXT NOT NULL,
  fn TEXT NOT NULL,
  spec TEXT NOT NULL,
  names TEXT NOT NULL,
  writes TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (tbl, name)
);

-- Rows a trigger's UPDATE or DELETE is about to change in a rows-API table, held for the
-- length of that one statement so the change log gets their images before and after
-- (src/sql/pg/triggers.ts logChange). Always empty between statements.
CREATE TABLE "_svc_meta.sql_trigger_rows" (
  tbl TEXT NOT NULL,
  row_id,
  data TEXT,
  image TEXT
);
