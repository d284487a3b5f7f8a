import { EdgeError } from '../../core/errors.js';
import { enumKeyOf, enumLabels, enumOrderKey, enumPosition } from './types-ddl.js';
import { quoteIdent } from '../../project/schemas.js';
import type { ColumnType } from './types.js';
import { lateralFunction, tableFunction } from './from-functions.js';
import { lateralSubquery, lateralTableFunction, namesEarlier, selectSrfs, zipFunctions } from './lateral.js';
import { viewFrom } from './views.js';
import { type Emitter, type Expr, FROM_KEYS, MAX_DEPTH, type Node, type Source, callName, checkKeys, columnName, tickCall, unsupported } from './emit.js';

/** The parts of a query: select core, VALUES, grouping, DISTINCT ON, ORDER BY, LIMIT, *, FROM items and joins. Free functions over the Emitter (emit.ts), one room of the emitter. */

export function emitSelectCore(em: Emitter, written: Node, outer: Source[]): { sql: string; columns: ColumnType[] | null; sources: Source[]; aliases: Map<string, Expr>; ordered: boolean; positions?: Array<Expr | undefined> } {
  em._count();
  if (em._depth++ > MAX_DEPTH) throw unsupported('nesting deeper than 200 levels');
  if (Array.isArray(written.values)) {
    em._depth--;
    return emitValues(em, written.values as Node[][], outer);
  }
  let n = written;
  try {
    // note: set-returning functions in the select list become FROM items (lateral.ts).
    n = selectSrfs(written);
  } catch (err) {
    em._depth--;
    throw err;
  }
  const saved = { bare: em._bare, agg: em._aggDepth, saw: em._sawAgg, sources: em._coreSources };
  em._bare = null;
  em._aggDepth = 0;
  em._sawAgg = false;
  try {
    const from = Array.isArray(n.from) ? emitFrom(em, n.from as Node[], outer) : { sql: '', sources: [] as Source[] };
    const scope = [...from.sources, ...outer];
    const distinct = n.distinct as Node | null | undefined;
    let distinctSql = '';
    let distinctOn: Node[] | null = null;
    if (distinct && distinct.type) {
      if (distinct.type === 'DISTINCT') distinctSql = 'DISTINCT ';
      else if (distinct.type === 'DISTINCT ON') distinctOn = (distinct.columns as Node[]).map((c) => (c.expr as Node) ?? c);
      else throw unsupported(String(distinct.type));
    }
    em._coreSources = from.sources;
    em._bare = [];
    em._aggDepth = 0;
    em._sawAgg = false;
    const cols: string[] = [];
    const exprs: string[] = [];
    const columns: ColumnType[] = [];
    const aliases = new Map<string, Expr>();
    const positions: Array<Expr | undefined> = [];
    let unknownWidth = false;
    for (const item of (n.columns as Node[]) ?? []) {
      // note: the parser returns `x::t` items as the cast node itself, alias included.
      const e = item.type === 'cast' ? { ...item, as: undefined } : (item.expr as Node);
      if (e?.type === 'column_ref' && e.column === '*') {
        // note: Postgres lists a USING column once, first; the expansion here would list it per table.
        if (!e.table && (n.from as Node[] | undefined)?.some((it) => Array.isArray(it.using))) throw unsupported('SELECT * over JOIN … USING (name the columns)');
        const star = emitStar(em, e, from.sources);
        cols.push(star.sql);
        exprs.push(star.sql);
        if (star.columns) columns.push(...star.columns);
        else unknownWidth = true;
        positions.push(...(star.columns ?? []).map(() => undefined));
        continue;
      }
      const mark = em._bare?.length ?? 0;
      let x = em.expr(e, scope);
      for (const b of em._bare?.slice(mark) ?? []) b.within = x.sql;
      // note: an interval is shown in Postgres' own text (`1 day 02:00:00`); literals are written that way too.
      if (x.type === 'interval') x = { ...x, sql: em._fn('pe_interval_text', x.sql) };
      const alias = typeof item.as === 'string' ? item.as : item.as ? String((item.as as Node).value ?? '') : null;
      const name = alias ?? x.name;
      cols.push(`${x.sql} AS ${em.ident(name)}`);
      exprs.push(x.sql);
      // note: an enum value keeps its type through a subquery (ordered by its labels outside too).
      columns.push(x.enum ? { name, type: x.type, enum: x.enum } : { name, type: x.type === 'unknown' ? 'text' : x.type });
      if (alias) aliases.set(alias, x);
      positions.push(x);
    }
    if (cols.length === 0) throw unsupported('SELECT without columns');
    const selectBare = em._bare;
    em._bare = null;
    let where = n.where ? em.bool(n.where as Node, scope) : null;
    em._bare = selectBare;
    if (from.sql) {
      const tick = tickCall(from.sources);
      where = where ? `(${where}) AND ${tick}` : tick;
    }
    let sql = `SELECT ${distinctSql}${cols.join(', ')}${from.sql ? ` FROM ${from.sql}` : ''}${where ? ` WHERE ${where}` : ''}`;
    const group = n.groupby as { columns?: Node[] } | null | undefined;
    const grouped: string[] = [];
    if (group?.columns?.length) {
      em._bare = null;
      for (const g of group.columns) grouped.push(emitGroupItem(em, g, scope, columns, exprs, aliases));
      em._bare = selectBare;
      sql += ` GROUP BY ${grouped.join(', ')}`;
    }
    if (n.having) sql += ` HAVING ${em.bool(n.having as Node, scope)}`;
    if (n.window) throw unsupported('named WINDOW clauses');
    if (grouped.length || em._sawAgg) emitCheckGrouping(em, grouped, from.sources);
    let ordered = false;
    if (distinctOn) {
      if (unknownWidth) throw unsupported('DISTINCT ON with *');
      sql = emitDistinctOn(em, sql, distinctOn, n, scope, columns, exprs, aliases);
      ordered = true;
    }
    return { sql, columns: unknownWidth ? null : columns, sources: from.sources, aliases, ordered, positions };
  } finally {
    em._depth--;
    em._bare = saved.bare;
    em._aggDepth = saved.agg;
    em._sawAgg = saved.saw;
    em._coreSources = saved.sources;
  }
}

