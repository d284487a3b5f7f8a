import { EdgeError } from '../../core/errors.js';
import { DROP_GRANTS, RENAME_GRANTS } from '../grants.js';
import { quoteIdent } from '../../project/schemas.js';
import { quoteLiteral } from '../quote.js';
import { BIND_CONVERSIONS, Emitter, type Expr, type Node, PRIMARY_KEY_MARK, columnName, unsupported } from './emit.js';
import { conversion } from './bind-conversion.js';
import { isReservedName, reservedRefusal } from './reserved.js';
import { DECLTYPE, isArrayType, type PgType, pgTypeOf, toCatalogType, typeNameOf } from './types.js';
import { type CatalogDef, NOW, type Statement, type Step } from './statements.js';
import { commentSteps, dropEnumTriggers, enumCast, enumDecl, enumLabels, enumTriggers, renameEnumTriggers } from './types-ddl.js';
import { indexMethod } from './index-methods.js';
import { callerDefaultText } from '../caller.js';
import { adoptProfiles } from './profiles-adopt.js';
import { refuseAlterUnderView, tableDependents, viewNamed } from './views.js';
import { alterColumn } from './alter-column.js';

/** Per array type, the characters (a GLOB class) its canonical JSON may hold: a CHECK of the elements' type (docs/sql.md "Arrays"). */
const ELEMENT_CHARS: Partial<Record<string, string>> = {
  'int4[]': '0-9,[nul-',
  'int8[]': '0-9,[nul-',
  'float8[]': '0-9,[nul.eE+-',
  'numeric[]': '0-9,[nul.eE+-',
  'bool[]': ',[nultrefas',
  'uuid[]': '0-9a-f,["nul-',
};

/** DDL: CREATE TABLE / INDEX / EXTENSION, ALTER TABLE, DROP (one room of the emitter; statements.ts dispatches). */


interface ColumnSpec {
  name: string;
  type: PgType;
  sql: string;
  pk: boolean;
  notNull: boolean;
  unique: boolean;
  hasDefault: boolean;
  /** `GENERATED … AS IDENTITY` (the primary key, an autoincrementing rowid). */
  identity: boolean;
  references: { table: string; column: string; on_delete: string } | null;
  /** The enum type of a column declared with one (types-ddl.ts). */
  enum?: string;
  /** A DEFAULT naming the caller as written (`auth.uid()`): kept in the catalog, so /db/schema shows it. */
  callerDefault?: string;
}

