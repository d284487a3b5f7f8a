import { EdgeError } from '../../core/errors.js';
import { quoteIdent } from '../../project/schemas.js';
import { callName, columnName, unsupported, type Emitter, type Expr, type Node, type Source } from './emit.js';
import { tableFunction } from './from-functions.js';
import { emitOrderExpr } from './query-parts.js';
import type { ColumnType } from './types.js';

/**
 * LATERAL, which SQLite has not: a FROM subquery cannot see the items before it. A
 * table-valued function's arguments can, and a scalar subquery among them is correlated like
 * any other. So a lateral subquery over earlier items becomes
 * `json_each((SELECT json_group_array(json_array(c0, c1, …)) FROM (<the subquery>)))`: its
 * rows, encoded once per outer row as a JSON array of arrays, and read back as the item's
 * rows, each column `json_extract(value, '$[i]')`. Any lateral subquery has this form, so
 * every shape Postgres runs (one row, top-N per group, aggregates, several rows, none) gives
 * Postgres' rows: an empty result is no row (an inner or CROSS JOIN drops the outer row, a
 * LEFT JOIN pads it with NULLs, as the join says). Values keep their SQLite type through JSON
 * (integers exact to 64 bits, doubles exact since SQLite 3.43's round-trip rendering, text as
 * text); bytea goes as hex.
 *
 * Also here: set-returning functions in the select list (`select id, unnest(tags) from t`),
 * rewritten to FROM items as Postgres' ProjectSet means them; several zip by ordinal, the
 * shorter padded with NULLs (Postgres 10+).
 */

/** A lateral subquery (or a FROM function SQLite cannot join directly) as rows of JSON: its FROM text and Source. */
export function jsonRows(sql: string, columns: ColumnType[], alias: string): { text: string; source: Source } {
  const q = quoteIdent(alias);
  const names = columns.map((_, i) => `"c${i}"`);
  const cells = columns.map((c, i) => (c.type === 'bytea' ? `hex(${names[i]})` : `CASE typeof(${names[i]}) WHEN 'text' THEN ${names[i]} || '' ELSE ${names[i]} END`));
  const body = `(WITH "pe_l"(${names.join(', ')}) AS (${sql}) SELECT json_group_array(json_array(${cells.join(', ')})) FROM "pe_l")`;
  const exprs: Record<string, string> = {};
  columns.forEach((c, i) => {
    if (c.name in exprs) return;
    const v = `json_extract(${q}."value", '$[${i}]')`;
    exprs[c.name] = c.type === 'bytea' ? `unhex(${v})` : v;
  });
  return { text: `json_each(${body}) AS ${q}`, source: { alias, columns, exprs } };
}

/**
 * `[LEFT] JOIN LATERAL (subquery) x ON …` / `, LATERAL (subquery) x`: null when the subquery
 * names no earlier item (then it is an ordinary subquery in FROM).
 */
export function lateralSubquery(em: Emitter, it: Node, asName: string, earlier: Source[], outer: Source[]): { text: string; source: Source } | null {
  const ast = (it.expr as Node).ast as Node;
  const join = typeof it.join === 'string' ? it.join.toUpperCase() : '';
  const outerJoin = join.startsWith('RIGHT') || join.startsWith('FULL');
  // note: beside a RIGHT or FULL join only a qualified reference counts (an unqualified name is most likely the subquery's own column; if not, it is unknown there, 42703).
  const named = namesEarlier(ast, earlier, outerJoin);
  if (!named) return null;
  if (outerJoin) {
    // note: Postgres' own refusal (the combining JOIN type must be INNER or LEFT for a LATERAL reference).
    throw new EdgeError('invalid_request', `invalid reference to FROM-clause entry for table "${named}"`, { details: { sqlstate: '42P10' } });
  }
  if (em.native) throw unsupported('LATERAL in DDL');
  em._lateral++;
  let sub: { sql: string; columns: ColumnType[] | null };
  try {
    sub = em.select(ast, [...earlier, ...outer]);
  } finally {
    em._lateral--;
  }
  if (!sub.columns) throw unsupported('a LATERAL subquery whose columns are not known (name them)');
  const names = Array.isArray(it.columns) ? (it.columns as string[]) : [];
  if (names.length > sub.columns.length) throw new EdgeError('invalid_request', `table "${asName}" has ${sub.columns.length} columns available but ${names.length} columns specified`);
  return jsonRows(sub.sql, sub.columns.map((c, i) => ({ ...c, name: names[i] ?? c.name })), asName);
}

