import { EdgeError } from '../../core/errors.js';
import { quoteIdent } from '../../project/schemas.js';
import { type Emitter, type Node, PRIMARY_KEY_MARK, columnName, unsupported } from './emit.js';
import type { CatalogDef, Statement, Step } from './statements.js';
import { type PgType, pgTypeOf, toCatalogType, typeNameOf } from './types.js';

/**
 * `create table profiles (id uuid primary key references auth.users …, username text unique, …)`
 * — Supabase's user-management starter — adopts the built-in `profiles` (docs/sql.md "The
 * profiles table"): every user already has exactly one profiles row, made and deleted with
 * the user, so the statement's other columns become auth user fields (docs/api.md "User
 * fields") instead of failing with "already exists". What the user-field model cannot hold
 * is said in the statement's `notices`.
 */

const PROFILES = 'profiles';
/** Columns profiles always has (besides user fields). */
const BUILT_IN: Record<string, Field> = { name: 'text', created_at: 'timestamptz', updated_at: 'timestamptz' };
/** User-field names the auth service keeps for itself (docs/api.md "User fields"). */
const RESERVED = new Set(
  'id email name password password_hash role email_verified user_metadata metadata app_metadata data is_anonymous created_at updated_at last_sign_in_at phone user_id aud sub oid rowid _rowid_'.split(' '),
);
type Field = 'text' | 'bool' | 'int8' | 'timestamptz' | 'float8';
const DECL: Record<Field, string> = { text: 'TEXT', bool: 'BOOLEAN', int8: 'INT8', timestamptz: 'TIMESTAMPTZ', float8: 'FLOAT8' };
const FIELDS = '"_svc_meta.auth_user_fields"';

/** The user-field type of a Postgres column type, or null when the model has none. */
function fieldOf(t: PgType | null): Field | null {
  switch (t) {
    case 'text':
      return 'text';
    case 'bool':
      return 'bool';
    case 'int4':
    case 'int8':
      return 'int8';
    case 'float8':
    case 'numeric':
      return 'float8';
    case 'timestamptz':
    case 'timestamp':
      return 'timestamptz';
  }
  return null;
}

const isAuthUsers = (r: Node | undefined): boolean => {
  const t = (r?.table as Node[] | undefined)?.[0];
  const cols = ((r?.definition as Node[] | undefined) ?? []).map((c) => columnName(c));
  return String(t?.db ?? '').toLowerCase() === 'auth' && String(t?.table ?? '').toLowerCase() === 'users' && cols.length === 1 && (cols[0] === 'id' || cols[0] === PRIMARY_KEY_MARK);
};

const clash = (column: string, message: string): EdgeError =>
  new EdgeError('invalid_request', `column "${column}" of profiles: ${message}`, { details: { sqlstate: '42804', table: PROFILES, column } });

