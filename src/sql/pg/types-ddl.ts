import { EdgeError } from '../../core/errors.js';
import { SCHEMA_BUMP_SQL } from './reserved.js';
import { quoteIdent } from '../../project/schemas.js';
import { quoteLiteral } from '../quote.js';
import { columnName, type Emitter, type Expr, literalText, type Node, type Source, unsupported } from './emit.js';
import { NOW, type Statement, type Step } from './statements.js';
import type { ColumnType } from './types.js';

/**
 * Enum types and comments (docs/sql.md "Enum types", "Comments"): `CREATE TYPE … AS ENUM`,
 * `ALTER TYPE … ADD VALUE`, `DROP TYPE`, `COMMENT ON TABLE|COLUMN`, kept in the project's
 * catalog (`_svc_meta.enums`, `_svc_meta.comments`, schema/project/0015_types_comments.sql).
 *
 * A column of an enum type is TEXT declared `TEXT_ENUM_<hex of the name>` (TEXT affinity:
 * the hex digits never spell INT, CHAR, BLOB, REAL…), checked by two triggers that read the
 * type's labels from the catalog, so `ADD VALUE` widens every column at once, with no table
 * rebuild (SQLite cannot alter a CHECK). Triggers and catalog use only native SQLite, so the
 * rows API's and the auth service's writes are checked too.
 */

export const ENUMS = '"_svc_meta.enums"';
export const COMMENTS = '"_svc_meta.comments"';
/** Postgres' NAMEDATALEN - 1: the longest label, in bytes. */
const MAX_LABEL_BYTES = 63;
/** The longest comment kept (characters); Postgres has no limit, but a comment here is served with every schema. */
export const MAX_COMMENT = 16 * 1024;
const NAME = /^[a-z_][a-z0-9_]{0,62}$/;

const pgErr = (message: string, sqlstate: string, detail?: string): EdgeError =>
  new EdgeError('invalid_request', message, { details: detail ? { sqlstate, detail } : { sqlstate } });

/** Catalog writes (labels, comments) change no table: these steps change the schema version. */
const BUMP: Step[] = SCHEMA_BUMP_SQL.map((sql) => ({ sql }));

/** The declared SQLite type of a column of enum `name`. */
export const enumDecl = (name: string): string => `TEXT_ENUM_${Buffer.from(name, 'utf8').toString('hex')}`;

/** The enum a declared type names (enumDecl's inverse), or null. */
export function enumOfDecl(decl: string | null | undefined): string | null {
  const m = /^TEXT_ENUM_([0-9a-f]+)$/i.exec(decl ?? '');
  return m ? Buffer.from(m[1]!.toLowerCase(), 'hex').toString('utf8') : null;
}

/** The labels of enum `name` as the script sees it, or null when there is no such type. */
export function enumLabels(em: Emitter, name: string): string[] | null {
  return em.opts.schema.enums?.(name.toLowerCase()) ?? null;
}

/** The triggers that check a column of an enum type (after CREATE TABLE or ADD COLUMN). */
export function enumTriggers(table: string, column: string, type: string): Step[] {
  const t = quoteIdent(table);
  const c = quoteIdent(column);
  const bad = `NEW.${c} IS NOT NULL AND NOT EXISTS (SELECT 1 FROM json_each((SELECT labels FROM ${ENUMS} WHERE name = ${quoteLiteral(type)})) WHERE value = NEW.${c})`;
  const raise = `SELECT RAISE(ABORT, 'pe_invalid_input: invalid input value for enum ${type}: "' || NEW.${c} || '"')`;
  return [
    { sql: `CREATE TRIGGER ${quoteIdent(triggerName(table, column, 'insert'))} BEFORE INSERT ON ${t} WHEN ${bad} BEGIN ${raise}; END` },
    { sql: `CREATE TRIGGER ${quoteIdent(triggerName(table, column, 'update'))} BEFORE UPDATE OF ${c} ON ${t} WHEN ${bad} BEGIN ${raise}; END` },
  ];
}