export function createTable(n: Node, em: Emitter): Statement {
  if (n.temporary) throw unsupported('temporary tables');
  if (n.as || n.query_expr) throw unsupported('CREATE TABLE … AS');
  if (n.like) throw unsupported('CREATE TABLE … LIKE');
  const t = (n.table as Node[])[0]!;
  const phys = em.physical(t.db, t.table);
  const adopted = adoptProfiles(n, em, phys);
  if (adopted) return adopted;
  if (phys.startsWith('_svc') || phys.startsWith('pg_')) {
    if (!phys.includes('.')) throw unsupported(`table name "${phys}" (reserved prefix)`);
  }
  em.native = true;
  const cols: ColumnSpec[] = [];
  const constraints: string[] = [];
  let tablePk: string[] | null = null;
  for (const d of (n.create_definitions as Node[]) ?? []) {
    if (d.resource === 'column') cols.push(columnSpec(d, em, phys));
    else if (d.resource === 'constraint') {
      const ct = String(d.constraint_type ?? '').toLowerCase();
      // note: a CHECK's definition is expressions, not column names: read as names only for key constraints.
      const keys = ct === 'check' ? [] : ((d.definition as Node[]) ?? []).map((k) => em.ident(columnName(k)));
      const named = d.constraint ? `CONSTRAINT ${em.ident(String(d.constraint))} ` : '';
      if (ct === 'primary key') {
        tablePk = ((d.definition as Node[]) ?? []).map((k) => columnName(k));
        constraints.push(`${named}PRIMARY KEY (${keys.join(', ')})`);
      } else if (ct === 'unique' || ct === 'unique key' || ct === 'unique index') constraints.push(`${named}UNIQUE (${keys.join(', ')})`);
      else if (ct === 'check') constraints.push(`${named}CHECK (${((d.definition as Node[]) ?? []).map((x) => em.bool(x, [{ alias: phys, columns: cols }])).join(' AND ')})`);
      else if (ct === 'foreign key') {
        const r = references(d.reference_definition as Node, em, phys);
        constraints.push(`${named}FOREIGN KEY (${keys.join(', ')}) ${r.sql}`);
        // note: a one-column key is the column's reference in the catalog, as when written on the column.
        const own = keys.length === 1 ? cols.find((c) => c.name === columnName(((d.definition as Node[]) ?? [])[0]!)) : undefined;
        if (own && r.ref && !own.references) own.references = r.ref;
      }
      else throw unsupported(`table constraint ${ct}`);
    } else throw unsupported(`this table definition item (${String(d.resource)})`);
  }
  em.native = false;
  if (cols.length === 0) throw unsupported('tables without columns');
  const body = [...cols.map((c) => c.sql), ...constraints].join(', ');
  const ine = n.if_not_exists ? 'IF NOT EXISTS ' : '';
  const steps: Step[] = [{ sql: `CREATE TABLE ${ine}${quoteIdent(phys)} (${body})` }];
  if (n.pe_identity_always === true) {
    const id = cols.find((c) => c.identity);
    if (!id) throw unsupported('GENERATED ALWAYS AS IDENTITY outside a column definition');
    steps.push(...alwaysIdentity(phys, id.name, ine));
  }
  for (const c of cols) if (c.enum) steps.push(...enumTriggers(phys, c.name, c.enum));
  const catalog = catalogDef(phys, cols, tablePk);
  if (catalog) {
    steps.push({
      sql: `INSERT ${ine ? 'OR IGNORE ' : ''}INTO "_svc_meta.tables" (name, kind, def, created_at) VALUES (?, 'relational', ?, ${NOW})`,
      fixed: [phys, JSON.stringify(catalog)],
    });
  }
  return {
    command: 'CREATE TABLE',
    steps,
    columns: [],
    readOnly: false,
    effect: { table: phys, columns: cols.map((c) => ({ name: c.name, type: c.type, pk: c.pk || (tablePk?.length === 1 && tablePk[0] === c.name), ...(c.enum ? { enum: c.enum } : {}) })) },
    adopted: catalog !== null,
    ...(catalog ? { catalogDef: catalog } : {}),
  };
}

/**
 * What `GENERATED ALWAYS AS IDENTITY` adds to BY DEFAULT: the value is never the caller's.
 * An insert that names the column (SQLite shows an omitted rowid as -1 to BEFORE triggers)
 * and an update that changes it are refused with Postgres' messages (400).
 */
function alwaysIdentity(phys: string, col: string, ifNotExists: string): Step[] {
  const t = quoteIdent(phys);
  const c = quoteIdent(col);
  const trigger = (what: string) => `CREATE TRIGGER ${ifNotExists}${quoteIdent(`pe_identity_${what}_${phys}`)}`;
  return [
    { sql: `${trigger('insert')} BEFORE INSERT ON ${t} WHEN NEW.${c} IS NOT -1 BEGIN SELECT RAISE(ABORT, 'pe_invalid_input: cannot insert a non-DEFAULT value into column "${col}"'); END` },
    { sql: `${trigger('update')} BEFORE UPDATE OF ${c} ON ${t} WHEN NEW.${c} IS NOT OLD.${c} BEGIN SELECT RAISE(ABORT, 'pe_invalid_input: column "${col}" can only be updated to DEFAULT'); END` },
  ];
}