/**
 * `VALUES (…), (…)`: columns column1, column2, … (as in Postgres and SQLite), each typed by
 * its first typed value (an untyped literal column is text), the other rows coerced to it.
 */
export function emitValues(em: Emitter, rows: Node[][], outer: Source[]): { sql: string; columns: ColumnType[]; sources: Source[]; aliases: Map<string, Expr>; ordered: boolean } {
  const width = rows[0]?.length ?? 0;
  if (rows.some((r) => r.length !== width)) throw new EdgeError('invalid_request', 'VALUES lists must all be the same length');
  const exprs = rows.map((r) => r.map((v) => em.expr(v, outer)));
  const types = Array.from({ length: width }, (_, i) => exprs.map((r) => r[i]!.type).find((t) => t !== null && t !== 'unknown') ?? 'text');
  const sql = `VALUES ${exprs.map((r) => `(${r.map((e, i) => em.coerce(e, types[i]!).sql).join(', ')})`).join(', ')}`;
  return { sql, columns: types.map((type, i) => ({ name: `column${i + 1}`, type })), sources: [], aliases: new Map(), ordered: false };
}

/** Postgres: in an aggregate query every column outside an aggregate is grouped, or its table's primary key is. */
export function emitCheckGrouping(em: Emitter, grouped: string[], sources: Source[]): void {
  const set = new Set(grouped);
  for (const b of em._bare ?? []) {
    // note: a column inside a grouped expression of its select item (`to_char(date_trunc('month', at), …)` grouped by the date_trunc) is grouped.
    const outside = b.within === undefined ? null : grouped.reduce((w, g) => (g.includes(b.sql) ? w.split(g).join('\0') : w), b.within);
    if ((outside !== null && !outside.includes(b.sql)) || (b.within !== undefined && set.has(b.within)) || set.has(b.sql) || set.has(quoteIdent(b.name)) || set.has(`${quoteIdent(b.alias)}.${quoteIdent(b.name)}`)) continue;
    const src = sources.find((x) => x.alias === b.alias);
    const pk = src?.columns?.find((c) => c.pk);
    if (pk && (set.has(quoteIdent(pk.name)) || set.has(`${quoteIdent(b.alias)}.${quoteIdent(pk.name)}`))) continue;
    throw new EdgeError('invalid_request', `column "${b.alias}.${b.name}" must appear in the GROUP BY clause or be used in an aggregate function`);
  }
}

