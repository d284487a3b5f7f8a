import { EdgeError } from '../../core/errors.js';
import { quoteIdent } from '../../project/schemas.js';
import type { AlterColumnSpec } from '../worker/alter-column.js';
import { type Emitter, type Node, columnName, unsupported } from './emit.js';
import { emitCastTo, emitTypmod } from './cast.js';
import { columnDefault, typeChecks } from './ddl.js';
import type { Statement, Step } from './statements.js';
import { dropEnumTriggers, enumCast, enumDecl, enumLabels, enumTriggers } from './types-ddl.js';
import { DECLTYPE, type ColumnType, type PgType, pgTypeOf, toCatalogType, typeNameOf } from './types.js';
import { viewsOver } from './views.js';

/**
 * `ALTER TABLE t ALTER [COLUMN] c SET DEFAULT e | DROP DEFAULT | SET NOT NULL | DROP NOT NULL |
 * [SET DATA] TYPE ty [USING e]` (docs/sql.md "Changing a column"). SQLite changes these only by
 * rebuilding the table: one worker step (src/sql/worker/alter-column.ts) does it in the script's
 * transaction with the table's text as earlier statements left it; the catalog follows.
 */
export function alterColumn(a: Node, em: Emitter, phys: string, columns: ColumnType[] | null): Statement {
  const name = columnName(a.column as Node);
  if (columns === null) throw pgFail('42P01', `relation "${phys}" does not exist`);
  const col = columns.find((c) => c.name === name);
  if (!col) throw pgFail('42703', `column "${name}" of relation "${phys}" does not exist`);
  const spec: AlterColumnSpec = { table: phys, column: name };
  const before: Step[] = [];
  const after: Step[] = [];
  const catalog: Record<string, unknown> = {};
  let effect = col;
  let dropEnum = false;
  if ('default_val' in a) {
    const dv = a.default_val as Node | null;
    if (col.auto && dv === null) throw unsupported(`DROP DEFAULT on "${name}", a column the rows API fills`);
    em.native = true;
    try {
      const d = dv ? columnDefault(dv, em, col.type ?? 'text', col.enum ?? null) : null;
      spec.default = d?.sql ?? null;
      catalog.default = d?.caller ?? null;
    } finally {
      em.native = false;
    }
  } else if ('not_null' in a) {
    if (a.not_null === false && col.pk) throw pgFail('42P16', `column "${name}" is in a primary key`);
    spec.notNull = a.not_null === true;
    // note: a column a BEFORE trigger fills loses its NOT NULL checks (src/sql/worker/relax-not-null.ts) with DROP NOT NULL.
    if (!spec.notNull) before.push(...['insert', 'update'].map((op) => ({ sql: `DROP TRIGGER IF EXISTS ${quoteIdent(`pe_nn_${phys}_${name}_${op}`)}` })));
  } else {
    const t = retype(a, em, phys, col);
    spec.type = t.spec;
    effect = t.column;
    // note: always: a column's enum checks go with its old type (a no-op when it had none).
    before.push(...dropEnumTriggers(phys, name));
    if (t.column.enum) after.push(...enumTriggers(phys, name, t.column.enum));
    const type = toCatalogType(t.column.type);
    if (type) catalog.type = type;
    if (t.column.enum) catalog.enum = t.column.enum;
    else dropEnum = true;
  }
  const sets = Object.keys(catalog).map((k) => `, '$.${k}', json(?)`).join('');
  // note: a column is required by the rows API only when it is NOT NULL without a default (ddl.ts catalogDef).
  const nullable = `(SELECT "notnull" = 0 OR dflt_value IS NOT NULL FROM pragma_table_info(?) WHERE name = ?)`;
  return {
    command: 'ALTER TABLE',
    steps: [
      ...before,
      // note: an empty step the worker runs as the rebuild (alter-column.ts).
      { sql: '', alter: spec },
      ...after,
      {
        sql: `UPDATE "_svc_meta.tables" SET def = json_set(def, '$.columns', (SELECT json_group_array(CASE WHEN json_extract(value, '$.name') = ? THEN json_set(${dropEnum ? `json_remove(value, '$.enum')` : 'value'}, '$.nullable', json(CASE WHEN ${nullable} THEN 'true' ELSE 'false' END)${sets}) ELSE json(value) END) FROM json_each(def, '$.columns'))) WHERE name = ? AND kind = 'relational'`,
        fixed: [name, phys, name, ...Object.values(catalog).map((v) => JSON.stringify(v)), phys],
      },
    ],
    columns: [],
    readOnly: false,
    effect: { table: phys, columns: columns.map((c) => (c.name === name ? effect : c)) },
  };
}