/**
 * A raw-DDL table in `public` joins the rows API's catalog when its primary key is one
 * column `id` that the rows API can fill: uuid or text (it writes a UUIDv7), or an integer
 * rowid (`serial`, `bigserial`, `int`/`integer`: SQLite assigns it). `created_at` and
 * `updated_at` timestamptz columns become the rows' timestamps when both are there;
 * otherwise the rows carry none (`stamps: false`) and such columns are data columns.
 */
function catalogDef(phys: string, cols: ColumnSpec[], tablePk: string[] | null): CatalogDef | null {
  if (phys.includes('.')) return null;
  const id = cols.find((c) => c.name === 'id');
  if (!id || !(id.pk || (tablePk?.length === 1 && tablePk[0] === 'id'))) return null;
  // note: only INTEGER PRIMARY KEY is SQLite's rowid (assigned when omitted); a BIGINT key is not.
  const rowid = /^"id" INTEGER( |$)/.test(id.sql);
  if (id.type !== 'uuid' && id.type !== 'text' && !rowid) return null;
  const ts = (name: string) => cols.find((c) => c.name === name)?.type === 'timestamptz';
  const stamps = ts('created_at') && ts('updated_at');
  const columns: unknown[] = [];
  for (const c of cols) {
    if (c.name === 'id' || (stamps && (c.name === 'created_at' || c.name === 'updated_at'))) continue;
    const type = toCatalogType(c.type);
    if (!type) return null;
    // note: defaults stay in the table (SQLite applies them); the catalog records none, and such a column is
    // not required by the rows API (it is "nullable" there: an omitted value takes the default).
    columns.push({ name: c.name, type, nullable: !c.notNull || c.hasDefault, default: c.callerDefault ?? null, unique: c.unique, references: c.references, ...(c.enum ? { enum: c.enum } : {}) });
  }
  return { columns, indexes: [], ...(rowid ? { key: 'int8' as const } : {}), ...(stamps ? {} : { stamps: false as const }) };
}

/** A column definition; `self` is the table it belongs to (a foreign key may name it). */
function columnSpec(d: Node, em: Emitter, self: string): ColumnSpec {
  const name = columnName(d.column as Node);
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw unsupported(`column name "${name}"`);
  const def = d.definition as Node;
  const raw = typeNameOf(def);
  let type = pgTypeOf(raw);
  const enumType = !type && enumLabels(em, raw) ? raw.toLowerCase() : null;
  if (enumType) type = 'text';
  if (!type || type === 'interval' || type === 'unknown') throw unsupported(`column type ${raw.toLowerCase()}`);
  // note: `generated by default as identity` (Supabase's default key) is a sequence-backed key like serial.
  const identity = d.generated_by_default !== undefined && d.generated_by_default !== null;
  if (identity && !/^(SMALLINT|INT|INTEGER|BIGINT|INT2|INT4|INT8)$/i.test(raw)) throw unsupported(`identity columns of type ${raw.toLowerCase()}`);
  const serial = /SERIAL/i.test(raw) || identity;
  const pk = Boolean(d.primary_key);
  const notNull = (d.nullable as Node | undefined)?.type === 'not null' || pk;
  const unique = Boolean(d.unique);
  const parts = [quoteIdent(name)];
  if (serial) {
    if (!pk) throw unsupported(identity ? 'identity columns other than the primary key' : 'serial columns other than the primary key');
    type = 'int8';
    // note: INTEGER PRIMARY KEY is SQLite's rowid; AUTOINCREMENT never reuses a value, like a sequence.
    parts.push('INTEGER PRIMARY KEY AUTOINCREMENT');
  } else {
    parts.push(enumType ? enumDecl(enumType) : DECLTYPE[type as keyof typeof DECLTYPE]);
    if (pk) parts.push('PRIMARY KEY');
    if (notNull && !pk) parts.push('NOT NULL');
    // note: INTEGER PRIMARY KEY is SQLite's rowid, never null (a missing value is assigned; Postgres would
    // refuse it, docs/sql.md); any other key is NOT NULL as in Postgres (SQLite would accept NULL keys).
    if (pk && type !== 'int4') parts.push('NOT NULL');
  }
  if (unique) parts.push('UNIQUE');
  const dv = d.default_val as Node | undefined;
  let callerDefault: string | null = null;
  if (dv) {
    const e = columnDefault(dv, em, type, enumType);
    parts.push(`DEFAULT (${e.sql})`);
    callerDefault = e.caller;
  }
  parts.push(...typeChecks(name, type, raw, def));
  const check = d.check as { definition?: Node[]; name?: string } | undefined;
  if (check?.definition?.length) {
    parts.push(`${check.name ? `CONSTRAINT ${quoteIdent(check.name)} ` : ''}CHECK (${check.definition.map((x) => em.bool(x, [{ alias: '', columns: [{ name, type }] }])).join(' AND ')})`);
  }
  let refs: ColumnSpec['references'] = null;
  if (d.reference_definition) {
    const r = references(d.reference_definition as Node, em, self);
    parts.push(r.sql);
    refs = r.ref;
  }
  return { name, type, sql: parts.join(' '), pk, notNull, unique, hasDefault: Boolean(dv), identity, references: refs, ...(enumType ? { enum: enumType } : {}), ...(callerDefault ? { callerDefault } : {}) };
}

