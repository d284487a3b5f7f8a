import { EdgeError } from '../../core/errors.js';
import { quoteIdent } from '../../project/schemas.js';
import { callName, unsupported, type Emitter, type Expr, type Node, type Source } from './emit.js';
import { elementOf, isArrayType, type ColumnType, type PgType } from './types.js';
import { emitCastTo } from './cast.js';

/**
 * Set-returning functions as FROM items: `generate_series` (integers), `unnest` (text[]),
 * `jsonb_array_elements[_text]`, `jsonb_each[_text]`, `jsonb_object_keys` (and their json_ forms), each as a
 * subquery over SQLite's recursive CTE or json_each. Their arguments may name outer queries'
 * columns; over earlier items of the same FROM list see lateralFunction (and lateral.ts).
 *
 * Names as in Postgres: a one-column function's column is named after the function, or the
 * alias (`generate_series(1, 3) as n`); `as t(a, b)` renames the columns.
 */
export function tableFunction(em: Emitter, fn: Node, alias: string | null, names: string[] | null, outer: Source[]): { text: string; source: Source; sql: string } {
  const { schema, name, written } = callName(fn);
  if (schema && schema !== 'pg_catalog') throw unsupported(`function ${written} in FROM`);
  if (fn.over) throw unsupported('window functions in FROM');
  const args = ((fn.args as { value?: Node[] } | undefined)?.value ?? []).map((a) => em.expr(a, outer));
  const as = alias ?? name;
  let body: { sql: string; columns: ColumnType[] };
  switch (name) {
    case 'generate_series':
      body = series(em, args, alias ?? name);
      break;
    case 'unnest': {
      if (args.length !== 1) throw unsupported('unnest of several arrays');
      const a = em.coerce(args[0]!, 'text[]');
      if (!isArrayType(a.type)) throw unsupported(`unnest of a ${String(a.type)} value`);
      body = { sql: `SELECT "value" AS "v0" FROM json_each(${a.sql})`, columns: [{ name: alias ?? 'unnest', type: elementOf(a.type) }] };
      break;
    }
    case 'jsonb_array_elements':
    case 'json_array_elements':
    case 'jsonb_array_elements_text':
    case 'json_array_elements_text': {
      const j = json(em, args, name);
      const text = name.endsWith('_text');
      body = {
        sql: `SELECT ${text ? TEXT_VALUE : JSON_VALUE} AS "v0" FROM json_each(${j}) ${ARRAY_ONLY(j)}`,
        columns: [{ name: alias ?? 'value', type: text ? 'text' : name.startsWith('jsonb') ? 'jsonb' : 'json' }],
      };
      break;
    }
    case 'jsonb_each':
    case 'json_each':
    case 'jsonb_each_text':
    case 'json_each_text': {
      const j = json(em, args, name);
      const text = name.endsWith('_text');
      body = {
        sql: `SELECT "key" AS "v0", ${text ? TEXT_VALUE : JSON_VALUE} AS "v1" FROM json_each(${j}) ${OBJECT_ONLY(j, name)}`,
        columns: [
          { name: 'key', type: 'text' },
          { name: 'value', type: text ? 'text' : name.startsWith('jsonb') ? 'jsonb' : 'json' },
        ],
      };
      break;
    }
    case 'jsonb_object_keys':
    case 'json_object_keys': {
      const j = json(em, args, name);
      body = { sql: `SELECT "key" AS "v0" FROM json_each(${j}) ${OBJECT_ONLY(j, name)}`, columns: [{ name: alias ?? name, type: 'text' }] };
      break;
    }
    default:
      throw unsupported(`function ${name}() in FROM`);
  }
  if (names && names.length > body.columns.length) throw new EdgeError('invalid_request', `table "${as}" has ${body.columns.length} columns available but ${names.length} columns specified`);
  const columns = body.columns.map((c, i) => ({ ...c, name: names?.[i] ?? c.name }));
  const list = columns.map((c, i) => `"v${i}" AS ${quoteIdent(c.name)}`).join(', ');
  const sql = `SELECT ${list} FROM (${body.sql})`;
  return { text: `(${sql}) AS ${quoteIdent(as)}`, source: { alias: as, columns }, sql };
}

/**
 * A set-returning function over an earlier item of its FROM list (`from t,
 * jsonb_array_elements(t.tags) e`, implicitly LATERAL in Postgres): SQLite's json_each joined
 * directly (a subquery could not see the earlier item), its columns as expressions over
 * json_each's (Source.exprs). unnest, jsonb_array_elements[_text], jsonb_each[_text] and
 * jsonb_object_keys (and the json_ forms); generate_series over an earlier column goes through lateral.ts.
 */