/** The adoption's statement; null for another table. */
export function adoptProfiles(n: Node, em: Emitter, phys: string): Statement | null {
  if (phys !== PROFILES) return null;
  const current = em.opts.schema(PROFILES);
  if (current === null) return null;
  const defs = (n.create_definitions as Node[] | undefined) ?? [];
  const columns = defs.filter((d) => d.resource === 'column');
  const constraints = defs.filter((d) => d.resource === 'constraint');
  const id = columns.find((c) => columnName(c.column as Node) === 'id');
  if (!id || pgTypeOf(typeNameOf(id.definition as Node)) !== 'uuid') return exists(n);
  const keyCols = (d: Node) => ((d.definition as Node[] | undefined) ?? []).map((k) => columnName(k));
  const tableType = (d: Node) => String(d.constraint_type ?? '').toLowerCase();
  const pk = Boolean(id.primary_key) || constraints.some((d) => tableType(d) === 'primary key' && keyCols(d).join() === 'id');
  const fk = isAuthUsers(id.reference_definition as Node | undefined) || constraints.some((d) => tableType(d) === 'foreign key' && keyCols(d).join() === 'id' && isAuthUsers(d.reference_definition as Node));
  if (!pk || !fk) return exists(n);

  const notices: string[] = [];
  const steps: Step[] = [];
  const have = new Map(current.map((c) => [c.name, c]));
  const added: Array<{ name: string; type: Field; pg: PgType }> = [];
  const uniques: string[][] = [];
  // Table constraints: the key is profiles' own; one-column checks and unique keys are kept.
  for (const d of constraints) {
    const t = tableType(d);
    if (t === 'primary key' || t === 'foreign key') {
      if (keyCols(d).join() !== 'id') notices.push(`${t} (${keyCols(d).join(', ')}) is not kept: profiles' key is id, a key to auth.users`);
      continue;
    }
    if (t === 'unique') uniques.push(keyCols(d));
    else if (t !== 'check') notices.push(`constraint ${String(d.constraint ?? t)} is not kept`);
  }
  const colChecks: Array<{ column: string; name: string | null; exprs: Node[] }> = [];
  for (const c of columns) {
    const name = columnName(c.column as Node);
    if (name === 'id') continue;
    const raw = typeNameOf(c.definition as Node);
    const pg = pgTypeOf(raw);
    const field = fieldOf(pg);
    if (!field) throw clash(name, `type ${raw.toLowerCase()} has no user-field counterpart (text, bool, int8, float8, timestamptz)`);
    const old = have.get(name);
    if (BUILT_IN[name] || old) {
      const oldField = BUILT_IN[name] ?? fieldOf(old?.type ?? null);
      if (oldField !== field) throw clash(name, `it exists as ${oldField ?? 'another type'}, this statement declares ${raw.toLowerCase()}`);
      if (c.check || c.unique) notices.push(`column "${name}" already exists: its UNIQUE or CHECK here is not added`);
      continue;
    }
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name) || RESERVED.has(name) || name.startsWith('_svc')) throw clash(name, 'this name is reserved for the auth service or not a user-field name');
    added.push({ name, type: field, pg: pg! });
    if (c.unique) uniques.push([name]);
    const check = c.check as { definition?: Node[]; name?: string } | undefined;
    if (check?.definition?.length) colChecks.push({ column: name, name: check.name ?? null, exprs: check.definition });
    if ((c.nullable as Node | undefined)?.type === 'not null') notices.push(`column "${name}": NOT NULL is not kept (user fields are nullable: every user has a profiles row before any value)`);
    if (c.default_val) notices.push(`column "${name}": its DEFAULT is not kept (user fields have none)`);
    if (c.reference_definition) notices.push(`column "${name}": its REFERENCES is not kept`);
  }
  const addedNames = new Set(added.map((a) => a.name));
  const scopeOf = (col: string) => [{ alias: '', columns: [{ name: col, type: added.find((a) => a.name === col)!.pg }] }];
  // Table CHECKs that name one new column become that column's CHECK (SQLite adds a CHECK only with its column).
  for (const d of constraints.filter((x) => tableType(x) === 'check')) {
    const exprs = d.definition as Node[];
    const named = new Set<string>();
    collectColumns(exprs, named);
    const only = [...named];
    if (only.length === 1 && addedNames.has(only[0]!)) colChecks.push({ column: only[0]!, name: typeof d.constraint === 'string' ? d.constraint : null, exprs });
    else notices.push(`CHECK ${typeof d.constraint === 'string' ? `${d.constraint} ` : ''}is not kept: it does not name exactly one new column`);
  }
  em.native = true;
  for (const a of added) {
    const parts = [`ALTER TABLE ${quoteIdent(PROFILES)} ADD COLUMN ${quoteIdent(a.name)} ${DECL[a.type]}`];
    for (const ch of colChecks.filter((x) => x.column === a.name)) {
      parts.push(`${ch.name ? `CONSTRAINT ${quoteIdent(ch.name)} ` : ''}CHECK (${ch.exprs.map((x) => em.bool(x, scopeOf(a.name))).join(' AND ')})`);
    }
    steps.push({ sql: parts.join(' ') });
    steps.push({
      sql: `INSERT INTO ${FIELDS} (name, type, required, in_signup, position) VALUES (?, ?, 0, 0, (SELECT coalesce(max(position), -1) + 1 FROM ${FIELDS}))`,
      fixed: [a.name, a.type],
    });
  }
  em.native = false;
  for (const u of uniques) {
    if (!u.every((c) => have.has(c) || addedNames.has(c) || BUILT_IN[c])) throw unsupported(`UNIQUE (${u.join(', ')}) on a column the table does not have`);
    // note: Postgres' name of the constraint, so a violation reads "duplicate key value violates unique constraint "profiles_username_key"".
    steps.push({ sql: `CREATE UNIQUE INDEX IF NOT EXISTS ${quoteIdent(`${PROFILES}_${u.join('_')}_key`)} ON ${quoteIdent(PROFILES)} (${u.map(quoteIdent).join(', ')})` });
  }
  notices.unshift(
    added.length
      ? `profiles exists (one row per user): adopted, with ${added.map((a) => `${a.name} (${a.type})`).join(', ')} as user fields`
      : 'profiles exists (one row per user): adopted, every column was already there',
  );
  const all = [...current, ...added.map((a) => ({ name: a.name, type: a.pg }))];
  const catalogDef: CatalogDef = {
    columns: all
      .filter((c) => !['id', 'created_at', 'updated_at'].includes(c.name))
      .map((c) => ({ name: c.name, type: toCatalogType(c.type) ?? 'text', nullable: true, default: null, unique: false, references: null })),
    indexes: [],
  };
  return { command: 'CREATE TABLE', steps, columns: [], readOnly: false, effect: { table: PROFILES, columns: all }, adopted: true, catalogDef, notices };
}

/** Any other CREATE TABLE profiles: the table exists, as Postgres says (IF NOT EXISTS: its notice, nothing done). */
function exists(n: Node): Statement {
  if (n.if_not_exists) return { command: 'CREATE TABLE', steps: [], columns: [], readOnly: false, notices: ['relation "profiles" already exists, skipping'] };
  throw new EdgeError('invalid_request', 'relation "profiles" already exists', { details: { sqlstate: '42P07' } });
}

/** Column names an expression tree names (column_ref nodes). */
function collectColumns(v: unknown, out: Set<string>): void {
  if (Array.isArray(v)) {
    for (const x of v) collectColumns(x, out);
    return;
  }
  if (!v || typeof v !== 'object') return;
  const n = v as Node;
  if (n.type === 'column_ref') {
    const c = columnName(n);
    if (c !== '*') out.add(c);
    return;
  }
  for (const k of Object.keys(n)) collectColumns(n[k], out);
}