/** A column's DEFAULT as SQLite text (in native SQLite: any connection writes), and the caller it names as written (`auth.uid()`), if any. */
export function columnDefault(dv: Node, em: Emitter, type: PgType, enumType: string | null): { sql: string; caller: string | null } {
  em.callerDefault = true;
  let v: ReturnType<Emitter['expr']>;
  try {
    v = em.expr((dv.value as Node) ?? dv, []);
  } finally {
    em.callerDefault = false;
  }
  // note: an enum column's default must be one of its labels (checked now, as Postgres does).
  const e = enumType ? enumCast(em, enumType, v)! : (foldedLiteral(em, v, type) ?? em.coerce(v, type));
  return { sql: e.sql, caller: callerDefaultText(e.sql) };
}

/**
 * A quoted literal made the column's type by a conversion function (`pe_int('42')`), which
 * DDL cannot call: converted now, as Postgres does when it folds the default, so `'abc'` on an
 * int column is its 22P02 ("invalid input syntax for type integer") and `'42'` the number.
 */
function foldedLiteral(em: Emitter, v: Expr, type: PgType): Expr | null {
  if (v.type !== 'unknown' || !/^'(?:[^']|'')*'$/.test(v.sql)) return null;
  const native = em.native;
  em.native = false;
  let e: Expr;
  try {
    e = em.coerce(v, type);
  } finally {
    em.native = native;
  }
  const m = /^(pe_\w+)\(('(?:[^']|'')*')\)$/.exec(e.sql);
  if (!m || !BIND_CONVERSIONS.has(m[1]!)) return null;
  const out = conversion(m[1]!)(m[2]!.slice(1, -1).replaceAll("''", "'"));
  if (out === null) return { ...e, sql: 'NULL' };
  if (typeof out === 'bigint' || (typeof out === 'number' && Number.isFinite(out))) return { ...e, sql: String(out) };
  if (typeof out === 'string') return { ...e, sql: quoteLiteral(out) };
  return null;
}

