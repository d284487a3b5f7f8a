-- Enum types and comments made by raw SQL (docs/sql.md "Enum types", "Comments"; src/sql/pg/types-ddl.ts).

-- CREATE TYPE … AS ENUM: the labels in declaration order (a JSON array of strings). Columns of
-- the type are TEXT declared TEXT_ENUM_<hex name>, checked by triggers that read this row.
CREATE TABLE "_svc_meta.enums" (
  name        TEXT PRIMARY KEY,
  labels      TEXT NOT NULL CHECK (json_valid(labels) AND json_type(labels) = 'array'),
  created_at  TEXT NOT NULL
);

-- COMMENT ON TABLE t (col '') and COMMENT ON COLUMN t.c.
CREATE TABLE "_svc_meta.comments" (
  tbl      TEXT NOT NULL,
  col      TEXT NOT NULL DEFAULT '',
  comment  TEXT NOT NULL,
  PRIMARY KEY (tbl, col)
);