/** `TYPE ty [USING e]`: the new declared type, its CHECKs and how each stored value converts, as Postgres' assignment rules allow. */
function retype(a: Node, em: Emitter, phys: string, col: ColumnType): { spec: NonNullable<AlterColumnSpec['type']>; column: ColumnType } {
  const def = a.definition as Node;
  const raw = typeNameOf(def);
  let type = pgTypeOf(raw);
  const enumType = !type && enumLabels(em, raw) ? raw.toLowerCase() : null;
  if (enumType) type = 'text';
  if (!type || type === 'interval' || type === 'unknown') throw unsupported(`column type ${raw.toLowerCase()}`);
  if (/SERIAL/i.test(raw)) throw pgFail('42704', `type "${raw.toLowerCase()}" does not exist`);
  if (col.pk) throw unsupported(`ALTER COLUMN … TYPE on "${col.name}", the primary key (the key's type is fixed once made here)`);
  const views = viewsOver(em, phys);
  if (views.length) {
    throw pgFail('0A000', 'cannot alter type of a column used by a view or rule', { detail: `rule _RETURN on view ${views[0]} depends on column "${col.name}"` });
  }
  const scope = [{ alias: phys, columns: em.opts.schema(phys) }];
  const using = a.using as Node | undefined;
  const from = using ? em.expr(using, scope) : { sql: quoteIdent(col.name), type: col.type, name: col.name, ...(col.enum ? { enum: col.enum } : {}) };
  const target = enumType ?? type;
  const sameEnum = enumType !== null && from.enum === enumType;
  if (!sameEnum && !assignable(from.type, from.enum ?? null, type, enumType)) {
    const what = using ? `result of USING clause for column "${col.name}"` : `column "${col.name}"`;
    throw pgFail('42804', `${what} cannot be cast automatically to type ${pgName(target)}`, { hint: using ? 'You might need to add an explicit cast.' : `You might need to specify "USING ${col.name}::${pgName(target)}".` });
  }
  let converted = sameEnum ? from : enumType ? enumCast(em, enumType, from)! : from.type === type ? from : emitCastTo(em, from, type);
  // note: numeric(p, s) rounds each value to s places and fails past p digits, as the assignment does (a varchar(n) too long fails by its CHECK, 22001).
  if (type === 'numeric' && typeof def.length === 'number') converted = emitTypmod(em, converted, def);
  const decl = enumType ? enumDecl(enumType) : DECLTYPE[type];
  return {
    spec: { decl, checks: typeChecks(col.name, type, raw, def), convert: converted.sql },
    column: { name: col.name, type, ...(col.auto ? { auto: col.auto } : {}), ...(enumType ? { enum: enumType } : {}) },
  };
}

const NUMBERS = new Set<PgType | null>(['int4', 'int8', 'float8', 'numeric']);
const TIMES = new Set<PgType | null>(['date', 'timestamp', 'timestamptz']);

/** Whether Postgres converts a value of `from` to `to` by an assignment cast (what ALTER COLUMN … TYPE applies). */
function assignable(from: PgType | null, fromEnum: string | null, to: PgType, toEnum: string | null): boolean {
  if (toEnum) return from === 'unknown' || from === null;
  if (from === null || from === 'unknown' || to === 'text') return true;
  if (fromEnum) return false;
  if (from === to) return true;
  if (NUMBERS.has(from) && NUMBERS.has(to)) return true;
  if (TIMES.has(from) && TIMES.has(to)) return true;
  return (from === 'json' && to === 'jsonb') || (from === 'jsonb' && to === 'json');
}

const PG_NAMES: Partial<Record<string, string>> = { int4: 'integer', int8: 'bigint', float8: 'double precision', bool: 'boolean', timestamptz: 'timestamp with time zone', timestamp: 'timestamp without time zone' };
const pgName = (t: string): string => (t.endsWith('[]') ? `${PG_NAMES[t.slice(0, -2)] ?? t.slice(0, -2)}[]` : (PG_NAMES[t] ?? t));

const pgFail = (sqlstate: string, message: string, more: Record<string, string> = {}): EdgeError =>
  new EdgeError('invalid_request', message, { details: { sqlstate, ...more } });
