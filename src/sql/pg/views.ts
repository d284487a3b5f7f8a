import { EdgeError } from '../../core/errors.js';
import { DROP_GRANTS } from '../grants.js';
import { physicalName, quoteIdent } from '../../project/schemas.js';
import { NOW, unsupported, type Emitter, type Node } from './emit.js';
import { kind, lowerSelect, only, rangeVar, str } from './lower.js';
import { parseScript } from './parse.js';
import { isReservedName, reservedRefusal } from './reserved.js';
import type { Statement, Step } from './statements.js';
import type { ColumnType, PgType } from './types.js';
import type { IntrospectTable } from './introspect.js';

/**
 * Views (docs/sql.md "Views"): `CREATE [OR REPLACE] VIEW` keeps the statement as written in
 * `_svc_meta.views` (with the view's columns and the tables and views it reads); a query that
 * names the view gets the view's SELECT, translated again in the caller's statement, as a derived
 * table. So every table inside is the caller's RLS-filtered form exactly as in a direct query
 * (Postgres' `security_invoker`), for every caller and at any depth of views over views.
 *
 * SQLite also gets a view of the name, with the columns and no rows (`… WHERE 0`): it holds the
 * name in SQLite's namespace (a table or index of that name cannot be made, and the rows API's
 * `POST /db/tables` sees it taken) and every CREATE/DROP changes SQLite's schema version, which
 * the translation cache is keyed by. It never yields a row, so nothing reading it bypasses RLS.
 */
export interface StoredView {
  name: string;
  /** The CREATE VIEW statement as written. */
  definition: string;
  /** Its columns as the translator typed them when it was made. */
  columns: ColumnType[];
  /** Every table and view it reads, through other views too (physical names). */
  deps: string[];
  /** `COMMENT ON VIEW` / `COMMENT ON COLUMN` texts, when set (read by src/services/db/view-store.ts). */
  comment?: string;
  columnComments?: Record<string, string>;
}
/** The project's views by name (query.ts reads `_svc_meta.views`; a script's own CREATE/DROP VIEW are applied over it). */
export type ViewCatalog = () => Map<string, StoredView>;

/** What a CREATE/DROP VIEW (or DROP TABLE … CASCADE) changes in the view catalog, for later statements of the script. */
export interface ViewEffect {
  set?: StoredView;
  drop?: string[];
}

const VIEWS_TABLE = '"_svc_meta.views"';
/** Postgres' limit on a select list (`target lists can have at most 1664 entries`). */
const MAX_COLUMNS = 1664;
const MAX_NESTING = 32;

const pgFail = (sqlstate: string, message: string, more: Record<string, string> = {}): EdgeError =>
  new EdgeError('invalid_request', message, { details: { sqlstate, ...more } });

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

// ---------------------------------------------------------------- lowering (lower-stmt.ts)

/** `CREATE [OR REPLACE] VIEW v [(cols)] [WITH (security_invoker …)] AS <select>` → the emitter's `pe_view` node. */
export function lowerView(f: Record<string, unknown>, text: string): Node {
  only('CREATE VIEW', f, 'view,aliases,query,replace,options,withCheckOption');
  const rel = f.view as Record<string, unknown>;
  if (rel.relpersistence === 't') throw unsupported('temporary views');
  if (f.withCheckOption && f.withCheckOption !== 'NO_CHECK_OPTION') throw unsupported('WITH CHECK OPTION (views here are read-only)');
  for (const o of list(f.options)) viewOption(o);
  return { type: 'pe_view', table: rangeVar(rel), replace: Boolean(f.replace), aliases: list(f.aliases).map(str), query: lowerSelect(f.query), text };
}

/** `security_invoker [= true | on]` (what every view here is) and `security_barrier` (no change of result) are accepted; anything else is refused by name. */
function viewOption(o: unknown): void {
  const [, d] = kind(o);
  const name = String(d.defname);
  if (name !== 'security_invoker' && name !== 'security_barrier') throw unsupported(`view option ${name}`);
  const v = d.arg === undefined ? 'true' : optionValue(d.arg);
  if (name === 'security_invoker' && !['true', 'on', '1', 'yes'].includes(v)) {
    throw unsupported("security_invoker = false (a view here always reads its tables with the caller's row-level security)");
  }
}