/** The CHECKs a column of this type carries (its length, booleans, JSON, arrays' elements). */
export function typeChecks(name: string, type: PgType, raw: string, def: Node): string[] {
  const q = quoteIdent(name);
  const parts: string[] = [];
  if (def.length && type === 'text' && /CHAR/i.test(raw)) {
    // note: named, so that a violation reads as Postgres' "value too long for type …" (22001), not as a CHECK (query.ts).
    parts.push(`CONSTRAINT pe_${/VAR/i.test(raw) ? 'varchar' : 'bpchar'}_${Number(def.length)} CHECK (length(${q}) <= ${Number(def.length)})`);
  }
  if (type === 'bool') parts.push(`CHECK (${q} IN (0, 1))`);
  if (type === 'jsonb' || type === 'json') parts.push(`CHECK (json_valid(${q}))`);
  if (isArrayType(type)) parts.push(`CHECK (json_valid(${q}) AND json_type(${q}) = 'array')`);
  // note: the elements' type, in native SQLite (any connection writes): the characters their JSON may hold.
  if (isArrayType(type) && ELEMENT_CHARS[type]) parts.push(`CONSTRAINT pe_array_${type.slice(0, -2)} CHECK (${q} NOT GLOB '*[^]${ELEMENT_CHARS[type]}]*')`);
  return parts;
}

/**
 * `REFERENCES t [(cols)] [ON DELETE …]`. Without a column list (lower-stmt.ts puts the mark
 * there) it is t's primary key, as in Postgres: SQLite reads a bare
 * REFERENCES the same way. `auth.users`, Supabase's user table, is `profiles` here: every
 * user has exactly one profiles row with the user's id, made and deleted with the user, so
 * a key to it is a key to the user (docs/sql.md "Names").
 */
function references(r: Node, em: Emitter, self: string): { sql: string; ref: ColumnSpec['references'] } {
  const t = (r.table as Node[])[0]!;
  const authUsers = String(t.db ?? '').toLowerCase() === 'auth' && String(t.table).toLowerCase() === 'users';
  const phys = authUsers ? 'profiles' : em.physical(t.db, t.table);
  const target = em.opts.schema(phys);
  // note: SQLite accepts a key to a missing table (and fails each write later); Postgres refuses it at once.
  if (target === null && phys !== self) throw new EdgeError('invalid_request', `relation "${phys}" does not exist`);
  let cols = ((r.definition as Node[]) ?? []).map((c) => columnName(c));
  let refCol = cols.length === 1 ? cols[0]! : null;
  if (cols.length === 1 && cols[0] === PRIMARY_KEY_MARK) {
    cols = [];
    refCol = authUsers ? 'id' : (target?.find((c) => c.pk)?.name ?? null);
    if (target && refCol === null) throw new EdgeError('invalid_request', `there is no primary key for referenced table "${phys}"`);
  }
  let sql = `REFERENCES ${quoteIdent(phys)}${cols.length ? ` (${cols.map(quoteIdent).join(', ')})` : ''}`;
  let onDelete = 'no action';
  for (const a of (r.on_action as Node[]) ?? []) {
    const kind = String(a.type).toLowerCase();
    const v = String((a.value as Node | undefined)?.value ?? '').toLowerCase();
    if (!['cascade', 'set null', 'restrict', 'no action', 'set default'].includes(v)) throw unsupported(`${kind} ${v}`);
    if (kind === 'on delete') onDelete = v;
    else if (kind !== 'on update') throw unsupported(kind);
    sql += ` ${kind.toUpperCase()} ${v.toUpperCase()}`;
  }
  return { sql, ref: refCol !== null ? { table: phys, column: refCol, on_delete: onDelete } : null };
}