export function lateralFunction(em: Emitter, fn: Node, alias: string | null, names: string[] | null, scope: Source[]): { text: string; source: Source } {
  const { name } = callName(fn);
  const args = ((fn.args as { value?: Node[] } | undefined)?.value ?? []).map((a) => em.expr(a, scope));
  const as = alias ?? name;
  const q = quoteIdent(as);
  const value = (text: boolean) => (text ? TEXT_VALUE : JSON_VALUE).replaceAll('"type"', `${q}."type"`).replaceAll('"value"', `${q}."value"`);
  const jtype: PgType = name.startsWith('jsonb') ? 'jsonb' : 'json';
  let arg: string;
  let cols: Array<{ name: string; type: PgType; sql: string }>;
  switch (name) {
    case 'unnest': {
      if (args.length !== 1) throw unsupported('unnest of several arrays');
      const a = em.coerce(args[0]!, 'text[]');
      if (!isArrayType(a.type)) throw unsupported(`unnest of a ${String(a.type)} value`);
      arg = a.sql;
      cols = [{ name: alias ?? 'unnest', type: elementOf(a.type), sql: `${q}."value"` }];
      break;
    }
    case 'jsonb_array_elements':
    case 'json_array_elements':
    case 'jsonb_array_elements_text':
    case 'json_array_elements_text': {
      const j = json(em, args, name);
      const text = name.endsWith('_text');
      arg = `CASE WHEN ${j} IS NULL THEN NULL WHEN json_type(${j}) = 'array' THEN ${j} ELSE pe_error('cannot extract elements from ' || CASE json_type(${j}) WHEN 'object' THEN 'an object' ELSE 'a scalar' END) END`;
      cols = [{ name: alias ?? 'value', type: text ? 'text' : jtype, sql: value(text) }];
      break;
    }
    case 'jsonb_each':
    case 'json_each':
    case 'jsonb_each_text':
    case 'json_each_text': {
      const j = json(em, args, name);
      const text = name.endsWith('_text');
      arg = `CASE WHEN ${j} IS NULL THEN NULL WHEN json_type(${j}) = 'object' THEN ${j} ELSE pe_error('cannot call ${name} on a non-object') END`;
      cols = [
        { name: 'key', type: 'text', sql: `${q}."key"` },
        { name: 'value', type: text ? 'text' : jtype, sql: value(text) },
      ];
      break;
    }
    case 'jsonb_object_keys':
    case 'json_object_keys': {
      const j = json(em, args, name);
      arg = `CASE WHEN ${j} IS NULL THEN NULL WHEN json_type(${j}) = 'object' THEN ${j} ELSE pe_error('cannot call ${name} on a non-object') END`;
      cols = [{ name: alias ?? name, type: 'text', sql: `${q}."key"` }];
      break;
    }
    default:
      throw unsupported(`function ${name}() over an earlier FROM item (LATERAL)`);
  }
  if (names && names.length > cols.length) throw new EdgeError('invalid_request', `table "${as}" has ${cols.length} columns available but ${names.length} columns specified`);
  const renamed = cols.map((c, i) => ({ ...c, name: names?.[i] ?? c.name }));
  return {
    text: `json_each(${arg}) AS ${q}`,
    source: { alias: as, columns: renamed.map((c) => ({ name: c.name, type: c.type })), exprs: Object.fromEntries(renamed.map((c) => [c.name, c.sql])) },
  };
}

/** A json_each value as JSON text (strings quoted, true/false/null as words). */
const JSON_VALUE = `CASE "type" WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN 'null' WHEN 'text' THEN json_quote("value") ELSE CAST("value" AS TEXT) END`;
/** The same as text (`_text` forms: strings unquoted, JSON null as NULL). */
const TEXT_VALUE = `CASE "type" WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' WHEN 'null' THEN NULL ELSE CAST("value" AS TEXT) END`;
const ARRAY_ONLY = (j: string) => `WHERE CASE WHEN json_type(${j}) = 'array' THEN 1 ELSE pe_error('cannot extract elements from ' || CASE json_type(${j}) WHEN 'object' THEN 'an object' ELSE 'a scalar' END) END`;
const OBJECT_ONLY = (j: string, name: string) => `WHERE CASE WHEN json_type(${j}) = 'object' THEN 1 ELSE pe_error('cannot call ${name} on a non-object') END`;

