import { EdgeError } from '../../core/errors.js';
import { ALL_PRIVILEGES, DELETE, GRANTEES, INSERT, SELECT, UPDATE, type Grantee } from '../grants.js';
import { unsupported, type Emitter, type Node } from './emit.js';
import { isIntrospectionView } from './introspect.js';
import { kind, only, rangeVar, str } from './lower.js';
import { AUTH_USERS } from './reserved.js';
import { viewNamed } from './views.js';
import type { Statement, Step } from './statements.js';

/**
 * `GRANT`/`REVOKE` (docs/sql.md "Privileges: GRANT and REVOKE"): table privileges of `anon`,
 * `authenticated` and `service_role`, recorded in `_svc_meta.grants` (src/sql/grants.ts) in
 * the script's transaction and enforced on every access path. Privileges on schemas,
 * functions, sequences and the like have nothing to enforce here: accepted, with a notice.
 */

const BITS: Record<string, number> = { select: SELECT, insert: INSERT, update: UPDATE, delete: DELETE };
/** Table privileges Postgres has that no path here needs (no TRUNCATE, triggers or REFERENCES checks). */
const NOTHING_TO_ENFORCE = new Set(['truncate', 'references', 'trigger', 'maintain']);
const OBJECTS: Record<string, string> = {
  OBJECT_SCHEMA: 'SCHEMA',
  OBJECT_FUNCTION: 'FUNCTION',
  OBJECT_PROCEDURE: 'PROCEDURE',
  OBJECT_ROUTINE: 'ROUTINE',
  OBJECT_SEQUENCE: 'SEQUENCE',
  OBJECT_DATABASE: 'DATABASE',
  OBJECT_TYPE: 'TYPE',
  OBJECT_DOMAIN: 'DOMAIN',
  OBJECT_LARGEOBJECT: 'LARGE OBJECT',
  OBJECT_LANGUAGE: 'LANGUAGE',
  OBJECT_TABLESPACE: 'TABLESPACE',
  OBJECT_FDW: 'FOREIGN DATA WRAPPER',
  OBJECT_FOREIGN_SERVER: 'FOREIGN SERVER',
};
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/** The emitter's node of a `GrantStmt` (lower-stmt.ts). */
export function lowerGrant(f: Record<string, unknown>): Node {
  const word = f.is_grant === true ? 'GRANT' : 'REVOKE';
  if (f.grant_option === true) throw unsupported(word === 'GRANT' ? 'WITH GRANT OPTION (only the service role grants here)' : 'REVOKE GRANT OPTION FOR');
  if (f.grantor) throw unsupported('GRANTED BY');
  only(word, f, 'is_grant,targtype,objtype,objects,privileges,grantees,behavior');
  const notices: string[] = [];
  const objtype = String(f.objtype);
  if (objtype !== 'OBJECT_TABLE') {
    const what = OBJECTS[objtype] ?? objtype.replace(/^OBJECT_/, '').replaceAll('_', ' ');
    notices.push(`${word} … ON ${f.targtype === 'ACL_TARGET_ALL_IN_SCHEMA' ? `ALL ${what}S IN SCHEMA` : what} changes nothing here: only table privileges are enforced (docs/sql.md "Privileges: GRANT and REVOKE")`);
    return { type: 'pe_grant', grant: word === 'GRANT', tables: [], all: false, bits: 0, grantees: [], notices };
  }
  let bits = 0;
  const privs = list(f.privileges);
  if (privs.length === 0) bits = ALL_PRIVILEGES;
  for (const p of privs) {
    const [k, pf] = kind(p);
    if (k !== 'AccessPriv') throw unsupported(`${k} in ${word}`);
    const name = typeof pf.priv_name === 'string' ? pf.priv_name.toLowerCase() : 'all';
    if (list(pf.cols).length) throw unsupported(`column-level privileges (${word} ${name.toUpperCase()} (columns) ON a table): grant on the whole table, and choose columns with RLS or a view`);
    if (BITS[name] !== undefined) bits |= BITS[name];
    else if (NOTHING_TO_ENFORCE.has(name)) notices.push(`${name.toUpperCase()} has nothing to enforce here (no path needs it): recorded as nothing`);
    else throw new EdgeError('invalid_request', `invalid privilege type ${name.toUpperCase()} for relation`, { details: { sqlstate: '0LP01' } });
  }
  const grantees = new Set<Grantee>();
  for (const g of list(f.grantees)) {
    const [, rf] = kind(g);
    if (rf.roletype === 'ROLESPEC_PUBLIC') {
      // note: PUBLIC is every role; Supabase grants to anon/authenticated/service_role themselves, so revoking from PUBLIC leaves those grants.
      if (word === 'GRANT') for (const r of GRANTEES) grantees.add(r);
      else notices.push('REVOKE … FROM PUBLIC leaves the privileges anon, authenticated and service_role hold themselves (as in Supabase): name them');
      continue;
    }
    if (rf.roletype !== 'ROLESPEC_CSTRING') throw unsupported(`${String(rf.roletype).replace(/^ROLESPEC_/, '')} as a grantee`);
    const role = String(rf.rolename);
    if ((GRANTEES as readonly string[]).includes(role)) grantees.add(role as Grantee);
    else if (role === 'postgres') notices.push('postgres owns every table and keeps every privilege: nothing changed for it');
    else throw new EdgeError('invalid_request', `role "${role}" does not exist (the roles are anon, authenticated and service_role)`, { details: { sqlstate: '42704' } });
  }
  const all = f.targtype === 'ACL_TARGET_ALL_IN_SCHEMA';
  const tables: Node[] = [];
  for (const o of list(f.objects)) {
    if (all) {
      const schema = str(o);
      if (schema !== 'public') throw unsupported(`schema "${schema}" (tables live in public)`);
    } else {
      const [k, of] = kind(o);
      if (k !== 'RangeVar') throw unsupported(`${k} in ${word}`);
      tables.push(rangeVar(of));
    }
  }
  return { type: 'pe_grant', grant: word === 'GRANT', tables, all, bits, grantees: [...grantees], notices };
}