/** `ALTER VIEW [IF EXISTS] v SET (security_invoker = on)` (Supabase's fix for its advisor's warning): accepted, it changes nothing here. */
export function lowerAlterView(f: Record<string, unknown>): Node {
  only('ALTER VIEW', f, 'relation,cmds,objtype,missing_ok');
  const rel = rangeVar(f.relation as Record<string, unknown>);
  for (const cmd of list(f.cmds)) {
    const [, c] = kind(cmd);
    if (c.subtype !== 'AT_SetRelOptions') throw unsupported(`ALTER VIEW … ${String(c.subtype).replace(/^AT_/, '').replace(/([a-z])([A-Z])/g, '$1 $2').toUpperCase()}`);
    const def = c.def as { List?: { items?: unknown } } | undefined;
    for (const o of list(def?.List?.items)) viewOption(o);
  }
  return { type: 'pe_alter_view', table: rel, ifExists: Boolean(f.missing_ok) };
}

export function alterView(n: Node, em: Emitter): Statement {
  const t = n.table as Node;
  const name = viewName(t.db, t.table);
  if (!em.opts.views?.().has(name) && !n.ifExists) {
    if (em.opts.schema(name) !== null) throw pgFail('42809', `"${name}" is not a view`);
    throw pgFail('42P01', `relation "${name}" does not exist`);
  }
  return { command: 'ALTER VIEW', steps: [], columns: [], readOnly: false };
}

function optionValue(arg: unknown): string {
  const [k, f] = kind(arg);
  if (k === 'String') return String(f.sval ?? '').toLowerCase();
  if (k === 'Integer') return String(f.ival ?? 0);
  if (k === 'Boolean') return f.boolval ? 'true' : 'false';
  throw unsupported(`this view option value (${k})`);
}

/** `DROP VIEW [IF EXISTS] a, b [CASCADE | RESTRICT]` → the emitter's `pe_drop_view` node. */
export function lowerDropView(f: Record<string, unknown>): Node {
  const names = list(f.objects).map((o) => list(kind(o)[1].items).map(str));
  return { type: 'pe_drop_view', names, ifExists: Boolean(f.missing_ok), cascade: f.behavior === 'DROP_CASCADE' };
}

// ---------------------------------------------------------------- reading a view where a query names it

/** Lowered view bodies by definition text (a view is expanded in every query that names it). */
const lowered = new Map<string, { query: Node; aliases: string[] }>();

function loweredDefinition(definition: string): { query: Node; aliases: string[] } {
  let hit = lowered.get(definition);
  if (!hit) {
    const [k, f] = kind(parseScript(definition)[0]!.node);
    if (k !== 'ViewStmt') throw new Error('a stored view definition is not CREATE VIEW');
    hit = { query: lowerSelect(f.query), aliases: list(f.aliases).map(str) };
    if (lowered.size >= 500) lowered.delete(lowered.keys().next().value as string);
    lowered.set(definition, hit);
  }
  return hit;
}

/** Per emitter: the views being expanded (innermost last), and every view it read. */
const expanding = new WeakMap<Emitter, { stack: string[]; read: Set<string> }>();
const stateOf = (em: Emitter) => {
  let s = expanding.get(em);
  if (!s) expanding.set(em, (s = { stack: [], read: new Set() }));
  return s;
};

/** The view `name` (of schema `db`, public or none) if there is one: its SQL and columns as a FROM item of alias `as`. */
export function viewFrom(em: Emitter, db: unknown, name: string, as: string | null): { text: string; source: { alias: string; columns: ColumnType[] } } | null {
  const named = viewNamed(em, db, name);
  if (named === null) return null;
  const v = em.opts.views!().get(named)!;
  const { query, aliases } = loweredDefinition(v.definition);
  // note: the caller needs SELECT on the view itself (GRANT/REVOKE … ON v), then on each table
  // inside, as Postgres asks of a security_invoker view (privileges.ts reads refs).
  em.refs.push(v.name);
  const body = viewBody(em, v.name, query, aliases, v.columns.length);
  const alias = as ?? v.name;
  return { text: `${body.sql} AS ${quoteIdent(alias)}`, source: { alias, columns: body.columns } };
}