/** DISTINCT ON (a): the first row per key in the query's order, via row_number(); the outer query keeps that order. */
export function emitDistinctOn(em: Emitter, inner: string, keys: Node[], n: Node, scope: Source[], columns: ColumnType[], exprs: string[], aliases: Map<string, Expr>): string {
  const at = (e: Node): Expr => {
    if (e.type === 'number') {
      const i = Number(e.value);
      if (!Number.isInteger(i) || i < 1 || i > exprs.length) throw new EdgeError('invalid_request', `position ${String(e.value)} is not in the select list`);
      const c = columns[i - 1];
      return { sql: exprs[i - 1]!, type: c?.type ?? null, name: c?.name ?? '', ...(c?.enum ? { enum: c.enum } : {}) };
    }
    if (e.type === 'column_ref' && !e.table && aliases.has(columnName(e)) && !em._resolve(null, columnName(e), scope)) return aliases.get(columnName(e))!;
    return em.expr(e, scope);
  };
  const pos = (e: Node): string => at(e).sql;
  // note: the order within a key sorts an enum by its labels, as ORDER BY does.
  const key = (e: Node): string => {
    const x = at(e);
    return enumKeyOf(em, x) ?? x.sql;
  };
  const part = keys.map(pos).join(', ');
  const orderBy = Array.isArray(n.orderby) ? (n.orderby as Node[]) : [];
  const items = orderBy.map((o, i) => {
    const dir = String(o.type ?? 'ASC').toUpperCase() === 'DESC' ? 'DESC' : 'ASC';
    const nulls = typeof o.nulls === 'string' ? o.nulls.toUpperCase() : null;
    const nullsSql = nulls === 'NULLS FIRST' ? ' NULLS FIRST' : nulls === 'NULLS LAST' ? ' NULLS LAST' : dir === 'ASC' ? ' NULLS LAST' : ' NULLS FIRST';
    return { expr: key(o.expr as Node), tail: ` ${dir}${nullsSql}`, name: `pe_o${i}` };
  });
  const order = items.length ? items.map((x) => x.expr + x.tail).join(', ') : part;
  const extra = items.map((x) => `, ${x.expr} AS "${x.name}"`).join('');
  const names = columns.map((c) => quoteIdent(c.name)).join(', ');
  const withRn = inner.replace(/^SELECT /, `SELECT row_number() OVER (PARTITION BY ${part} ORDER BY ${order}) AS "pe_rn"${extra}, `);
  const outerOrder = items.length ? ` ORDER BY ${items.map((x) => `"${x.name}"${x.tail}`).join(', ')}` : '';
  return `SELECT ${names} FROM (${withRn}) WHERE "pe_rn" = 1${outerOrder}`;
}

export function emitGroupItem(em: Emitter, g: Node, scope: Source[], columns: ColumnType[], exprs: string[], aliases: Map<string, Expr>): string {
  if (g.type === 'number') {
    const i = Number(g.value);
    if (!Number.isInteger(i) || i < 1 || i > exprs.length) throw new EdgeError('invalid_request', `GROUP BY position ${String(g.value)} is not in the select list`);
    return exprs[i - 1]!;
  }
  if (g.type === 'column_ref' && !g.table && aliases.has(columnName(g)) && !em._resolve(null, columnName(g), scope)) return aliases.get(columnName(g))!.sql;
  // note: an enum groups by its value (its sort key would hide the column from the grouping check); an interval by its length.
  const x = em.expr(g, scope);
  return x.type === 'interval' ? em._fn('pe_interval_key', x.sql) : x.sql;
}