/** A FROM function over an earlier item that json_each cannot join directly (generate_series): its subquery as JSON rows. */
export function lateralTableFunction(em: Emitter, fn: Node, alias: string | null, names: string[] | null, scope: Source[]): { text: string; source: Source } {
  if (em.native) throw unsupported('LATERAL in DDL');
  const t = tableFunction(em, fn, alias, names, scope);
  return jsonRows(t.sql, t.source.columns ?? [], t.source.alias);
}

/** Several set-returning functions of one select list, zipped by ordinal (Postgres 10+): rows to the longest, the others NULL past their end. */
export function zipFunctions(em: Emitter, fns: Node[], alias: string, names: string[], scope: Source[]): { text: string; source: Source } {
  if (em.native) throw unsupported('set-returning functions in DDL');
  const parts = fns.map((fn) => tableFunction(em, fn, null, ['v'], scope));
  const ctes = parts.map((p, i) => `"pe_z${i}"("o", "v") AS (SELECT row_number() OVER (), "v" FROM (${p.sql}))`);
  const ord = (n: number) => (n === 1 ? `"pe_z0"."o"` : `coalesce(${Array.from({ length: n }, (_, i) => `"pe_z${i}"."o"`).join(', ')})`);
  let from = `"pe_z0"`;
  for (let i = 1; i < parts.length; i++) from += ` FULL JOIN "pe_z${i}" ON "pe_z${i}"."o" = ${ord(i)}`;
  const sql = `WITH ${ctes.join(', ')} SELECT ${parts.map((_, i) => `"pe_z${i}"."v"`).join(', ')} FROM ${from} ORDER BY ${ord(parts.length)}`;
  return jsonRows(sql, parts.map((p, i) => ({ name: names[i]!, type: p.source.columns?.[0]?.type ?? null })), alias);
}

/** The set-returning functions that may stand in a select list. */
const SRFS = new Set(['unnest', 'generate_series', 'jsonb_array_elements', 'json_array_elements', 'jsonb_array_elements_text', 'json_array_elements_text', 'jsonb_object_keys', 'json_object_keys']);
/** Those that return a record (shown as `(k,v)` in a select list): put them in FROM. */
const RECORD_SRFS = new Set(['jsonb_each', 'json_each', 'jsonb_each_text', 'json_each_text']);

const isSrf = (x: Node): boolean => {
  if (x.type !== 'function') return false;
  const { schema, name } = callName(x);
  return (schema === null || schema === 'pg_catalog') && (SRFS.has(name) || RECORD_SRFS.has(name));
};

const srfError = (message: string): EdgeError => new EdgeError('invalid_request', message, { details: { sqlstate: '0A000' } });

/** The first set-returning function in an expression outside subqueries, or null. */
function findSrf(v: unknown): Node | null {
  if (!v || typeof v !== 'object') return null;
  if (Array.isArray(v)) {
    for (const x of v) {
      const f = findSrf(x);
      if (f) return f;
    }
    return null;
  }
  const n = v as Node;
  if (n.ast) return null;
  if (isSrf(n)) return n;
  for (const x of Object.values(n)) {
    const f = findSrf(x);
    if (f) return f;
  }
  return null;
}

/** Postgres refuses a set-returning function in WHERE, HAVING and JOIN conditions (0A000). */
function refuseIn(v: unknown, where: string): void {
  if (findSrf(v)) throw srfError(`set-returning functions are not allowed in ${where}`);
}

/**
 * A select core with set-returning functions in its select list → the same with each one a
 * hidden FROM item (one: the function itself, joined as its FROM form; several: zipped),
 * the call replaced by that item's column. Postgres runs them after WHERE and before ORDER BY
 * and LIMIT (ProjectSet), which is what a join in FROM gives. Unchanged without one.
 */