/**
 * A view's SELECT, emitted in the caller's statement: outer CTEs are not visible inside (as in
 * Postgres), its column names are applied by a CTE's column list (a view's select list may repeat
 * an inner name, `select 1, 2`), and a view met again inside itself is Postgres' 42P17.
 */
function viewBody(em: Emitter, name: string, query: Node, aliases: string[], keep: number | null = null): { sql: string; columns: ColumnType[] } {
  const st = stateOf(em);
  if (st.stack.includes(name)) throw pgFail('42P17', `infinite recursion detected in rules for relation "${name}"`);
  if (st.stack.length >= MAX_NESTING) throw unsupported(`views nested more than ${MAX_NESTING} deep`);
  st.stack.push(name);
  st.read.add(name);
  const ctes = em._ctes.splice(0);
  try {
    const body = em.select(query, []);
    if (!body.columns) throw unsupported(`a view whose columns are not known (name the columns of "${name}")`);
    if (aliases.length > body.columns.length) throw pgFail('42601', 'CREATE VIEW specifies more column names than columns');
    const columns = body.columns.map((c, i) => ({ name: aliases[i] ?? c.name, type: c.type === 'unknown' ? 'text' : c.type }));
    const cte = quoteIdent(`pe_view.${name}`);
    // note: as in Postgres, a view keeps the columns it was made with (`select *` over a table that gained one since).
    const n = keep ?? columns.length;
    if (n > columns.length) throw new EdgeError('invalid_request', `view "${name}" no longer matches its tables: create it again (CREATE OR REPLACE VIEW)`);
    const names = columns.map((c, i) => quoteIdent(i < n ? c.name : `pe_extra_${i}`));
    const out = names.slice(0, n).join(', ');
    return { sql: `(WITH ${cte} (${names.join(', ')}) AS (${body.sql}) SELECT ${out} FROM ${cte})`, columns: columns.slice(0, n) };
  } finally {
    em._ctes.push(...ctes);
    st.stack.pop();
  }
}

// ---------------------------------------------------------------- statements (statements.ts)

/** A view's name: in `public` (or unqualified), not reserved, a plain identifier. */
function viewName(db: unknown, table: unknown): string {
  const schema = typeof db === 'string' && db !== '' ? db.toLowerCase() : null;
  const name = String(table).toLowerCase();
  if ((schema !== null && isReservedName(schema)) || isReservedName(name)) throw reservedRefusal(schema ? `${schema}.${name}` : name);
  if (schema !== null && schema !== 'public') throw unsupported(`views outside the public schema ("${schema}")`);
  if (name.startsWith('sqlite_') || name.startsWith('pg_') || physicalName(null, name) === null) throw unsupported(`view name "${name}"`);
  return name;
}