export function emitOrderExpr(em: Emitter, e: Node, scope: Source[], columns: ColumnType[], aliases: Map<string, Expr>, positions?: Array<Expr | undefined>): string {
  if (e.type === 'number') {
    const i = Number(e.value);
    if (!Number.isInteger(i) || i < 1 || i > columns.length) throw new EdgeError('invalid_request', `ORDER BY position ${String(e.value)} is not in the select list`);
    // note: an enum output column sorts by its labels' order (Postgres), not as the text SQLite holds.
    const at = positions?.[i - 1];
    return (at && enumKeyOf(em, at)) ?? String(i);
  }
  if (e.type === 'column_ref' && (e.table === null || e.table === undefined)) {
    const name = columnName(e);
    const a = aliases.get(name);
    // note: an interval is shown as text; it sorts by its length in time (pe_interval_key), as in Postgres.
    if (a && !em._resolve(null, name, scope)) return a.type === 'interval' ? em._fn('pe_interval_key', quoteIdent(name)) : ((positions && enumKeyOf(em, a)) ?? quoteIdent(name));
  }
  const byLabel = enumOrderKey(em, e, scope);
  if (byLabel) return byLabel;
  const x = em.expr(e, scope);
  return x.type === 'interval' ? em._fn('pe_interval_key', x.sql) : (enumKeyOf(em, x) ?? x.sql);
}

export function emitOrderItem(em: Emitter, o: Node, scope: Source[], columns: ColumnType[], aliases: Map<string, Expr>, positions?: Array<Expr | undefined>): string {
  const dir = String(o.type ?? 'ASC').toUpperCase() === 'DESC' ? 'DESC' : 'ASC';
  const nulls = typeof o.nulls === 'string' ? o.nulls.toUpperCase() : null;
  // note: Postgres sorts NULLs last ascending and first descending; SQLite the reverse. Made explicit.
  const nullsSql = nulls === 'NULLS FIRST' ? ' NULLS FIRST' : nulls === 'NULLS LAST' ? ' NULLS LAST' : dir === 'ASC' ? ' NULLS LAST' : ' NULLS FIRST';
  return `${emitOrderExpr(em, o.expr as Node, scope, columns, aliases, positions)} ${dir}${nullsSql}`;
}

export function emitOrderLimit(em: Emitter, n: Node, sources: Source[], aliases: Map<string, Expr>, ordered = false, width: number | null = null, positions?: Array<Expr | undefined>): string {
  let sql = '';
  if (!ordered && Array.isArray(n.orderby) && n.orderby.length) {
    // note: only the count matters here (ORDER BY <position> is checked against it).
    const cols: ColumnType[] = Array.from({ length: width ?? 1000 }, () => ({ name: '', type: null }));
    sql += ` ORDER BY ${(n.orderby as Node[]).map((o) => emitOrderItem(em, o, sources, cols, aliases, positions)).join(', ')}`;
  }
  const limit = n.limit as { seperator?: string; value?: Node[] } | undefined;
  if (limit?.value?.length) {
    const v = limit.value;
    if (limit.seperator === 'offset' && v.length === 2) sql += ` LIMIT ${emitLimitValue(em, v[0]!)} OFFSET ${emitLimitValue(em, v[1]!)}`;
    else if (limit.seperator === 'offset' && v.length === 1) sql += ` LIMIT -1 OFFSET ${emitLimitValue(em, v[0]!)}`;
    else if (v.length === 1) sql += ` LIMIT ${emitLimitValue(em, v[0]!)}`;
    else throw unsupported('this LIMIT form');
  }
  return sql;
}

/**
 * ORDER BY of a set operation (`… union … order by 1`) that names an enum output column: the
 * set operation as a subquery, sorted outside by the labels' order (SQLite sorts a compound
 * by its result columns only). Null when no order item names an enum column.
 */
