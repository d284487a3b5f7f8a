-- Named RLS policies (CREATE POLICY / ALTER POLICY / DROP POLICY, PUT /db/tables/{t}/rls `named`):
-- the JSON list of {name, command, permissive, roles, using, check}. NULL for a row written before
-- names were kept: its `policies` object is read as one policy per operation (rls_select, …).
ALTER TABLE "_svc_meta.rls" ADD COLUMN named TEXT;