export function createView(n: Node, em: Emitter): Statement {
  const t = n.table as Node;
  const name = viewName(t.db, t.table);
  const views = em.opts.views?.() ?? new Map<string, StoredView>();
  const old = views.get(name) ?? null;
  if (!old && em.opts.schema(name) !== null) {
    if (n.replace) throw pgFail('42809', `"${name}" is not a view`);
    throw pgFail('42P07', `relation "${name}" already exists`);
  }
  if (old && !n.replace) throw pgFail('42P07', `relation "${name}" already exists`);
  const body = viewBody(em, name, n.query as Node, n.aliases as string[]);
  const st = stateOf(em);
  st.read.delete(name);
  for (const p of em.params) throw pgFail('42P02', `there is no parameter $${p}`);
  // note: a view over itself, through another one (CREATE OR REPLACE of a view another reads).
  for (const v of st.read) if (views.get(v)?.deps.includes(name)) throw pgFail('42P17', `infinite recursion detected in rules for relation "${name}"`);
  for (const table of em.tables) {
    if (!table.includes('.') && em.columnsOf(table) === null) throw pgFail('42P01', `relation "${table}" does not exist`);
  }
  const columns = body.columns;
  if (columns.length === 0) throw unsupported('views without columns');
  if (columns.length > MAX_COLUMNS) throw new EdgeError('invalid_request', `target lists can have at most ${MAX_COLUMNS} entries`, { details: { sqlstate: '54011' } });
  const seen = new Set<string>();
  for (const c of columns) {
    if (seen.has(c.name)) throw pgFail('42701', `column "${c.name}" specified more than once`);
    seen.add(c.name);
  }
  if (old) replaceable(old.columns, columns);
  const def: StoredView = { name, definition: String(n.text), columns, deps: [...new Set([...em.tables, ...st.read])].sort() };
  const q = quoteIdent(name);
  const steps: Step[] = [
    { sql: `DROP VIEW IF EXISTS ${q}` },
    { sql: `CREATE VIEW ${q} AS SELECT ${columns.map((c) => `NULL AS ${quoteIdent(c.name)}`).join(', ')} WHERE 0` },
    {
      sql: `INSERT INTO ${VIEWS_TABLE} (name, definition, columns, deps, created_at) VALUES (?, ?, ?, ?, ${NOW})
            ON CONFLICT (name) DO UPDATE SET definition = excluded.definition, columns = excluded.columns, deps = excluded.deps`,
      fixed: [name, def.definition, JSON.stringify(columns), JSON.stringify(def.deps)],
    },
  ];
  return { command: 'CREATE VIEW', steps, columns: [], readOnly: false, views: { set: def } };
}

const TYPE_WORDS: Partial<Record<PgType, string>> = { int4: 'integer', int8: 'bigint', float8: 'double precision', bool: 'boolean', timestamptz: 'timestamp with time zone', timestamp: 'timestamp without time zone', 'text[]': 'text[]', 'int4[]': 'integer[]', 'int8[]': 'bigint[]', 'float8[]': 'double precision[]', 'numeric[]': 'numeric[]', 'bool[]': 'boolean[]', 'uuid[]': 'uuid[]' };
const typeWord = (t: PgType | null): string => (t === null ? 'unknown' : (TYPE_WORDS[t] ?? t));

/** Postgres' rule for CREATE OR REPLACE VIEW: the old columns stay, in order, with their names and types; new ones may follow. */
function replaceable(old: ColumnType[], now: ColumnType[]): void {
  if (now.length < old.length) throw pgFail('42P16', 'cannot drop columns from view');
  old.forEach((c, i) => {
    const n = now[i]!;
    if (n.name !== c.name) throw pgFail('42P16', `cannot change name of view column "${c.name}" to "${n.name}"`, { hint: 'Use ALTER VIEW ... RENAME COLUMN ... to change name of view column instead.' });
    if (c.type !== null && n.type !== null && n.type !== c.type) throw pgFail('42P16', `cannot change data type of view column "${c.name}" from ${typeWord(c.type)} to ${typeWord(n.type)}`);
  });
}

/** The steps that drop views (SQLite's placeholder and the catalog row). */
const dropSteps = (names: Iterable<string>): Step[] =>
  [...names].flatMap((v) => [
    { sql: `DROP VIEW IF EXISTS ${quoteIdent(v)}` },
    { sql: `DELETE FROM ${VIEWS_TABLE} WHERE name = ?`, fixed: [v] },
    // note: a view made again under this name starts with the default privileges, as a table does.
    { sql: DROP_GRANTS, fixed: [v] },
  ]);

/** `name` (of schema `db`, public or none) when it is a view of the project, else null: a FROM item, a GRANT/REVOKE (Postgres' `ON TABLE` names views too), a DROP TABLE. */
export function viewNamed(em: Emitter, db: unknown, table: unknown): string | null {
  const schema = typeof db === 'string' && db !== '' ? db.toLowerCase() : null;
  if (schema !== null && schema !== 'public') return null;
  const name = String(table).toLowerCase();
  return em.opts.views?.().has(name) ? name : null;
}

/** Views (other than those in `dropping`) that read `name`, directly or through other views. */
function dependents(views: Map<string, StoredView>, name: string, dropping: ReadonlySet<string>): string[] {
  return [...views.values()].filter((v) => !dropping.has(v.name) && v.deps.includes(name)).map((v) => v.name);
}

