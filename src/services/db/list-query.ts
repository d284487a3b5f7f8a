/*
 * The rows API's list builder: a parsed `ListQuery` (filters.ts) → one parameterised SELECT
 * (and its count). Part of the database service's store layer (beside store.ts): db.ts runs what
 * it builds on the lease, so SQL text stays in a service's store layer and in src/sql/
 * (docs/architecture.md "Layers").
 */
import { EdgeError } from '../../core/errors.js';
import type { Filter, FilterValue, ListQuery, OrderItem } from './filters.js';
import { isSystemColumn, stampColumns, type ColumnType, type CompiledPolicy, type TableInfo } from '../../sql/table-model.js';
import { jsonField, jsonPathLiteral, quoteIdent, quoteLiteral } from '../../sql/quote.js';

/** The SQL of one list request plus its bound values (all values are parameters). */
export interface ListSql {
  sql: string;
  params: unknown[];
  countSql: string | null;
  countParams: unknown[];
  /** Relational columns returned (null for documents: `data` or the `json_object` of a select). */
  columns: string[] | null;
}

/** A field resolved against a table: its SQL expression and how filter values are typed. */
interface Field {
  sql: string;
  type: ColumnType | 'doc' | 'sys';
  /** For JSON fields: the value as JSON text (`->`), so a stored string is `"abc"`, never bare `abc`. */
  json?: string;
}