export function emitSetOrder(em: Emitter, n: Node, columns: ColumnType[], inner: string): string | null {
  const order = Array.isArray(n.orderby) ? (n.orderby as Node[]) : [];
  const named = (e: Node): ColumnType | undefined => (e.type === 'number' ? columns[Number(e.value) - 1] : e.type === 'column_ref' && !e.table ? columns.find((c) => c.name === columnName(e)) : undefined);
  if (!order.some((o) => named(o.expr as Node)?.enum)) return null;
  const items = order.map((o) => {
    const c = named(o.expr as Node);
    if (!c) throw unsupported('ORDER BY of a set operation by other than its output columns');
    const labels = c.enum ? enumLabels(em, c.enum) : null;
    const dir = String(o.type ?? 'ASC').toUpperCase() === 'DESC' ? 'DESC' : 'ASC';
    const nulls = typeof o.nulls === 'string' ? o.nulls.toUpperCase() : null;
    const nullsSql = nulls === 'NULLS FIRST' ? ' NULLS FIRST' : nulls === 'NULLS LAST' ? ' NULLS LAST' : dir === 'ASC' ? ' NULLS LAST' : ' NULLS FIRST';
    return `${labels ? enumPosition(labels, quoteIdent(c.name)) : quoteIdent(c.name)} ${dir}${nullsSql}`;
  });
  return `SELECT * FROM (${inner}) ORDER BY ${items.join(', ')}${emitOrderLimit(em, { ...n, orderby: null }, [], new Map(), true)}`;
}

export function emitLimitValue(em: Emitter, v: Node): string {
  if (v.type === 'number' && Number.isInteger(Number(v.value)) && Number(v.value) >= 0) return String(Number(v.value));
  if (v.type === 'var') return `CAST(${em.expr(v, []).sql} AS INTEGER)`;
  if (v.type === 'null' || (v.type === 'origin' && String(v.value).toUpperCase() === 'ALL')) return '-1';
  throw unsupported('LIMIT/OFFSET other than a number or a parameter');
}

export function emitStar(em: Emitter, e: Node, sources: Source[]): { sql: string; columns: ColumnType[] | null } {
  const t = e.table as unknown;
  const tname = typeof t === 'string' ? t : t ? String((t as Node).value ?? '') : null;
  const picked = tname ? sources.filter((s) => s.alias === tname.toLowerCase()) : sources.filter((s) => !s.hidden);
  if (tname && picked.length === 0) throw new EdgeError('invalid_request', `missing FROM-clause entry for table "${tname}"`);
  if (sources.length === 0) throw new EdgeError('invalid_request', 'SELECT * with no tables specified is not valid');
  if (picked.every((s) => s.columns)) {
    const parts: string[] = [];
    const columns: ColumnType[] = [];
    for (const s of picked) {
      for (const c of s.columns!) {
        parts.push(`${s.exprs?.[c.name] ?? `${quoteIdent(s.alias)}.${quoteIdent(c.name)}`} AS ${quoteIdent(c.name)}`);
        columns.push(c);
      }
    }
    return { sql: parts.join(', '), columns };
  }
  return { sql: tname ? `${quoteIdent(tname.toLowerCase())}.*` : '*', columns: null };
}

export function emitFrom(em: Emitter, items: Node[], outer: Source[]): { sql: string; sources: Source[] } {
  const sources: Source[] = [];
  let sql = '';
  items.forEach((it, i) => {
    em._count();
    const { text, source } = emitFromItem(em, it, outer, sources);
    sources.push(it.hidden ? { ...source, hidden: true } : source);
    if (i === 0) {
      sql = text;
      return;
    }
    const join = typeof it.join === 'string' ? it.join.toUpperCase() : null;
    if (!join) {
      sql += `, ${text}`;
      return;
    }
    const kinds: Record<string, string> = {
      'INNER JOIN': 'JOIN',
      JOIN: 'JOIN',
      'LEFT JOIN': 'LEFT JOIN',
      'LEFT OUTER JOIN': 'LEFT JOIN',
      'CROSS JOIN': 'CROSS JOIN',
      'RIGHT JOIN': 'RIGHT JOIN',
      'RIGHT OUTER JOIN': 'RIGHT JOIN',
      'FULL JOIN': 'FULL JOIN',
      'FULL OUTER JOIN': 'FULL JOIN',
    };
    const k = kinds[join];
    if (!k) throw unsupported(join);
    sql += ` ${k} ${text}`;
    if (it.on) sql += ` ON ${em.bool(it.on as Node, [...sources, ...outer])}`;
    else if (Array.isArray(it.using)) sql += ` USING (${(it.using as Node[]).map((u) => em.ident(String(u.value ?? u))).join(', ')})`;
  });
  return { sql, sources };
}

