import type { AuthContext } from '../core/auth-context.js';
import { EdgeError } from '../core/errors.js';

/**
 * Table privileges (docs/sql.md "Privileges: GRANT and REVOKE"): what `GRANT`/`REVOKE` record
 * per table and role, and the one check every access path makes with it (the rows API's
 * `policy`, raw SQL's translation, realtime's subscription and visibility). Supabase's
 * defaults hold for every table: `anon`, `authenticated` and `service_role` have all four
 * privileges, so only tables and roles that differ are stored (`_svc_meta.grants`) and
 * a table absent from the map (nearly always) costs one lookup.
 */

export const GRANTEES = ['anon', 'authenticated', 'service_role'] as const;
export type Grantee = (typeof GRANTEES)[number];

export const SELECT = 1;
export const INSERT = 2;
export const UPDATE = 4;
export const DELETE = 8;
export const ALL_PRIVILEGES = SELECT | INSERT | UPDATE | DELETE;

/** The privileges of one table per role; a role not named has all of them. */
export type TableGrants = Readonly<Partial<Record<Grantee, number>>>;
/** Per physical table name; a table not named has Supabase's defaults. */
export type Grants = ReadonlyMap<string, TableGrants>;

export const NO_GRANTS: Grants = new Map();

/** Postgres' privilege names by bit, in the order Postgres lists them. */
export const PRIVILEGE_NAMES: ReadonlyArray<readonly [number, string]> = [
  [SELECT, 'SELECT'],
  [INSERT, 'INSERT'],
  [UPDATE, 'UPDATE'],
  [DELETE, 'DELETE'],
];

/**
 * The role whose privileges apply: the service key or an operator session is `service_role`,
 * a user's token `authenticated` (whatever role claim the user carries: Postgres' role is the
 * connection's, which Supabase sets to `authenticated` for every signed-in user), else `anon`.
 */
export function granteeOf(auth: AuthContext): Grantee {
  if (auth.role === 'service_role') return 'service_role';
  return auth.user !== null ? 'authenticated' : 'anon';
}

/** Whether the caller holds every privilege of `bits` on the table. */
export function holds(g: TableGrants | undefined, auth: AuthContext, bits: number): boolean {
  if (g === undefined) return true;
  const have = g[granteeOf(auth)];
  return have === undefined || (have & bits) === bits;
}

/** Postgres' answer to a missing privilege: `permission denied for table t` (SQLSTATE 42501), 403 `forbidden`. */
export function permissionDenied(table: string): EdgeError {
  return new EdgeError('forbidden', `permission denied for table ${table}`, { details: { sqlstate: '42501', table } });
}

/** Throws Postgres' permission error unless the caller holds `bits` on the table. */
export function requirePrivilege(g: TableGrants | undefined, auth: AuthContext, table: string, bits: number): void {
  if (!holds(g, auth, bits)) throw permissionDenied(table);
}

/** Throws for the first table of `needed` (table → privilege bits, e.g. a translation's) the caller lacks a privilege on. */
export function requirePrivileges(grants: Grants, auth: AuthContext, needed: ReadonlyMap<string, number>): void {
  if (grants.size === 0) return;
  for (const [table, bits] of needed) requirePrivilege(grants.get(table), auth, table, bits);
}

/** Forgets a dropped table's privileges (a new table of that name starts with the defaults, as in Postgres); bound with the table. */
export const DROP_GRANTS = 'DELETE FROM "_svc_meta.grants" WHERE tbl = ?';
/** Privileges follow a renamed table; bound with (new name, old name). */
export const RENAME_GRANTS = 'UPDATE "_svc_meta.grants" SET tbl = ? WHERE tbl = ?';