const bad = (why: string): EdgeError => new EdgeError('invalid_request', why);
const SYS = new Set(['id', 'created_at', 'updated_at']);
const COMPARE = { eq: '=', neq: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;

/**
 * Builds the SELECT for `GET /db/tables/{t}/rows`: every name checked against the
 * table, every value bound. `policy` is the caller's compiled select policy with its
 * values (null when RLS does not apply). One extra row is fetched to know `next_offset`.
 */
export function buildList(t: TableInfo, q: ListQuery, policy: { p: CompiledPolicy; values: unknown[] } | null): ListSql {
  const { where, params } = buildWhere(t, q, policy);
  const from = `FROM ${quoteIdent(t.def.name)}${where.length ? ` WHERE ${where.join(' AND ')}` : ''}`;
  const { list, columns } = selectList(t, q.select);
  const order = orderSql(t, q.order);
  return {
    sql: `SELECT ${list} ${from} ORDER BY ${order} LIMIT ? OFFSET ?`,
    params: [...params, q.limit + 1, q.offset],
    countSql: q.count ? `SELECT count(*) AS n ${from}` : null,
    countParams: params,
    columns,
  };
}

/**
 * Builds the SELECT of a list grouped by key (GraphQL's reverse relations, `projects { tasks }`):
 * the rows of `t` whose `column` is one of `keys`, filtered and ordered as a list request, with
 * `limit` and `offset` applied per key by `row_number()` over each key's rows, so one statement
 * serves every parent of a level. `cap` bounds the rows read overall (the caller refuses past it).
 */
export function buildGroupedList(
  t: TableInfo,
  q: ListQuery,
  column: string,
  keys: readonly unknown[],
  policy: { p: CompiledPolicy; values: unknown[] } | null,
  cap: number,
): ListSql {
  const { where, params } = buildWhere(t, q, policy);
  const key = resolveField(t, [column]).sql;
  where.push(`${key} IN (${keys.map(() => '?').join(', ')})`);
  params.push(...keys);
  const { list, columns } = selectList(t, null);
  const inner = `SELECT ${list}, row_number() OVER (PARTITION BY ${key} ORDER BY ${orderSql(t, q.order)}) AS "__rn" FROM ${quoteIdent(t.def.name)} WHERE ${where.join(' AND ')}`;
  return {
    sql: `SELECT * FROM (${inner}) WHERE "__rn" > ? AND "__rn" <= ? ORDER BY ${key}, "__rn" LIMIT ?`,
    params: [...params, q.offset, q.offset + q.limit, cap],
    countSql: null,
    countParams: [],
    columns,
  };
}

/**
 * The WHERE terms of a list request (filters, `or` groups, then the select policy) with their
 * bound values: what a list filters by, also run by realtime on a change's row image.
 */
export function buildWhere(
  t: TableInfo,
  q: Pick<ListQuery, 'filters' | 'or'>,
  policy: { p: CompiledPolicy; values: unknown[] } | null,
): { where: string[]; params: unknown[] } {
  const params: unknown[] = [];
  const where: string[] = [];
  for (const f of q.filters) where.push(filterSql(t, f, params));
  for (const group of q.or) where.push(`(${group.map((f) => filterSql(t, f, params)).join(' OR ')})`);
  if (policy) {
    where.push(policy.p.sql);
    params.push(...policy.values);
  }
  return { where, params };
}

/** Resolves a field name or JSON path against the table. */
export function resolveField(t: TableInfo, path: readonly string[]): Field {
  const head = path[0]!;
  if (path.length === 1 && isSystemColumn(t.def, head)) return { sql: quoteIdent(head), type: head === 'id' && t.def.key === 'int8' ? 'int8' : 'sys' };
  if (t.def.kind === 'document') {
    if (head === 'data' && path.length === 1) throw bad('name a field inside data, e.g. data.title or title');
    const segs = head === 'data' ? path.slice(1) : path;
    return { sql: jsonField(segs), type: 'doc', json: `"data" -> ${jsonPathLiteral(segs)}` };
  }
  const col = t.cols.get(head);
  if (!col) throw bad(`unknown column "${path.join('.')}"`);
  if (path.length === 1) return { sql: quoteIdent(head), type: col.type, json: col.type === 'jsonb' ? quoteIdent(head) : undefined };
  if (col.type !== 'jsonb') throw bad(`column "${head}" is not jsonb; it has no fields`);
  const p = jsonPathLiteral(path.slice(1));
  return { sql: `json_extract(${quoteIdent(head)}, ${p})`, type: 'doc', json: `${quoteIdent(head)} -> ${p}` };
}

function filterSql(t: TableInfo, f: Filter, params: unknown[]): string {
  const field = resolveField(t, f.field);
  const name = f.field.join('.');
  switch (f.op) {
    case 'eq':
    case 'neq':
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte':
      params.push(coerce(field, f.values[0]!, name));
      return `${field.sql} ${COMPARE[f.op]} ?`;
    case 'in':
      for (const v of f.values) params.push(coerce(field, v, name));
      return `${field.sql} IN (${f.values.map(() => '?').join(', ')})`;
    case 'is': {
      const v = f.values[0]!.text;
      return `${field.sql} IS ${v === 'null' ? 'NULL' : v === 'true' ? '1' : '0'}`;
    }
    case 'like':
      if (field.type === 'bytea') throw bad(`bytea column "${name}" cannot be filtered with like`);
      params.push(likeToGlob(f.values[0]!.text));
      return `${field.sql} GLOB ?`;
    case 'ilike':
      if (field.type === 'bytea') throw bad(`bytea column "${name}" cannot be filtered with ilike`);
      params.push(f.values[0]!.text.replaceAll('*', '%'));
      return `${field.sql} LIKE ?`;
    case 'contains':
      return containsSql(field, f.values[0]!, name, params);
  }
}

/**
 * Containment for JSON fields (`tags.contains.["a","b"]`), as jsonb `@>` for scalars: an
 * array contains each given value, a scalar contains only itself, an object no scalar.
 * Substring for text.
 */
function containsSql(field: Field, v: FilterValue, name: string, params: unknown[]): string {
  if (field.json !== undefined) {
    let parsed: unknown;
    try {
      parsed = v.quoted ? v.text : JSON.parse(v.text);
    } catch {
      parsed = v.text;
    }
    const arr = Array.isArray(parsed) ? parsed : [parsed];
    if (arr.some((x) => x !== null && typeof x === 'object')) throw bad(`contains on "${name}" takes scalars or an array of scalars`);
    params.push(JSON.stringify(arr));
    // note: json_each over the field's JSON text (`->`), never over json_extract's SQL value: a
    // stored string came back bare (`abc`) and json_each failed on it with "malformed JSON" (a 500).
    // json_each of a scalar yields the scalar itself, of an object its members (excluded here).
    const src = field.json;
    return `(json_type(${src}) <> 'object' AND NOT EXISTS (SELECT 1 FROM json_each(?) AS v WHERE v.value NOT IN (SELECT e.value FROM json_each(${src}) AS e WHERE e.value IS NOT NULL)))`;
  }
  if (field.type === 'text' || field.type === 'sys' || field.type === 'uuid' || field.type === 'timestamptz') {
    params.push(v.text);
    return `instr(${field.sql}, ?) > 0`;
  }
  throw bad(`contains does not apply to column "${name}"`);
}

/** LIKE pattern → GLOB (case-sensitive like Postgres LIKE): `%`/`*` → `*`, `_` → `?`, GLOB specials escaped. */
export function likeToGlob(p: string): string {
  let out = '';
  for (const c of p) {
    if (c === '%' || c === '*') out += '*';
    else if (c === '_') out += '?';
    else if (c === '?' || c === '[') out += `[${c}]`;
    else out += c;
  }
  return out;
}

/** A filter value typed for its column so SQLite compares like with like. */
export function coerce(field: Field, v: FilterValue, name: string): unknown {
  const s = v.text;
  switch (field.type) {
    case 'doc':
      if (v.quoted) return s;
      if (/^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(s)) return Number(s);
      if (s === 'true' || s === 'false') return s === 'true' ? 1 : 0;
      return s;
    case 'int8': {
      if (!/^-?\d{1,19}$/.test(s)) throw bad(`"${name}" is int8; "${clip(s)}" is not an integer`);
      const n = Number(s);
      return Number.isSafeInteger(n) ? n : BigInt(s);
    }
    case 'float8': {
      const n = Number(s);
      if (s.trim() === '' || !Number.isFinite(n)) throw bad(`"${name}" is float8; "${clip(s)}" is not a number`);
      return n;
    }
    case 'bool':
      if (s === 'true' || s === 't' || s === '1') return 1;
      if (s === 'false' || s === 'f' || s === '0') return 0;
      throw bad(`"${name}" is bool; use true or false`);
    case 'timestamptz': {
      const d = new Date(s);
      if (Number.isNaN(d.getTime())) throw bad(`"${name}" is timestamptz; "${clip(s)}" is not a date`);
      return d.toISOString();
    }
    case 'bytea':
      return Buffer.from(s, 'base64');
    default:
      return s;
  }
}

function selectList(t: TableInfo, select: string[][] | null): { list: string; columns: string[] | null } {
  if (t.def.kind === 'document') {
    if (select === null) return { list: '"id", "data", "created_at", "updated_at"', columns: null };
    const pairs: string[] = [];
    for (const path of select) {
      if (path.length === 1 && SYS.has(path[0]!)) continue;
      const segs = path[0] === 'data' && path.length > 1 ? path.slice(1) : path;
      pairs.push(`${quoteLiteral(segs.join('.'))}, "data" -> ${jsonPathLiteral(segs)}`);
    }
    const obj = pairs.length ? `json_object(${pairs.join(', ')})` : `'{}'`;
    return { list: `"id", ${obj} AS "data", "created_at", "updated_at"`, columns: null };
  }
  let names: string[];
  if (select === null) names = t.def.columns.map((c) => c.name);
  else {
    names = [];
    for (const path of select) {
      const n = path.join('.');
      if (path.length === 1 && isSystemColumn(t.def, n)) continue;
      if (path.length !== 1 || !t.cols.has(n)) throw bad(`unknown column "${n}" in select`);
      if (!names.includes(n)) names.push(n);
    }
  }
  const list = ['id', ...names, ...stampColumns(t.def)].map(quoteIdent).join(', ');
  return { list, columns: names };
}

function orderSql(t: TableInfo, order: OrderItem[]): string {
  if (order.length === 0) return '"id"';
  const parts = order.map((o) => {
    const f = resolveField(t, o.field);
    return `${f.sql} ${o.desc ? 'DESC' : 'ASC'}${o.nulls ? ` NULLS ${o.nulls === 'first' ? 'FIRST' : 'LAST'}` : ''}`;
  });
  if (!order.some((o) => o.field.length === 1 && o.field[0] === 'id')) parts.push('"id"');
  return parts.join(', ');
}

const clip = (s: string): string => (s.length > 40 ? `${s.slice(0, 40)}…` : s);