export function createIndex(n: Node, em: Emitter): Statement {
  const t = n.table as Node;
  const phys = em.physical(t.db, t.table);
  const using = String((n.index_using as Node | null | undefined)?.type ?? 'btree').toLowerCase();
  // note: SQLite's indexes are B-trees, Postgres' default; GIN, GiST, hash, BRIN have no counterpart (index-methods.ts).
  const method = indexMethod(using, n, em, phys);
  if (method.skip) return { command: 'CREATE INDEX', steps: [], columns: [], readOnly: false, notices: method.notice ? [method.notice] : [] };
  // note: an unnamed index gets Postgres' name, <table>_<columns>_idx (an expression counts as "expr").
  const name = typeof n.index === 'string' ? n.index.toLowerCase() : defaultIndexName(phys, (n.index_columns as Node[]) ?? []);
  if (isReservedName(name)) throw reservedRefusal(name);
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw unsupported(`index name "${name}"`);
  const uniq = String(n.index_type ?? '').toLowerCase() === 'unique' ? 'UNIQUE ' : '';
  if (n.index_type && !uniq) throw unsupported(`${String(n.index_type)} indexes`);
  em.native = true;
  const scope = [{ alias: phys, columns: em.opts.schema(phys) }];
  const cols = ((n.index_columns as Node[]) ?? []).map((c) => {
    const { order_by: by, ...x } = c;
    const dir = String(by ?? '').toUpperCase();
    const e = x.type === 'column_ref' ? em.ident(columnName(x)) : `(${em.expr(x, scope).sql})`;
    return dir === 'DESC' ? `${e} DESC` : e;
  });
  const where = n.where ? ` WHERE ${em.bool(n.where as Node, scope)}` : '';
  em.native = false;
  const ine = n.if_not_exists ? 'IF NOT EXISTS ' : '';
  // note: index names are schema-wide in Postgres and database-wide in SQLite: the same rule for one schema.
  return {
    command: 'CREATE INDEX',
    steps: [{ sql: `CREATE ${uniq}INDEX ${ine}${quoteIdent(name)} ON ${quoteIdent(phys)} (${cols.join(', ')})${where}` }],
    columns: [],
    readOnly: false,
    ...(method.notice ? { notices: [method.notice] } : {}),
  };
}

function defaultIndexName(table: string, cols: Node[]): string {
  const parts = cols.map((c) => (c.type === 'column_ref' ? columnName(c) : 'expr'));
  return `${table}_${parts.join('_')}`.slice(0, 59) + '_idx';
}

/** Extensions Supabase projects have installed, whose functions the translator provides. */
const INSTALLED_EXTENSIONS = new Set(['uuid-ossp', 'pgcrypto']);

/**
 * `CREATE EXTENSION "uuid-ossp" | pgcrypto`: installed already, as in a Supabase project
 * (`uuid_generate_v4()`, `gen_random_uuid()` work), so IF NOT EXISTS does nothing and
 * without it the statement fails as Postgres would. Other extensions are refused by name.
 */
export function createExtension(n: Node): Statement {
  const ext = String((n.extension as Node | undefined)?.value ?? '').toLowerCase();
  if (!INSTALLED_EXTENSIONS.has(ext)) throw unsupported(`extension "${ext}" (installed: uuid-ossp, pgcrypto)`);
  if (!n.if_not_exists) throw new EdgeError('invalid_request', `extension "${ext}" already exists`);
  return { command: 'CREATE EXTENSION', steps: [], columns: [], readOnly: false };
}