function dependError(kindWord: string, name: string, on: string[]): EdgeError {
  return pgFail('2BP01', `cannot drop ${kindWord} ${name} because other objects depend on it`, {
    detail: on.map((v) => `view ${v} depends on ${kindWord} ${name}`).join('\n'),
    hint: 'Use DROP ... CASCADE to drop the dependent objects too.',
  });
}

export function dropView(n: Node, em: Emitter): Statement {
  const views = em.opts.views?.() ?? new Map<string, StoredView>();
  const names: string[] = [];
  for (const parts of n.names as string[][]) {
    if (parts.length > 2) throw unsupported(`the name ${parts.join('.')}`);
    const name = viewName(parts.length === 2 ? parts[0] : null, parts[parts.length - 1]);
    if (views.has(name)) names.push(name);
    else if (em.opts.schema(name) !== null) throw pgFail('42809', `"${name}" is not a view`, { hint: 'Use DROP TABLE to remove a table.' });
    else if (!n.ifExists) throw pgFail('42P01', `view "${name}" does not exist`);
  }
  const dropping = new Set(names);
  for (const name of names) {
    const on = dependents(views, name, dropping);
    if (on.length && !n.cascade) throw dependError('view', name, on);
    for (const v of on) dropping.add(v);
  }
  return { command: 'DROP VIEW', steps: dropSteps(dropping), columns: [], readOnly: false, views: { drop: [...dropping] } };
}

/**
 * DROP TABLE (ddl.ts): the views that read the table are dropped too with CASCADE; without it,
 * Postgres' 2BP01. Returns the steps to run before the table's own.
 */
export function tableDependents(em: Emitter, table: string, cascade: boolean): { steps: Step[]; dropped: string[] } {
  const views = em.opts.views?.();
  if (!views) return { steps: [], dropped: [] };
  const on = dependents(views, table, new Set());
  if (on.length && !cascade) throw dependError('table', table, on);
  return { steps: dropSteps(on), dropped: on };
}

/** ALTER TABLE … DROP/RENAME (ddl.ts) of a table a view reads: refused (the view's text names its columns and the table). */
/** The views that read the table, directly or through other views. */
export function viewsOver(em: Emitter, table: string): string[] {
  return em.opts.views ? dependents(em.opts.views(), table, new Set()) : [];
}

export function refuseAlterUnderView(em: Emitter, table: string): void {
  const on = viewsOver(em, table);
  if (on.length) {
    throw pgFail('2BP01', `cannot alter table ${table} because view ${on[0]} depends on it`, {
      hint: 'Drop the view first (DROP VIEW), change the table, then create the view again.',
    });
  }
}

/** `INSERT`/`UPDATE`/`DELETE` whose target is a view: refused with Postgres' words for a view it cannot update. */
export function refuseViewWrite(n: Node, em: Emitter): void {
  const verb = n.type === 'insert' ? 'insert into' : n.type === 'update' ? 'update' : n.type === 'delete' ? 'delete from' : null;
  if (!verb || !em.opts.views) return;
  const t = ((n.type === 'delete' ? n.from : n.table) as Node[] | undefined)?.[0];
  const schema = typeof t?.db === 'string' ? t.db.toLowerCase() : null;
  if (!t || (schema !== null && schema !== 'public')) return;
  const name = String(t.table).toLowerCase();
  if (!em.opts.views().has(name)) return;
  throw pgFail('55000', `cannot ${verb} view "${name}"`, {
    detail: 'Views are read-only here: write to the tables the view reads (docs/sql.md "Views").',
  });
}

/** Applies a statement's view changes to the catalog later statements of its script see. */
export function applyViewEffect(views: Map<string, StoredView>, e: ViewEffect): void {
  for (const v of e.drop ?? []) views.delete(v);
  if (e.set) views.set(e.set.name, e.set);
}

/** The views as rows of the introspection views (`information_schema.tables` as `VIEW`, `.columns`). */
export function introspectedViews(views: Map<string, StoredView>): IntrospectTable[] {
  return [...views.values()].map((v) => ({ name: v.name, columns: v.columns.map((c) => ({ name: c.name, type: c.type, nullable: true, default: null })), constraints: [], view: true as const }));
}