export function selectSrfs(n: Node): Node {
  refuseIn(n.where, 'WHERE');
  refuseIn(n.having, 'HAVING');
  for (const it of (n.from as Node[] | undefined) ?? []) refuseIn(it.on, 'JOIN conditions');
  const columns = (n.columns as Node[] | undefined) ?? [];
  if (!columns.some((c) => findSrf(c.expr))) return n;
  const found: Node[] = [];
  const alias = 'pe_srf';
  const swap = (v: unknown, within: string | null): unknown => {
    if (!v || typeof v !== 'object') return v;
    if (Array.isArray(v)) return v.map((x) => swap(x, within));
    const x = v as Node;
    if (x.ast) return x;
    if (isSrf(x)) {
      const { name } = callName(x);
      if (within) throw srfError(within);
      if (RECORD_SRFS.has(name)) throw unsupported(`${name}() in the select list (it returns a record): put it in FROM`);
      if (findSrf(x.args)) throw unsupported('a set-returning function in the arguments of another');
      found.push(x);
      return { type: 'column_ref', table: alias, column: `s${found.length - 1}` };
    }
    let inner = within;
    if (x.type === 'aggr_func') inner = 'aggregate function calls cannot contain set-returning function calls';
    else if (x.over) inner = 'window function calls cannot contain set-returning function calls';
    else if (x.type === 'case') inner = 'set-returning functions are not allowed in CASE';
    else if (x.type === 'function' && callName(x).name === 'coalesce') inner = 'set-returning functions are not allowed in COALESCE';
    return Object.fromEntries(Object.entries(x).map(([k, y]) => [k, swap(y, inner)]));
  };
  const cols = columns.map((c) => {
    const e = swap(c.expr, null) as Node;
    // note: Postgres names an unaliased item that is the call (or a cast of it) after the function.
    const top = c.expr as Node;
    const call = top.type === 'cast' ? (top.expr as Node) : top;
    const as = c.as ?? (call && isSrf(call) ? callName(call).name : null);
    return { ...c, expr: e, as };
  });
  const aggregate = (v: unknown): boolean => !!v && typeof v === 'object' && !(v as Node).ast && ((v as Node).type === 'aggr_func' || !!(v as Node).over || Object.values(v as object).some(aggregate));
  const group = (n.groupby as { columns?: Node[] } | null | undefined)?.columns ?? [];
  let groupby = n.groupby;
  if (group.length || columns.some((c) => aggregate(c.expr)) || aggregate(n.having)) {
    // note: grouped by the function itself (`select unnest(tags) as tag, count(*) … group by tag`), Postgres expands before grouping: the join is that.
    const grouped = groupedSrfs(group, columns, cols);
    if (!grouped || columns.some((c) => c.expr && !isSrf(c.expr as Node) && findSrf(c.expr)) || columns.some((c) => (c.expr as Node | undefined)?.over)) {
      throw unsupported('a set-returning function in the select list of an aggregate or window query other than grouped by it (put it in FROM over a subquery)');
    }
    groupby = { ...(n.groupby as Node), columns: grouped };
  }
  const names = found.map((_, i) => `s${i}`);
  const item: Node =
    found.length === 1 ? { fn: found[0], as: alias, columns: names, hidden: true } : { zip: found, as: alias, columns: names, hidden: true };
  return { ...n, columns: cols, groupby, from: [...((n.from as Node[] | undefined) ?? []), item] };
}

/**
 * The GROUP BY items with each select-list function written there again replaced by its
 * column, or null unless every select-list function is a whole select item that the GROUP
 * BY names (by position, by its alias or written the same).
 */
function groupedSrfs(group: Node[], written: Node[], swapped: Node[]): Node[] | null {
  const items = written.map((c, i) => ({ srf: !!c.expr && isSrf(c.expr as Node), as: swapped[i]!.as as string | null, key: JSON.stringify(c.expr), to: swapped[i]!.expr }));
  const hit = new Set<number>();
  const out = group.map((g) => {
    const key = JSON.stringify(g);
    let i = items.findIndex((x) => x.srf && x.key === key);
    if (i < 0 && g.type === 'number') i = Number(g.value) - 1;
    if (i < 0 && g.type === 'column_ref' && !g.table) i = items.findIndex((x) => x.srf && x.as === columnName(g));
    if (i < 0 || !items[i]?.srf) return g;
    hit.add(i);
    return g.type === 'number' ? g : (items[i]!.to as Node);
  });
  return items.every((x, i) => !x.srf || hit.has(i)) ? out : null;
}

/**
 * The earlier item a subquery names (its alias), or null: a column qualified by an earlier
 * item's alias, or an unqualified name only an earlier item has (a conservative reading: a
 * false "yes" costs the JSON form, never a wrong answer).
 */
