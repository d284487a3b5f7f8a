-- The rows whose BEFORE-trigger assignments are being applied (src/sql/pg/plpgsql.ts): the SQLite
-- trigger that applies them marks the row here around its UPDATE, and the project's UPDATE
-- triggers skip a marked row, so that internal UPDATE fires none of them (Postgres applies the
-- assignments to the row being written, with no second UPDATE). Always empty between statements.
CREATE TABLE "_svc_meta.sql_applying" (
  tbl TEXT NOT NULL,
  rid INTEGER NOT NULL,
  PRIMARY KEY (tbl, rid)
) WITHOUT ROWID;