export function alter(n: Node, em: Emitter): Statement {
  if (n.keyword !== 'table') throw unsupported(`ALTER ${String(n.keyword).toUpperCase()}`);
  const t = (n.table as Node[])[0]!;
  const phys = em.physical(t.db, t.table);
  const actions = (n.expr as Node[]) ?? [];
  if (actions.length > 1 && actions.every((x) => x.action === 'alter_column')) {
    // note: each change sees the columns as the ones before it left them.
    let cols = em.opts.schema(phys);
    const steps: Step[] = [];
    for (const x of actions) {
      const st = alterColumn(x, em, phys, cols);
      steps.push(...st.steps);
      cols = st.effect!.columns;
    }
    return { command: 'ALTER TABLE', steps, columns: [], readOnly: false, effect: { table: phys, columns: cols } };
  }
  if (actions.length !== 1) throw unsupported('several ALTER TABLE actions in one statement');
  const a = actions[0]!;
  const action = String(a.action).toLowerCase();
  const q = quoteIdent(phys);
  const columns = em.opts.schema(phys);
  if (action === 'alter_column') return alterColumn(a, em, phys, columns);
  if (action !== 'add') refuseAlterUnderView(em, phys);
  if (action === 'add' && a.resource === 'column') {
    em.native = true;
    const c = columnSpec(a, em, phys);
    em.native = false;
    const steps: Step[] = [{ sql: `ALTER TABLE ${q} ADD COLUMN ${c.sql}` }];
    if (c.enum) steps.push(...enumTriggers(phys, c.name, c.enum));
    const type = toCatalogType(c.type);
    if (type) {
      steps.push({
        sql: `UPDATE "_svc_meta.tables" SET def = json_set(def, '$.columns[#]', json(?)) WHERE name = ?`,
        fixed: [JSON.stringify({ name: c.name, type, nullable: true, default: c.callerDefault ?? null, unique: c.unique, references: c.references, ...(c.enum ? { enum: c.enum } : {}) }), phys],
      });
    }
    const added = c.enum ? { name: c.name, type: c.type, enum: c.enum } : { name: c.name, type: c.type };
    return { command: 'ALTER TABLE', steps, columns: [], readOnly: false, effect: { table: phys, columns: columns ? [...columns, added] : null } };
  }
  if (action === 'drop' && a.resource === 'column') {
    const name = columnName(a.column as Node);
    return {
      command: 'ALTER TABLE',
      steps: [
        ...dropEnumTriggers(phys, name),
        // note: and the NOT NULL checks of a column a BEFORE trigger fills (src/sql/worker/relax-not-null.ts).
        ...['insert', 'update'].map((op) => ({ sql: `DROP TRIGGER IF EXISTS ${quoteIdent(`pe_nn_${phys}_${name}_${op}`)}` })),
        commentSteps.dropColumn(phys, name),
        { sql: `ALTER TABLE ${q} DROP COLUMN ${em.ident(name)}` },
        {
          sql: `UPDATE "_svc_meta.tables" SET def = json_set(def, '$.columns', (SELECT json_group_array(json(value)) FROM json_each(def, '$.columns') WHERE json_extract(value, '$.name') <> ?)) WHERE name = ?`,
          fixed: [name, phys],
        },
      ],
      columns: [],
      readOnly: false,
      effect: { table: phys, columns: columns ? columns.filter((c) => c.name !== name) : null },
    };
  }
  if (action === 'rename' && a.resource === 'column') {
    const from = String((a.old_column as Node | undefined)?.column ?? '').toLowerCase();
    const to = String((a.column as Node | undefined)?.column ?? '').toLowerCase();
    const NAME = /^[a-z_][a-z0-9_]{0,62}$/;
    if (!NAME.test(from) || !NAME.test(to)) throw unsupported('this RENAME COLUMN');
    return {
      command: 'ALTER TABLE',
      steps: [
        { sql: `ALTER TABLE ${q} RENAME COLUMN ${quoteIdent(from)} TO ${quoteIdent(to)}` },
        commentSteps.renameColumn(phys, from, to),
        ...renameEnumTriggers(columns, phys, phys, (c) => (c === from ? to : c)),
        {
          sql: `UPDATE "_svc_meta.tables" SET def = json_set(def, '$.columns', (SELECT json_group_array(json_set(value, '$.name', CASE WHEN json_extract(value, '$.name') = ? THEN ? ELSE json_extract(value, '$.name') END)) FROM json_each(def, '$.columns'))) WHERE name = ?`,
          fixed: [from, to, phys],
        },
      ],
      columns: [],
      readOnly: false,
      effect: { table: phys, columns: columns ? columns.map((c) => (c.name === from ? { ...c, name: to } : c)) : null },
    };
  }
  if (action === 'rename' && a.resource === 'table') {
    const to = em.physical(null, a.table);
    return {
      command: 'ALTER TABLE',
      steps: [
        { sql: `ALTER TABLE ${q} RENAME TO ${quoteIdent(to)}` },
        { sql: `UPDATE "_svc_meta.tables" SET name = ? WHERE name = ?`, fixed: [to, phys] },
        { sql: `UPDATE "_svc_meta.rls" SET tbl = ? WHERE tbl = ?`, fixed: [to, phys] },
        { sql: RENAME_GRANTS, fixed: [to, phys] },
        commentSteps.renameTable(phys, to),
        ...renameEnumTriggers(columns, phys, to, (c) => c),
      ],
      columns: [],
      readOnly: false,
      effect: { table: to, columns },
    };
  }
  throw unsupported(`ALTER TABLE … ${action.toUpperCase()} ${String(a.resource ?? '').toUpperCase()}`);
}

