-- Table privileges recorded by GRANT/REVOKE through POST /db/query (docs/sql.md "Privileges:
-- GRANT and REVOKE"). Supabase's defaults hold for every table, existing and new: anon,
-- authenticated and service_role have SELECT, INSERT, UPDATE and DELETE. A row is kept only
-- for a table and role that differ from that (a missing row: all four), so existing tables
-- need no rows and a GRANT that restores everything deletes its row.
CREATE TABLE "_svc_meta.grants" (
  tbl         TEXT NOT NULL,
  grantee     TEXT NOT NULL CHECK (grantee IN ('anon', 'authenticated', 'service_role')),
  -- note: bits: 1 SELECT, 2 INSERT, 4 UPDATE, 8 DELETE (src/sql/grants.ts).
  privileges  INTEGER NOT NULL CHECK (privileges BETWEEN 0 AND 15),
  PRIMARY KEY (tbl, grantee)
) WITHOUT ROWID;