export function namesEarlier(root: unknown, earlier: Source[], qualifiedOnly = false): string | null {
  if (!earlier.length) return null;
  const seen = new Set<unknown>();
  const walk = (v: unknown): string | null => {
    if (!v || typeof v !== 'object' || seen.has(v)) return null;
    seen.add(v);
    if (Array.isArray(v)) {
      for (const x of v) {
        const r = walk(x);
        if (r) return r;
      }
      return null;
    }
    const n = v as Node;
    if (n.type === 'column_ref' && n.column !== '*') {
      const t = n.table as unknown;
      const table = typeof t === 'string' ? t.toLowerCase() : t ? String((t as Node).value ?? '').toLowerCase() : null;
      const name = columnName(n);
      if (table !== null) return earlier.find((s) => s.alias === table)?.alias ?? null;
      if (qualifiedOnly) return null;
      return earlier.find((s) => s.columns?.some((c) => c.name === name))?.alias ?? null;
    }
    for (const x of Object.values(n)) {
      const r = walk(x);
      if (r) return r;
    }
    return null;
  };
  return walk(root);
}

/** A LIMIT or OFFSET value SQLite takes as it is (query-parts.ts emitLimitValue). */
const plainLimit = (v: Node): boolean =>
  (v.type === 'number' && Number.isInteger(Number(v.value))) || v.type === 'var' || v.type === 'null' || (v.type === 'origin' && String(v.value).toUpperCase() === 'ALL');

/**
 * `… order by x limit a.n` with a LIMIT or OFFSET that names the outer row (in a LATERAL
 * subquery): SQLite's LIMIT takes no correlated value, so the core numbers its rows in the
 * query's order (row_number() OVER (ORDER BY …)) and an outer query keeps those within the
 * bounds. Null when the LIMIT and OFFSET are plain (numbers, parameters, ALL).
 */
export function windowLimit(em: Emitter, n: Node, core: { sql: string; columns: ColumnType[] | null; sources: Source[]; aliases: Map<string, Expr>; ordered: boolean }, outer: Source[]): string | null {
  const limit = n.limit as { seperator?: string; value?: Node[] } | undefined;
  const values = limit?.value ?? [];
  if (values.every(plainLimit)) return null;
  if (core.ordered || !core.columns || !/^SELECT /.test(core.sql) || /^SELECT DISTINCT /.test(core.sql)) throw unsupported('LIMIT/OFFSET other than a number or a parameter with DISTINCT or *');
  const scope = [...core.sources, ...outer];
  const bound = (v: Node | undefined, what: string): string | null => {
    if (!v || v.type === 'null' || (v.type === 'origin' && String(v.value).toUpperCase() === 'ALL')) return null;
    const x = em.coerce(em.expr(v, outer), 'int8').sql;
    return `(CASE WHEN ${x} < 0 THEN pe_error('${what} must not be negative') ELSE ${x} END)`;
  };
  const offsetForm = limit?.seperator === 'offset';
  const count = offsetForm && values.length === 1 ? null : bound(values[0], 'LIMIT');
  const offset = offsetForm ? bound(values[values.length - 1], 'OFFSET') : null;
  const order = ((n.orderby as Node[] | undefined) ?? []).map((o) => {
    const e = o.expr as Node;
    if (e.type === 'number') throw unsupported('ORDER BY a position with a LIMIT over the outer row');
    const name = e.type === 'column_ref' && !e.table ? columnName(e) : null;
    const alias = name !== null && !em._resolve(null, name, scope) ? core.aliases.get(name) : undefined;
    // note: as ORDER BY itself (query-parts.ts): an enum by its labels' order, an interval by its length.
    const sql = alias ? (alias.type === 'interval' ? em._fn('pe_interval_key', alias.sql) : alias.sql) : emitOrderExpr(em, e, scope, [], new Map());
    const dir = String(o.type ?? 'ASC').toUpperCase() === 'DESC' ? 'DESC' : 'ASC';
    const nulls = typeof o.nulls === 'string' ? o.nulls.toUpperCase() : dir === 'ASC' ? 'NULLS LAST' : 'NULLS FIRST';
    return `${sql} ${dir} ${nulls}`;
  });
  const numbered = core.sql.replace(/^SELECT /, `SELECT row_number() OVER (${order.length ? `ORDER BY ${order.join(', ')}` : ''}) AS "pe_rn", `);
  // note: a NULL LIMIT is no limit and a NULL OFFSET none, as in Postgres.
  const off = offset ? `coalesce(${offset}, 0)` : null;
  const from = off ? `"pe_rn" > ${off}` : '1';
  const to = count ? ` AND ("pe_rn" <= ${off ? `${off} + ` : ''}${count} OR ${count} IS NULL)` : '';
  return `SELECT ${core.columns.map((c) => quoteIdent(c.name)).join(', ')} FROM (${numbered}) WHERE ${from}${to} ORDER BY "pe_rn"`;
}