export function drop(n: Node, em: Emitter): Statement {
  const kw = String(n.keyword).toLowerCase();
  const ie = String(n.prefix ?? '').toUpperCase() === 'IF EXISTS' ? 'IF EXISTS ' : '';
  const names = Array.isArray(n.name) ? (n.name as Node[]) : [];
  if (kw === 'table') {
    const steps: Step[] = [];
    const effects: string[] = [];
    const dropped: string[] = [];
    for (const x of names) {
      // note: the parser reads a trailing CASCADE/RESTRICT as an alias.
      const mode = typeof x.as === 'string' ? x.as.toLowerCase() : null;
      if (mode && mode !== 'restrict' && mode !== 'cascade') throw unsupported('DROP TABLE with this option');
      const view = viewNamed(em, x.db, x.table);
      if (view !== null) {
        throw new EdgeError('invalid_request', `"${view}" is not a table`, { details: { sqlstate: '42809', hint: 'Use DROP VIEW to remove a view.' } });
      }
      const phys = em.physical(x.db, x.table);
      // note: CASCADE drops the views that read the table (foreign keys from other tables are as without it).
      const views = tableDependents(em, phys, mode === 'cascade');
      steps.push(...views.steps);
      dropped.push(...views.dropped);
      steps.push({ sql: `DROP TABLE ${ie}${quoteIdent(phys)}` });
      steps.push({ sql: `DELETE FROM "_svc_meta.tables" WHERE name = ?`, fixed: [phys] });
      steps.push({ sql: `DELETE FROM "_svc_meta.rls" WHERE tbl = ?`, fixed: [phys] });
      steps.push({ sql: DROP_GRANTS, fixed: [phys] });
      steps.push(commentSteps.dropTable(phys));
      effects.push(phys);
    }
    if (!steps.length) throw unsupported('DROP TABLE without a table');
    return { command: 'DROP TABLE', steps, columns: [], readOnly: false, effect: { table: effects[0]!, columns: null }, ...(dropped.length ? { views: { drop: dropped } } : {}) };
  }
  if (kw === 'index') {
    const list = Array.isArray(n.name) ? (n.name as Node[]) : n.name ? [n.name as Node] : [];
    const steps = list.map((x) => {
      // note: the platform's indexes (on its _svc_* tables) are all named "_svc_…".
      // note: a qualified name `s.i` is read as a column reference whose table is the schema.
      const schema = x.type === 'column_ref' && typeof x.table === 'string' && x.table !== '' ? x.table.toLowerCase() : null;
      if (schema !== null && isReservedName(schema)) throw reservedRefusal(schema);
      if (schema !== null && schema !== 'public') throw unsupported(`schema "${schema}"`);
      const name = (x.type === 'column_ref' ? columnName(x) : String(x.table ?? x.value ?? '')).toLowerCase();
      if (isReservedName(name)) throw reservedRefusal(name);
      return { sql: `DROP INDEX ${ie}${em.ident(name)}` };
    });
    if (!steps.length) throw unsupported('DROP INDEX without an index');
    return { command: 'DROP INDEX', steps, columns: [], readOnly: false };
  }
  throw unsupported(`DROP ${kw.toUpperCase()}`);
}
