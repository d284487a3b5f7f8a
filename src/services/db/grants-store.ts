import type { ProjectLease } from '../../project/registry.js';
import type { Grantee, Grants, TableGrants } from '../../sql/grants.js';

/**
 * The recorded table privileges (`_svc_meta.grants`, schema/project/0014_grants.sql): only
 * tables and roles that differ from Supabase's defaults have a row. Read with the catalog
 * (store.ts), which every GRANT/REVOKE reloads.
 */
export function loadGrants(lease: ProjectLease): Grants {
  const rows = lease.stmt('SELECT tbl, grantee, privileges FROM "_svc_meta.grants"').all() as Array<{ tbl: string; grantee: Grantee; privileges: number }>;
  const out = new Map<string, Partial<Record<Grantee, number>>>();
  for (const r of rows) {
    let g = out.get(r.tbl);
    if (g === undefined) out.set(r.tbl, (g = {}));
    g[r.grantee] = r.privileges;
  }
  return out as Map<string, TableGrants>;
}