/**
 * `ALTER DEFAULT PRIVILEGES … GRANT …` (in Supabase's dumped migrations): the defaults here are
 * fixed at Supabase's, every privilege for the three roles on new tables, so granting them
 * again changes nothing (a notice says so); revoking defaults is refused by name.
 */
export function lowerDefaultPrivileges(f: Record<string, unknown>): Node {
  only('ALTER DEFAULT PRIVILEGES', f, 'options,action');
  const action = (f.action ?? {}) as Record<string, unknown>;
  if (action.is_grant !== true) throw unsupported('ALTER DEFAULT PRIVILEGES … REVOKE (new tables always start with every privilege for anon, authenticated and service_role; REVOKE on the table after creating it)');
  const notices = ['ALTER DEFAULT PRIVILEGES … GRANT changes nothing here: new tables always start with every privilege for anon, authenticated and service_role, as in Supabase'];
  return { type: 'pe_grant', grant: true, tables: [], all: false, bits: 0, grantees: [], notices };
}

const UPSERT_REVOKE = `ON CONFLICT (tbl, grantee) DO UPDATE SET privileges = "_svc_meta.grants".privileges & excluded.privileges`;
/**
 * The project's tables (and views: Postgres' ALL TABLES includes them) in public, as the statement
 * runs, so a table an earlier statement of the script made counts.
 */
const PUBLIC_TABLES = `SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE '\\_svc\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND instr(name, '.') = 0`;

/** The statement of a lowered `pe_grant` node: its writes to `_svc_meta.grants`, and its notices. */
export function grantStatement(n: Node, em: Emitter): Statement {
  const command = n.grant === true ? 'GRANT' : 'REVOKE';
  const bits = Number(n.bits);
  const grantees = n.grantees as Grantee[];
  const notices = n.notices as string[];
  const steps: Step[] = [];
  const names: string[] = [];
  for (const t of n.tables as Node[]) {
    const view = viewNamed(em, t.db, t.table);
    if (view !== null) {
      names.push(view);
      continue;
    }
    const phys = em.physical(t.db, t.table, true);
    if (phys === AUTH_USERS || isIntrospectionView(phys)) throw unsupported(`privileges on ${phys} (only the service role reads it)`);
    if (em.opts.schema(phys) === null) throw new EdgeError('invalid_request', `relation "${phys}" does not exist`, { details: { sqlstate: '42P01' } });
    names.push(phys);
  }
  if (bits !== 0) {
    for (const g of grantees) {
      if (n.all === true) {
        steps.push(
          command === 'GRANT'
            ? { sql: `UPDATE "_svc_meta.grants" SET privileges = privileges | ? WHERE grantee = ?`, fixed: [bits, g] }
            : { sql: `INSERT INTO "_svc_meta.grants" (tbl, grantee, privileges) SELECT name, ?, ? FROM (${PUBLIC_TABLES}) WHERE true ${UPSERT_REVOKE}`, fixed: [g, ALL_PRIVILEGES & ~bits] },
        );
        continue;
      }
      for (const phys of names) {
        steps.push(
          command === 'GRANT'
            ? { sql: `UPDATE "_svc_meta.grants" SET privileges = privileges | ? WHERE tbl = ? AND grantee = ?`, fixed: [bits, phys, g] }
            : { sql: `INSERT INTO "_svc_meta.grants" (tbl, grantee, privileges) VALUES (?, ?, ?) ${UPSERT_REVOKE}`, fixed: [phys, g, ALL_PRIVILEGES & ~bits] },
        );
      }
    }
    // note: a row only for what differs from the defaults (all four privileges), so the common case costs nothing.
    if (command === 'GRANT' && steps.length) steps.push({ sql: `DELETE FROM "_svc_meta.grants" WHERE privileges = ${ALL_PRIVILEGES}` });
  }
  const out: Statement = { command, steps, columns: [], readOnly: false, grants: true };
  if (notices.length) out.notices = notices;
  return out;
}