const triggerName = (table: string, column: string, op: string): string => `pe_enum_${op}_${table}_${column}`;

/** Steps that drop a column's enum triggers (before DROP COLUMN: SQLite refuses to drop a column a trigger names). */
export const dropEnumTriggers = (table: string, column: string): Step[] =>
  ['insert', 'update'].map((op) => ({ sql: `DROP TRIGGER IF EXISTS ${quoteIdent(triggerName(table, column, op))}` }));

/**
 * After RENAME TO / RENAME COLUMN: the enum triggers again under the names DROP COLUMN looks
 * for (SQLite keeps a renamed table's triggers, and rewrites their column names, but not their names).
 */
export function renameEnumTriggers(columns: ColumnType[] | null, from: string, to: string, rename: (column: string) => string): Step[] {
  const steps: Step[] = [];
  for (const c of columns ?? []) {
    if (!c.enum || (from === to && rename(c.name) === c.name)) continue;
    steps.push(...dropEnumTriggers(from, c.name), ...enumTriggers(to, rename(c.name), c.enum));
  }
  return steps;
}

/** `x::mood`: a text value that must be one of the labels (a literal is checked now). Null when `type` is no enum. */
export function enumCast(em: Emitter, type: string, e: Expr): Expr | null {
  const name = type.toLowerCase();
  const labels = enumLabels(em, name);
  if (!labels) return null;
  const r = (sql: string): Expr => ({ sql, type: 'text', name: e.name === '?column?' ? name : e.name, enum: name });
  if (e.sql === 'NULL') return r('NULL');
  const lit = literalText(e.sql);
  if (lit !== null) {
    if (!labels.includes(lit)) throw pgErr(`invalid input value for enum ${name}: "${lit}"`, '22P02');
    return r(quoteLiteral(lit));
  }
  if (em.native) throw unsupported(`casts of non-literal values to ${name} in DDL`);
  const x = `CAST(${e.sql} AS TEXT)`;
  const msg = quoteLiteral(`invalid input value for enum ${name}: "`);
  return r(`(CASE WHEN ${x} IS NULL OR ${x} IN (${labels.map(quoteLiteral).join(', ')}) THEN ${x} ELSE ${em._fn('pe_error', `${msg} || ${x} || '"'`)} END)`);
}

/**
 * ORDER BY a column of an enum type: by the labels' declaration order, as Postgres sorts
 * enums (a CASE over the labels known when translated; ADD VALUE changes the schema version,
 * so no cached translation keeps an old order). Null for any other expression.
 */
export function enumOrderKey(em: Emitter, e: Node, scope: Source[]): string | null {
  if (e.type !== 'column_ref') return null;
  const name = columnName(e);
  const table = typeof e.table === 'string' ? e.table.toLowerCase() : null;
  const r = em._resolve(table, name, scope);
  const en = r?.source.columns?.find((c) => c.name === name)?.enum;
  const labels = en ? enumLabels(em, en) : null;
  if (!labels) return null;
  return enumPosition(labels, em.expr(e, scope).sql);
}

/** An enum value's position among its labels (NULL stays NULL): what Postgres compares enums by. */
export function enumPosition(labels: string[], sql: string): string {
  return `(CASE ${sql} ${labels.map((l, i) => `WHEN ${quoteLiteral(l)} THEN ${i}`).join(' ')} END)`;
}

/** The label at a position computed by enumPosition (min/max, greatest/least over positions). */
export function enumLabelAt(labels: string[], sql: string): string {
  return `(CASE ${sql} ${labels.map((l, i) => `WHEN ${i} THEN ${quoteLiteral(l)}`).join(' ')} END)`;
}

/** The sort key of any expression of an enum type (an alias, a position, min(mood), a cast): its position. Null for other types. */
export function enumKeyOf(em: Emitter, x: Expr): string | null {
  const labels = x.enum ? enumLabels(em, x.enum) : null;
  return labels ? enumPosition(labels, x.sql) : null;
}