function json(em: Emitter, args: Expr[], name: string): string {
  if (args.length !== 1) throw new EdgeError('invalid_request', `function ${name} takes one argument`);
  const j = em.coerce(args[0]!, name.startsWith('jsonb') ? 'jsonb' : 'json');
  if (j.type !== 'jsonb' && j.type !== 'json' && j.type !== null) throw unsupported(`${name} of a ${String(j.type)} value`);
  if (em.native) throw unsupported(`${name}() in DDL`);
  return j.sql;
}

/** `generate_series(a, b [, step])` over integers: a recursive CTE, checked by the time limit at each row. */
function series(em: Emitter, args: Expr[], column: string): { sql: string; columns: ColumnType[] } {
  if (args.length < 2 || args.length > 3) throw new EdgeError('invalid_request', 'function generate_series takes 2 or 3 arguments');
  const isInt = (t: PgType | null) => t === 'int4' || t === 'int8' || t === 'unknown';
  const isTime = (t: PgType | null) => t === 'timestamptz' || t === 'timestamp' || t === 'date';
  if (args.length === 3 && (isTime(args[0]!.type) || isTime(args[1]!.type) || args[2]!.type === 'interval')) return timeSeries(em, args, column);
  if (!args.every((a) => isInt(a.type))) throw unsupported('generate_series over other than integers and timestamps');
  const [a, b, step] = args.map((x) => em.coerce(x, 'int8').sql) as [string, string, string | undefined];
  const type: PgType = args.some((x) => x.type === 'int8') ? 'int8' : 'int4';
  const s = step ?? '1';
  // note: Postgres raises on a zero step; the anchor row exists only when a is within the range.
  const zero = step ? `CASE WHEN ${s} = 0 THEN pe_error('step size cannot equal zero') END, ` : '';
  const within = (v: string) => `((${s} > 0 AND ${v} <= ${b}) OR (${s} < 0 AND ${v} >= ${b}))`;
  const sql =
    `WITH RECURSIVE "pe_series"("v") AS (SELECT ${a} WHERE ${zero ? `coalesce(${zero}1) AND ` : ''}${within(a)} ` +
    `UNION ALL SELECT "v" + ${s} FROM "pe_series" WHERE ${within(`"v" + ${s}`)} AND \0K"pe_series"."v"\0) SELECT "v" AS "v0" FROM "pe_series"`;
  return { sql, columns: [{ name: column, type }] };
}

/**
 * `generate_series(start, stop, interval)` over timestamps (a date is read as a timestamp): the
 * step added again and again, as Postgres does (so month steps clamp as they go), while the
 * value has not passed `stop` in the step's direction; a zero step is Postgres' 22023.
 */
function timeSeries(em: Emitter, args: Expr[], column: string): { sql: string; columns: ColumnType[] } {
  if (em.native) throw unsupported('generate_series() in DDL');
  const type: PgType = args.some((x) => x.type === 'timestamptz' || x.type === 'unknown') ? 'timestamptz' : 'timestamp';
  const [a, b] = args.slice(0, 2).map((x) => (x.type === 'timestamptz' || x.type === 'timestamp' ? x.sql : emitCastTo(em, x, 'timestamptz').sql)) as [string, string];
  const step = args[2]!.type === 'interval' ? args[2]!.sql : args[2]!.type === 'unknown' ? emitCastTo(em, args[2]!, 'interval').sql : null;
  if (step === null) throw new EdgeError('invalid_request', `function generate_series(${type}, ${type}, ${String(args[2]!.type)}) does not exist`, { details: { sqlstate: '42883' } });
  const next = (v: string) => em._fn('pe_ts_add', v, step, '1');
  const up = `(${next(a)} > ${a})`;
  const zero = `CASE WHEN ${next(a)} = ${a} THEN pe_error('step size cannot equal zero') END`;
  const within = (v: string) => `((${up} AND ${v} <= ${b}) OR (NOT ${up} AND ${v} >= ${b}))`;
  const sql =
    `WITH RECURSIVE "pe_series"("v") AS (SELECT ${a} WHERE coalesce(${zero}, 1) AND ${within(a)} ` +
    `UNION ALL SELECT ${next('"v"')} FROM "pe_series" WHERE ${within(next('"v"'))} AND \0K"pe_series"."v"\0) SELECT "v" AS "v0" FROM "pe_series"`;
  return { sql, columns: [{ name: column, type }] };
}
