-- Views made by CREATE VIEW through /db/query (docs/sql.md "Views"): the statement as written,
-- translated again wherever a query names the view (so its tables are read under the caller's RLS).
CREATE TABLE "_svc_meta.views" (
  name        TEXT PRIMARY KEY,
  -- note: the CREATE [OR REPLACE] VIEW statement as the caller wrote it.
  definition  TEXT NOT NULL,
  -- note: the view's columns as the translator typed them when it was made: [{"name", "type"}].
  columns     TEXT NOT NULL,
  -- note: every table and view it reads (through other views too), for DROP … CASCADE / RESTRICT.
  deps        TEXT NOT NULL,
  created_at  TEXT NOT NULL
);