/**
 * A comparison with an enum value (a column of the type, a cast to it): a literal on the other
 * side must be a label (22P02, as Postgres reads it as the type), and `<`, `<=`, `>`, `>=`
 * compare declaration positions, as Postgres does. Null: not an enum comparison, or an
 * equality the text comparison already answers.
 */
export function enumCompare(em: Emitter, op: string, l: Expr, r: Expr): string | null {
  const name = l.enum ?? r.enum;
  const labels = name ? enumLabels(em, name) : null;
  if (!name || !labels) return null;
  for (const side of [l, r]) {
    // note: a literal arrives made text by the comparison (emitPair: `CAST('x' AS TEXT)`).
    const lit = side.enum ? null : literalText(/^CAST\((.*) AS TEXT\)$/s.exec(side.sql)?.[1] ?? side.sql);
    if (lit !== null && !labels.includes(lit)) throw pgErr(`invalid input value for enum ${name}: "${lit}"`, '22P02');
  }
  if (op !== '<' && op !== '<=' && op !== '>' && op !== '>=') return null;
  const pos = (x: string) => `(CASE ${x} ${labels.map((lab, i) => `WHEN ${quoteLiteral(lab)} THEN ${i}`).join(' ')} END)`;
  return `(${pos(l.sql)} ${op} ${pos(r.sql)})`;
}

function checkLabel(label: string): void {
  if (Buffer.byteLength(label, 'utf8') > MAX_LABEL_BYTES) {
    throw pgErr(`invalid enum label "${label}"`, '42602', `Labels must be ${MAX_LABEL_BYTES} bytes or less.`);
  }
}

function typeName(name: string): string {
  if (!NAME.test(name)) throw unsupported(`type name "${name}"`);
  if (name.startsWith('_svc') || name.startsWith('pg_')) throw unsupported(`type name "${name}" (reserved prefix)`);
  return name;
}

const base = (command: Statement['command'], steps: Step[]): Statement => ({ command, steps, columns: [], readOnly: false });

function createEnum(n: Node, em: Emitter): Statement {
  const name = typeName(String(n.name));
  const labels = n.labels as string[];
  if (enumLabels(em, name)) throw pgErr(`type "${name}" already exists`, '42710');
  const seen = new Set<string>();
  for (const l of labels) {
    checkLabel(l);
    // note: Postgres 18 reports this from its catalog's unique index (23505 on pg_enum); the object is what is duplicated.
    if (seen.has(l)) throw pgErr(`enum label "${l}" used more than once`, '42710');
    seen.add(l);
  }
  return {
    ...base('CREATE TYPE', [{ sql: `INSERT INTO ${ENUMS} (name, labels, created_at) VALUES (?, ?, ${NOW})`, fixed: [name, JSON.stringify(labels)] }, ...BUMP]),
    enumEffect: { name, labels },
  };
}

function alterEnum(n: Node, em: Emitter): Statement {
  const name = String(n.name).toLowerCase();
  const labels = enumLabels(em, name);
  if (!labels) throw pgErr(`type "${name}" does not exist`, '42704');
  const label = String(n.label);
  checkLabel(label);
  if (labels.includes(label)) {
    if (n.ifNotExists) return { ...base('ALTER TYPE', []), notices: [`enum label "${label}" already exists, skipping`] };
    throw pgErr(`enum label "${label}" already exists`, '42710');
  }
  const next = [...labels];
  if (n.neighbor === null) next.push(label);
  else {
    const at = next.indexOf(String(n.neighbor));
    if (at < 0) throw pgErr(`"${String(n.neighbor)}" is not an existing enum label`, '22023');
    next.splice(n.after ? at + 1 : at, 0, label);
  }
  return {
    ...base('ALTER TYPE', [{ sql: `UPDATE ${ENUMS} SET labels = ? WHERE name = ?`, fixed: [JSON.stringify(next), name] }, ...BUMP]),
    enumEffect: { name, labels: next },
  };
}