export function emitFromItem(em: Emitter, it: Node, outer: Source[], earlier: Source[] = []): { text: string; source: Source } {
  checkKeys(it, FROM_KEYS, 'a FROM item');
  // note: SQLite has no sampling: reading the whole table would be a silently different result.
  if (it.tablesample) throw unsupported('TABLESAMPLE');
  const asName = typeof it.as === 'string' ? it.as.toLowerCase() : null;
  if (it.expr && (it.expr as Node).ast) {
    if (!asName) throw unsupported('a subquery in FROM without an alias');
    if (it.lateral) {
      const lateral = lateralSubquery(em, it, asName, earlier, outer);
      if (lateral) return lateral;
    }
    const sub = em.select((it.expr as Node).ast as Node, outer);
    const names = Array.isArray(it.columns) ? (it.columns as string[]) : null;
    if (names) {
      // note: `AS v(a, b)` renames the subquery's columns (the rest keep their names).
      if (!sub.columns) throw unsupported('column aliases on a subquery whose columns are not known');
      if (names.length > sub.columns.length) throw new EdgeError('invalid_request', `table "${asName}" has ${sub.columns.length} columns available but ${names.length} columns specified`);
      const renamed = sub.columns.map((c, i) => ({ ...c, name: names[i] ?? c.name }));
      const list = sub.columns.map((c, i) => `${quoteIdent(c.name)} AS ${quoteIdent(renamed[i]!.name)}`).join(', ');
      return { text: `(SELECT ${list} FROM (${sub.sql})) AS ${quoteIdent(asName)}`, source: { alias: asName, columns: renamed } };
    }
    return { text: `(${sub.sql}) AS ${quoteIdent(asName)}`, source: { alias: asName, columns: sub.columns } };
  }
  if (it.fn) {
    const names = Array.isArray(it.columns) ? (it.columns as string[]) : null;
    // note: a function over an earlier item of the same FROM list (implicitly LATERAL in Postgres): SQLite's json_each joins it.
    if (namesEarlier((it.fn as Node).args, earlier)) {
      // note: SQLite's generate_series is a recursive CTE: over an earlier item it goes as JSON rows (lateral.ts).
      if (callName(it.fn as Node).name === 'generate_series') return lateralTableFunction(em, it.fn as Node, asName, names, [...earlier, ...outer]);
      return lateralFunction(em, it.fn as Node, asName, names, [...earlier, ...outer]);
    }
    return tableFunction(em, it.fn as Node, asName, names, outer);
  }
  if (Array.isArray(it.zip)) return zipFunctions(em, it.zip as Node[], asName ?? 'pe_srf', (it.columns as string[] | undefined) ?? [], [...earlier, ...outer]);
  if (it.type === 'expr' || it.expr) throw unsupported('this FROM item');
  if (typeof it.table !== 'string') throw unsupported('this FROM item');
  const plain = it.table.toLowerCase();
  if (!it.db) {
    if (em._noReturning.has(plain) && !em._ctes.some((c) => c.has(plain))) {
      throw new EdgeError('unsupported_sql', `WITH query "${plain}" does not have a RETURNING clause`, { details: { construct: 'a data-modifying WITH item without RETURNING', sqlstate: '0A000' } });
    }
    for (let i = em._ctes.length - 1; i >= 0; i--) {
      const scope = em._ctes[i]!;
      if (scope.has(plain)) {
        const alias = asName ?? plain;
        return { text: `${quoteIdent(plain)}${asName ? ` AS ${quoteIdent(asName)}` : ''}`, source: { alias, columns: scope.get(plain) ?? null } };
      }
    }
  }
  const view = viewFrom(em, it.db, plain, asName);
  if (view) return view;
  const phys = em.physical(it.db, it.table, true);
  const alias = asName ?? plain;
  const ref = em.tableRef(phys);
  return { text: `${ref} AS ${quoteIdent(alias)}`, source: { alias, columns: em.columnsOf(phys) } };
}