function dropEnum(n: Node, em: Emitter): Statement {
  const steps: Step[] = [];
  const notices: string[] = [];
  let effect: Statement['enumEffect'];
  for (const raw of n.names as string[]) {
    const name = raw.toLowerCase();
    if (!enumLabels(em, name)) {
      if (n.ifExists) {
        notices.push(`type "${name}" does not exist, skipping`);
        continue;
      }
      throw pgErr(`type "${name}" does not exist`, '42704');
    }
    // note: which tables use it is read when the step runs (the translator sees one table at a time).
    const msg = quoteLiteral(`cannot drop type ${name} because other objects depend on it (a column of table "`);
    steps.push({
      // note: GLOB, not LIKE: case-sensitive, `_` literal, and the hex must end there (type "mo" is not "mood").
      sql: `SELECT pe_error(${msg} || name || '" is of type ${name}') FROM sqlite_schema WHERE type = 'table' AND sql GLOB ? LIMIT 1`,
      fixed: [`*${enumDecl(name)}[^0-9a-f]*`],
    });
    steps.push({ sql: `DELETE FROM ${ENUMS} WHERE name = ?`, fixed: [name] });
    effect = { name, labels: null };
  }
  if (steps.length) steps.push(...BUMP);
  return { ...base('DROP TYPE', steps), ...(notices.length ? { notices } : {}), ...(effect ? { enumEffect: effect } : {}) };
}

function comment(n: Node, em: Emitter): Statement {
  // note: a view's comment is kept under its name like a table's (COMMENT ON VIEW, or a column of a view).
  const view = em.opts.views?.().get(String(n.table).toLowerCase());
  if (n.view === true && !view) throw pgErr(`relation "${String(n.table).toLowerCase()}" does not exist`, '42P01');
  const phys = view ? view.name : em.physical(null, n.table);
  const columns = view ? view.columns : em.opts.schema(phys);
  if (columns === null) throw pgErr(`relation "${phys}" does not exist`, '42P01');
  const col = n.column === null ? '' : String(n.column).toLowerCase();
  if (col !== '' && !columns.some((c) => c.name === col)) throw pgErr(`column "${col}" of relation "${phys}" does not exist`, '42703');
  const text = n.comment as string | null;
  if (text !== null && text.length > MAX_COMMENT) {
    throw new EdgeError('invalid_request', `a comment may be at most ${MAX_COMMENT} characters (this one has ${text.length})`);
  }
  const step: Step =
    text === null
      ? { sql: `DELETE FROM ${COMMENTS} WHERE tbl = ? AND col = ?`, fixed: [phys, col] }
      : { sql: `INSERT INTO ${COMMENTS} (tbl, col, comment) VALUES (?, ?, ?) ON CONFLICT (tbl, col) DO UPDATE SET comment = excluded.comment`, fixed: [phys, col, text] };
  return base('COMMENT', [step, ...BUMP]);
}

/** The statements of this room (statements.ts dispatches `pe_create_enum`, `pe_alter_enum`, `pe_drop_enum`, `pe_comment`). */
export function typeStatement(n: Node, em: Emitter): Statement | null {
  switch (n.type) {
    case 'pe_create_enum':
      return createEnum(n, em);
    case 'pe_alter_enum':
      return alterEnum(n, em);
    case 'pe_drop_enum':
      return dropEnum(n, em);
    case 'pe_comment':
      return comment(n, em);
  }
  return null;
}

/** Catalog steps that keep comments in step with DROP TABLE, RENAME and DROP COLUMN (ddl.ts). */
export const commentSteps = {
  dropTable: (t: string): Step => ({ sql: `DELETE FROM ${COMMENTS} WHERE tbl = ?`, fixed: [t] }),
  renameTable: (from: string, to: string): Step => ({ sql: `UPDATE ${COMMENTS} SET tbl = ? WHERE tbl = ?`, fixed: [to, from] }),
  dropColumn: (t: string, c: string): Step => ({ sql: `DELETE FROM ${COMMENTS} WHERE tbl = ? AND col = ?`, fixed: [t, c] }),
  renameColumn: (t: string, from: string, to: string): Step => ({ sql: `UPDATE ${COMMENTS} SET col = ? WHERE tbl = ? AND col = ?`, fixed: [to, t, from] }),
};
