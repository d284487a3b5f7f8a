import { EdgeError } from '../../core/errors.js';
import { physicalName, quoteIdent } from '../../project/schemas.js';
import { quoteLiteral } from '../quote.js';
import { pgTypeOf, typeNameOf, type ColumnType, type PgType, type SchemaLookup } from './types.js';
import { AUTH_USERS, AUTH_USERS_COLUMNS, AUTH_USERS_SQL, authUsersReadOnly, isReservedName, readOnlyView, reservedRefusal } from './reserved.js';
import { FUNCTIONS } from './catalog/core.js';
import { tableFunction } from './from-functions.js';
import { OPERATORS, operatorFor } from './catalog/everyday.js';
import type { CatalogFunction } from './catalog/types.js';
import { introspectionColumns, introspectionSql, introspectionView, isIntrospectionView, type Introspect, type IntrospectTable } from './introspect.js';

/**
 * Emits SQLite from node-sql-parser's PostgreSQL AST, from an allowlist: every node
 * type and function below has a translation; anything else throws 400
 * `unsupported_sql` naming the construct. Nothing from the source is copied into the
 * output except re-quoted identifiers and re-quoted literals.
 *
 * Output markers (resolved per caller in translate.ts):
 * - `\0P<n>\0`: the caller's parameter `$n`, bound as `?`;
 * - `\0P<n>:<fn>\0`: the same, converted by the SQL function `fn` (of BIND_CONVERSIONS) when bound;
 * - `\0T<name>\0`: a table reference, the table itself or its RLS-filtered form;
 * - `\0K<columns>\0`: the time-limit check `pe_tick(columns)` (left out where no limit applies).
 */

/** Conversions of one value that may run when a parameter is bound instead of inside SQLite. */
export const BIND_CONVERSIONS: ReadonlySet<string> = new Set(['pe_uuid', 'pe_ts', 'pe_date', 'pe_jsonb', 'pe_bool', 'pe_int', 'pe_float', 'pe_text_array']);
export type Node = { type?: string; [k: string]: unknown };

export interface Expr {
  sql: string;
  type: PgType | null;
  /** The output name Postgres gives an unaliased select item. */
  name: string;
  /** A timestamp whose SQL already yields the stored ISO form (no normalisation when it meets a timestamptz). */
  iso?: boolean;
}

export interface Source {
  alias: string;
  columns: ColumnType[] | null;
}

/** The column that stands for "the referenced table's primary key" in a REFERENCES translate.ts rewrote for the parser. */
export const PRIMARY_KEY_MARK = 'pe_primary_key';

export const unsupported = (construct: string): EdgeError =>
  new EdgeError('unsupported_sql', `not supported: ${construct}`, { details: { construct } });

const NOW = `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`;
/** Zone names that mean UTC (timezone() accepts only these: the session time zone is UTC). */
const UTC_ZONES = new Set(['utc', 'etc/utc', 'gmt', 'etc/gmt', 'zulu', 'z', 'utc0', '+00', '+00:00', 'universal', 'etc/universal']);
const UUID_V4 =
  `lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-' || ` +
  `substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))`;
const COMPARE = new Set(['=', '<>', '!=', '<', '<=', '>', '>=']);
const ARITH = new Set(['+', '-', '*', '/', '%']);
const MAX_NODES = 20_000;
const AGGREGATES = new Set(['sum', 'avg', 'min', 'max', 'bool_and', 'bool_or', 'every', 'jsonb_agg', 'json_agg', 'array_agg']);
const MAX_DEPTH = 200;

/** How an emitted expression is used: DDL defaults and checks must run on any connection. */
export interface EmitOptions {
  schema: SchemaLookup;
  /** Publishable callers: only tables accepted by this check may be read. */
  readable?: (physical: string) => boolean;
  /** The project's tables for the introspection views (introspect.ts); without it they are empty. */
  introspect?: Introspect;
}

export class Emitter {
  readonly tables = new Set<string>();
  readonly params = new Set<number>();
  #nodes = 0;
  #depth = 0;
  /** Inside DDL: only native SQLite (no registered functions, no parameters). */
  native = false;
  readonly #ctes: Array<Map<string, ColumnType[] | null>> = [];
  /** Column references outside aggregates in the current select core (null: not collecting). */
  #bare: Array<{ alias: string; name: string; sql: string; within?: string }> | null = null;
  #aggDepth = 0;
  #sawAgg = false;
  #coreSources: Source[] = [];

  constructor(readonly opts: EmitOptions) {}

  #count(): void {
    if (++this.#nodes > MAX_NODES) throw unsupported('statements larger than 20000 syntax nodes');
  }

  // ---------------------------------------------------------------- names

  /**
   * A table name from the AST → its physical SQLite name. The platform's reserved tables
   * (`_svc_*`, reserved.ts) are refused for every caller in every spelling; `auth.users` is
   * a name only where a statement reads (`read`: FROM items), refused as a target.
   */
  physical(db: unknown, table: unknown, read = false): string {
    if (typeof table !== 'string' || table.includes('\0')) throw unsupported('this table reference');
    const schema = typeof db === 'string' && db !== '' ? db.toLowerCase() : null;
    const name = table.toLowerCase();
    if (name.startsWith('sqlite_')) throw unsupported(`SQLite internal table ${name}`);
    if ((schema !== null && isReservedName(schema)) || isReservedName(name)) throw reservedRefusal(schema ? `${schema}.${name}` : name);
    if (schema === 'auth' && name === 'users') {
      if (!read) throw authUsersReadOnly();
      return AUTH_USERS;
    }
    const view = introspectionView(schema, name);
    if (view !== null) {
      if (!read) throw readOnlyView(view);
      return view;
    }
    const p = physicalName(schema, name);
    if (p === null) throw unsupported(schema ? `schema "${schema}" or table name "${name}"` : `table name "${name}"`);
    return p;
  }

  tableRef(physical: string): string {
    if (this.opts.readable && !this.opts.readable(physical)) {
      throw new EdgeError('missing_scope', `table "${physical}" cannot be read with this key`, { details: { scope: 'service_role' } });
    }
    this.tables.add(physical);
    // note: auth.users is its fixed subquery for the service role; other callers are refused it
    // (query.ts: a table outside the rows API's catalog), so it needs no per-caller form.
    if (physical === AUTH_USERS) return AUTH_USERS_SQL;
    if (isIntrospectionView(physical)) return introspectionSql(physical, this.#introspected());
    return `\0T${physical}\0`;
  }

  #tables: IntrospectTable[] | null = null;

  #introspected(): IntrospectTable[] {
    return (this.#tables ??= this.opts.introspect?.() ?? []);
  }

  /** A physical table's columns (auth.users and the introspection views: their fixed ones). */
  columnsOf(physical: string): ColumnType[] | null {
    if (physical === AUTH_USERS) return [...AUTH_USERS_COLUMNS];
    if (isIntrospectionView(physical)) return introspectionColumns(physical);
    return this.opts.schema(physical);
  }

  ident(name: unknown): string {
    if (typeof name !== 'string' || name === '' || name.includes('\0')) throw unsupported('this identifier');
    return quoteIdent(name);
  }

  // ---------------------------------------------------------------- statements

  /** A SELECT (with its set operations, CTEs, ORDER BY and LIMIT); returns SQL and its output columns. */
  select(n: Node, outer: Source[] = []): { sql: string; columns: ColumnType[] | null } {
    this.#count();
    if (n.type !== 'select') throw unsupported(`${String(n.type)} statement here`);
    checkKeys(n, SELECT_KEYS, 'SELECT');
    if (n.into && (n.into as Node).position) throw unsupported('SELECT INTO');
    if (n.locking_read) throw unsupported('FOR UPDATE / FOR SHARE');
    let prefix = '';
    let pushed = false;
    if (Array.isArray(n.with) && n.with.length) {
      const scope = new Map<string, ColumnType[] | null>();
      this.#ctes.push(scope);
      pushed = true;
      const recursive = (n.with as Node[]).some((w) => w.recursive);
      const parts: string[] = [];
      for (const w of n.with as Node[]) {
        const name = String((w.name as Node | undefined)?.value ?? '').toLowerCase();
        if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw unsupported('this CTE name');
        const cols = Array.isArray(w.columns) ? (w.columns as Node[]).map((c) => columnName(c)) : null;
        // note: a recursive CTE's columns are visible in its own body; types come from the anchor member.
        scope.set(name, cols ? cols.map((c) => ({ name: c, type: null })) : null);
        const stmt = (w.stmt as Node | undefined)?.ast ? ((w.stmt as Node).ast as Node) : (w.stmt as Node);
        const body = this.select(stmt, outer);
        const outCols = cols
          ? cols.map((c, i) => ({ name: c, type: body.columns?.[i]?.type ?? null }))
          : body.columns;
        scope.set(name, outCols);
        parts.push(`${quoteIdent(name)}${cols ? ` (${cols.map(quoteIdent).join(', ')})` : ''} AS (${body.sql})`);
      }
      prefix = `WITH ${recursive ? 'RECURSIVE ' : ''}${parts.join(', ')} `;
    }
    try {
      let cur: Node | undefined = n;
      let sql = '';
      let columns: ColumnType[] | null = null;
      let first = true;
      let op = '';
      while (cur) {
        const core = this.#selectCore(cur, outer);
        if (first) columns = core.columns;
        sql += first ? core.sql : ` ${op} ${core.sql}`;
        first = false;
        if (cur._next) {
          op = String(cur.set_op ?? 'union').toUpperCase();
          if (!['UNION', 'UNION ALL', 'INTERSECT', 'EXCEPT'].includes(op)) throw unsupported(`set operation ${op}`);
        }
        const tail = this.#orderLimit(cur, core.sources, core.aliases, core.ordered, columns?.length ?? null);
        if (tail && cur._next) throw unsupported('ORDER BY / LIMIT inside one member of a set operation');
        sql += tail;
        cur = cur._next as Node | undefined;
      }
      return { sql: prefix + sql, columns };
    } finally {
      if (pushed) this.#ctes.pop();
    }
  }

  #selectCore(n: Node, outer: Source[]): { sql: string; columns: ColumnType[] | null; sources: Source[]; aliases: Map<string, Expr>; ordered: boolean } {
    this.#count();
    if (this.#depth++ > MAX_DEPTH) throw unsupported('nesting deeper than 200 levels');
    if (Array.isArray(n.values)) {
      this.#depth--;
      return this.#values(n.values as Node[][], outer);
    }
    const saved = { bare: this.#bare, agg: this.#aggDepth, saw: this.#sawAgg, sources: this.#coreSources };
    this.#bare = null;
    this.#aggDepth = 0;
    this.#sawAgg = false;
    try {
      const from = Array.isArray(n.from) ? this.#from(n.from as Node[], outer) : { sql: '', sources: [] as Source[] };
      const scope = [...from.sources, ...outer];
      const distinct = n.distinct as Node | null | undefined;
      let distinctSql = '';
      let distinctOn: Node[] | null = null;
      if (distinct && distinct.type) {
        if (distinct.type === 'DISTINCT') distinctSql = 'DISTINCT ';
        else if (distinct.type === 'DISTINCT ON') distinctOn = (distinct.columns as Node[]).map((c) => (c.expr as Node) ?? c);
        else throw unsupported(String(distinct.type));
      }
      this.#coreSources = from.sources;
      this.#bare = [];
      this.#aggDepth = 0;
      this.#sawAgg = false;
      const cols: string[] = [];
      const exprs: string[] = [];
      const columns: ColumnType[] = [];
      const aliases = new Map<string, Expr>();
      let unknownWidth = false;
      for (const item of (n.columns as Node[]) ?? []) {
        // note: the parser returns `x::t` items as the cast node itself, alias included.
        const e = item.type === 'cast' ? { ...item, as: undefined } : (item.expr as Node);
        if (e?.type === 'column_ref' && e.column === '*') {
          // note: Postgres lists a USING column once, first; the expansion here would list it per table.
          if (!e.table && (n.from as Node[] | undefined)?.some((it) => Array.isArray(it.using))) throw unsupported('SELECT * over JOIN … USING (name the columns)');
          const star = this.#star(e, from.sources);
          cols.push(star.sql);
          exprs.push(star.sql);
          if (star.columns) columns.push(...star.columns);
          else unknownWidth = true;
          continue;
        }
        const mark = this.#bare?.length ?? 0;
        const x = this.expr(e, scope);
        for (const b of this.#bare?.slice(mark) ?? []) b.within = x.sql;
        if (x.type === 'interval') throw unsupported('interval values in results');
        const alias = typeof item.as === 'string' ? item.as : item.as ? String((item.as as Node).value ?? '') : null;
        const name = alias ?? x.name;
        cols.push(`${x.sql} AS ${this.ident(name)}`);
        exprs.push(x.sql);
        columns.push({ name, type: x.type === 'unknown' ? 'text' : x.type });
        if (alias) aliases.set(alias, x);
      }
      if (cols.length === 0) throw unsupported('SELECT without columns');
      const selectBare = this.#bare;
      this.#bare = null;
      let where = n.where ? this.bool(n.where as Node, scope) : null;
      this.#bare = selectBare;
      if (from.sql) {
        const tick = tickCall(from.sources);
        where = where ? `(${where}) AND ${tick}` : tick;
      }
      let sql = `SELECT ${distinctSql}${cols.join(', ')}${from.sql ? ` FROM ${from.sql}` : ''}${where ? ` WHERE ${where}` : ''}`;
      const group = n.groupby as { columns?: Node[] } | null | undefined;
      const grouped: string[] = [];
      if (group?.columns?.length) {
        this.#bare = null;
        for (const g of group.columns) grouped.push(this.#groupItem(g, scope, columns, exprs, aliases));
        this.#bare = selectBare;
        sql += ` GROUP BY ${grouped.join(', ')}`;
      }
      if (n.having) sql += ` HAVING ${this.bool(n.having as Node, scope)}`;
      if (n.window) throw unsupported('named WINDOW clauses');
      if (grouped.length || this.#sawAgg) this.#checkGrouping(grouped, from.sources);
      let ordered = false;
      if (distinctOn) {
        if (unknownWidth) throw unsupported('DISTINCT ON with *');
        sql = this.#distinctOn(sql, distinctOn, n, scope, columns, exprs, aliases);
        ordered = true;
      }
      return { sql, columns: unknownWidth ? null : columns, sources: from.sources, aliases, ordered };
    } finally {
      this.#depth--;
      this.#bare = saved.bare;
      this.#aggDepth = saved.agg;
      this.#sawAgg = saved.saw;
      this.#coreSources = saved.sources;
    }
  }

  /**
   * `VALUES (…), (…)`: columns column1, column2, … (as in Postgres and SQLite), each typed by
   * its first typed value (an untyped literal column is text), the other rows coerced to it.
   */
  #values(rows: Node[][], outer: Source[]): { sql: string; columns: ColumnType[]; sources: Source[]; aliases: Map<string, Expr>; ordered: boolean } {
    const width = rows[0]?.length ?? 0;
    if (rows.some((r) => r.length !== width)) throw new EdgeError('invalid_request', 'VALUES lists must all be the same length');
    const exprs = rows.map((r) => r.map((v) => this.expr(v, outer)));
    const types = Array.from({ length: width }, (_, i) => exprs.map((r) => r[i]!.type).find((t) => t !== null && t !== 'unknown') ?? 'text');
    const sql = `VALUES ${exprs.map((r) => `(${r.map((e, i) => this.coerce(e, types[i]!).sql).join(', ')})`).join(', ')}`;
    return { sql, columns: types.map((type, i) => ({ name: `column${i + 1}`, type })), sources: [], aliases: new Map(), ordered: false };
  }

  /** Postgres: in an aggregate query every column outside an aggregate is grouped, or its table's primary key is. */
  #checkGrouping(grouped: string[], sources: Source[]): void {
    const set = new Set(grouped);
    for (const b of this.#bare ?? []) {
      if ((b.within !== undefined && set.has(b.within)) || set.has(b.sql) || set.has(quoteIdent(b.name)) || set.has(`${quoteIdent(b.alias)}.${quoteIdent(b.name)}`)) continue;
      const src = sources.find((x) => x.alias === b.alias);
      const pk = src?.columns?.find((c) => c.pk);
      if (pk && (set.has(quoteIdent(pk.name)) || set.has(`${quoteIdent(b.alias)}.${quoteIdent(pk.name)}`))) continue;
      throw new EdgeError('invalid_request', `column "${b.alias}.${b.name}" must appear in the GROUP BY clause or be used in an aggregate function`);
    }
  }

  /** DISTINCT ON (a): the first row per key in the query's order, via row_number(); the outer query keeps that order. */
  #distinctOn(inner: string, keys: Node[], n: Node, scope: Source[], columns: ColumnType[], exprs: string[], aliases: Map<string, Expr>): string {
    const pos = (e: Node): string => {
      if (e.type === 'number') {
        const i = Number(e.value);
        if (!Number.isInteger(i) || i < 1 || i > exprs.length) throw new EdgeError('invalid_request', `position ${String(e.value)} is not in the select list`);
        return exprs[i - 1]!;
      }
      if (e.type === 'column_ref' && !e.table && aliases.has(columnName(e)) && !this.#resolve(null, columnName(e), scope)) return aliases.get(columnName(e))!.sql;
      return this.expr(e, scope).sql;
    };
    const part = keys.map(pos).join(', ');
    const orderBy = Array.isArray(n.orderby) ? (n.orderby as Node[]) : [];
    const items = orderBy.map((o, i) => {
      const dir = String(o.type ?? 'ASC').toUpperCase() === 'DESC' ? 'DESC' : 'ASC';
      const nulls = typeof o.nulls === 'string' ? o.nulls.toUpperCase() : null;
      const nullsSql = nulls === 'NULLS FIRST' ? ' NULLS FIRST' : nulls === 'NULLS LAST' ? ' NULLS LAST' : dir === 'ASC' ? ' NULLS LAST' : ' NULLS FIRST';
      return { expr: pos(o.expr as Node), tail: ` ${dir}${nullsSql}`, name: `pe_o${i}` };
    });
    const order = items.length ? items.map((x) => x.expr + x.tail).join(', ') : part;
    const extra = items.map((x) => `, ${x.expr} AS "${x.name}"`).join('');
    const names = columns.map((c) => quoteIdent(c.name)).join(', ');
    const withRn = inner.replace(/^SELECT /, `SELECT row_number() OVER (PARTITION BY ${part} ORDER BY ${order}) AS "pe_rn"${extra}, `);
    const outerOrder = items.length ? ` ORDER BY ${items.map((x) => `"${x.name}"${x.tail}`).join(', ')}` : '';
    return `SELECT ${names} FROM (${withRn}) WHERE "pe_rn" = 1${outerOrder}`;
  }

  #groupItem(g: Node, scope: Source[], columns: ColumnType[], exprs: string[], aliases: Map<string, Expr>): string {
    if (g.type === 'number') {
      const i = Number(g.value);
      if (!Number.isInteger(i) || i < 1 || i > exprs.length) throw new EdgeError('invalid_request', `GROUP BY position ${String(g.value)} is not in the select list`);
      return exprs[i - 1]!;
    }
    if (g.type === 'column_ref' && !g.table && aliases.has(columnName(g)) && !this.#resolve(null, columnName(g), scope)) return aliases.get(columnName(g))!.sql;
    return this.#orderExpr(g, scope, columns, aliases);
  }

  #orderExpr(e: Node, scope: Source[], columns: ColumnType[], aliases: Map<string, Expr>): string {
    if (e.type === 'number') {
      const i = Number(e.value);
      if (!Number.isInteger(i) || i < 1 || i > columns.length) throw new EdgeError('invalid_request', `ORDER BY position ${String(e.value)} is not in the select list`);
      return String(i);
    }
    if (e.type === 'column_ref' && (e.table === null || e.table === undefined)) {
      const name = columnName(e);
      const a = aliases.get(name);
      if (a && !this.#resolve(null, name, scope)) return quoteIdent(name);
    }
    return this.expr(e, scope).sql;
  }

  #orderItem(o: Node, scope: Source[], columns: ColumnType[], aliases: Map<string, Expr>): string {
    const dir = String(o.type ?? 'ASC').toUpperCase() === 'DESC' ? 'DESC' : 'ASC';
    const nulls = typeof o.nulls === 'string' ? o.nulls.toUpperCase() : null;
    // note: Postgres sorts NULLs last ascending and first descending; SQLite the reverse. Made explicit.
    const nullsSql = nulls === 'NULLS FIRST' ? ' NULLS FIRST' : nulls === 'NULLS LAST' ? ' NULLS LAST' : dir === 'ASC' ? ' NULLS LAST' : ' NULLS FIRST';
    return `${this.#orderExpr(o.expr as Node, scope, columns, aliases)} ${dir}${nullsSql}`;
  }

  #orderLimit(n: Node, sources: Source[], aliases: Map<string, Expr>, ordered = false, width: number | null = null): string {
    let sql = '';
    if (!ordered && Array.isArray(n.orderby) && n.orderby.length) {
      // note: only the count matters here (ORDER BY <position> is checked against it).
      const cols: ColumnType[] = Array.from({ length: width ?? 1000 }, () => ({ name: '', type: null }));
      sql += ` ORDER BY ${(n.orderby as Node[]).map((o) => this.#orderItem(o, sources, cols, aliases)).join(', ')}`;
    }
    const limit = n.limit as { seperator?: string; value?: Node[] } | undefined;
    if (limit?.value?.length) {
      const v = limit.value;
      if (limit.seperator === 'offset' && v.length === 2) sql += ` LIMIT ${this.#limitValue(v[0]!)} OFFSET ${this.#limitValue(v[1]!)}`;
      else if (limit.seperator === 'offset' && v.length === 1) sql += ` LIMIT -1 OFFSET ${this.#limitValue(v[0]!)}`;
      else if (v.length === 1) sql += ` LIMIT ${this.#limitValue(v[0]!)}`;
      else throw unsupported('this LIMIT form');
    }
    return sql;
  }

  #limitValue(v: Node): string {
    if (v.type === 'number' && Number.isInteger(Number(v.value)) && Number(v.value) >= 0) return String(Number(v.value));
    if (v.type === 'var') return `CAST(${this.expr(v, []).sql} AS INTEGER)`;
    if (v.type === 'null' || (v.type === 'origin' && String(v.value).toUpperCase() === 'ALL')) return '-1';
    throw unsupported('LIMIT/OFFSET other than a number or a parameter');
  }

  #star(e: Node, sources: Source[]): { sql: string; columns: ColumnType[] | null } {
    const t = e.table as unknown;
    const tname = typeof t === 'string' ? t : t ? String((t as Node).value ?? '') : null;
    const picked = tname ? sources.filter((s) => s.alias === tname.toLowerCase()) : sources;
    if (tname && picked.length === 0) throw new EdgeError('invalid_request', `missing FROM-clause entry for table "${tname}"`);
    if (sources.length === 0) throw new EdgeError('invalid_request', 'SELECT * with no tables specified is not valid');
    if (picked.every((s) => s.columns)) {
      const parts: string[] = [];
      const columns: ColumnType[] = [];
      for (const s of picked) {
        for (const c of s.columns!) {
          parts.push(`${quoteIdent(s.alias)}.${quoteIdent(c.name)} AS ${quoteIdent(c.name)}`);
          columns.push(c);
        }
      }
      return { sql: parts.join(', '), columns };
    }
    return { sql: tname ? `${quoteIdent(tname.toLowerCase())}.*` : '*', columns: null };
  }

  #from(items: Node[], outer: Source[]): { sql: string; sources: Source[] } {
    const sources: Source[] = [];
    let sql = '';
    items.forEach((it, i) => {
      this.#count();
      const { text, source } = this.#fromItem(it, outer);
      sources.push(source);
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
      if (it.on) sql += ` ON ${this.bool(it.on as Node, [...sources, ...outer])}`;
      else if (Array.isArray(it.using)) sql += ` USING (${(it.using as Node[]).map((u) => this.ident(String(u.value ?? u))).join(', ')})`;
    });
    return { sql, sources };
  }

  #fromItem(it: Node, outer: Source[]): { text: string; source: Source } {
    checkKeys(it, FROM_KEYS, 'a FROM item');
    // note: SQLite has no sampling: reading the whole table would be a silently different result.
    if (it.tablesample) throw unsupported('TABLESAMPLE');
    const asName = typeof it.as === 'string' ? it.as.toLowerCase() : null;
    if (it.expr && (it.expr as Node).ast) {
      if (!asName) throw unsupported('a subquery in FROM without an alias');
      const sub = this.select((it.expr as Node).ast as Node, outer);
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
    if (it.fn) return tableFunction(this, it.fn as Node, asName, Array.isArray(it.columns) ? (it.columns as string[]) : null, outer);
    if (it.type === 'expr' || it.expr) throw unsupported('this FROM item');
    if (typeof it.table !== 'string') throw unsupported('this FROM item');
    const plain = it.table.toLowerCase();
    if (!it.db) {
      for (let i = this.#ctes.length - 1; i >= 0; i--) {
        const scope = this.#ctes[i]!;
        if (scope.has(plain)) {
          const alias = asName ?? plain;
          return { text: `${quoteIdent(plain)}${asName ? ` AS ${quoteIdent(asName)}` : ''}`, source: { alias, columns: scope.get(plain) ?? null } };
        }
      }
    }
    const phys = this.physical(it.db, it.table, true);
    const alias = asName ?? plain;
    const ref = this.tableRef(phys);
    return { text: `${ref} AS ${quoteIdent(alias)}`, source: { alias, columns: this.columnsOf(phys) } };
  }

  // ---------------------------------------------------------------- expressions

  /** A boolean-valued expression (WHERE, ON, HAVING). */
  bool(n: Node, scope: Source[]): string {
    const e = this.expr(n, scope);
    if (e.type === 'unknown') return `pe_bool(${e.sql})`;
    return e.sql;
  }

  expr(n: Node, scope: Source[]): Expr {
    this.#count();
    if (this.#depth++ > MAX_DEPTH) throw unsupported('expressions nested deeper than 200 levels');
    try {
      return this.#expr(n, scope);
    } finally {
      this.#depth--;
    }
  }

  #expr(n: Node, scope: Source[]): Expr {
    if (!n || typeof n !== 'object') throw unsupported('this expression');
    checkKeys(n);
    const zone = atTimeZone(n);
    if (zone) return this.#functionCore('timezone', { type: 'function', args: { type: 'expr_list', value: [zone.zone, zone.of] } }, scope);
    if (n.collate) {
      // note: SQLite compares text byte by byte, which is Postgres' "C" collation: any other would order differently.
      const c = (n.collate as { collate?: { name?: { value?: unknown } } }).collate?.name?.value;
      if (typeof c !== 'string' || !['C', 'POSIX', 'default'].includes(c)) throw unsupported(`COLLATE ${String(c)} (text compares as in the "C" collation)`);
      return this.#expr({ ...n, collate: null }, scope);
    }
    if (Array.isArray(n.array_index) && n.array_index.length) return this.#subscript(n, scope);
    if (n.ast) return this.#subquery(n, scope);
    switch (n.type) {
      case 'column_ref':
        return this.#column(n, scope);
      case 'number': {
        const v = Number(n.value);
        if (!Number.isFinite(v)) throw unsupported('this number');
        const isInt = Number.isInteger(v) && !String(n.value).includes('.') && !/e/i.test(String(n.value));
        return { sql: isInt ? String(v) : String(n.value).includes('e') ? String(v) : String(n.value), type: isInt ? (Math.abs(v) > 2147483647 ? 'int8' : 'int4') : 'numeric', name: '?column?' };
      }
      case 'bigint': {
        const s = String(n.value);
        if (!/^-?\d+$/.test(s)) throw unsupported('this number');
        const b = BigInt(s);
        if (b > 9223372036854775807n || b < -9223372036854775808n) return { sql: String(Number(s)), type: 'numeric', name: '?column?' };
        return { sql: s, type: 'int8', name: '?column?' };
      }
      case 'single_quote_string':
        return { sql: quoteLiteral(String(n.value).replaceAll("''", "'")), type: 'unknown', name: '?column?' };
      case 'double_quote_string':
        return this.#column({ type: 'column_ref', column: String(n.value) }, scope);
      case 'null':
        return { sql: 'NULL', type: 'unknown', name: '?column?' };
      case 'bool':
        return { sql: n.value ? '1' : '0', type: 'bool', name: 'bool' };
      case 'var':
        return this.#param(n);
      case 'binary_expr':
        return this.#binary(n, scope);
      case 'unary_expr':
        return this.#unary(n, scope);
      case 'function':
        return this.#function(n, scope);
      case 'aggr_func':
        return this.#aggregate(n, scope);
      case 'window_func':
        return this.#windowFunc(n, scope);
      case 'cast':
        return this.#cast(n, scope);
      case 'case':
        return this.#case(n, scope);
      case 'extract':
        return this.#extract(n, scope);
      case 'interval':
        return this.#interval(n);
      case 'expr_list':
        if (Array.isArray(n.value) && n.value.length === 1) {
          const inner = this.expr(n.value[0] as Node, scope);
          return { ...inner, sql: `(${inner.sql})` };
        }
        throw unsupported('row values');
      case 'default':
        if (typeof n.value === 'string' && /^E'/i.test(n.value)) throw unsupported("E'' escape strings");
        throw unsupported(`this expression (${String(n.value)})`);
      case 'array': {
        // note: arrays here are text[] (JSON arrays of strings); ARRAY[…] of other element types is refused by name.
        const items = ((n.expr_list as Node | undefined)?.value as Node[] | undefined) ?? [];
        if (!items.length) throw new EdgeError('invalid_request', 'cannot determine type of empty array');
        const xs = items.map((x) => this.expr(x, scope));
        const other = xs.find((x) => x.type !== null && x.type !== 'unknown' && x.type !== 'text' && x.type !== 'uuid');
        if (other) throw unsupported(`ARRAY[…] of ${String(other.type)} (arrays here are text[])`);
        return { sql: `json_array(${xs.map((x) => (x.type === 'unknown' ? this.castTo(x, 'text').sql : x.sql)).join(', ')})`, type: 'text[]', name: 'array' };
      }
    }
    throw unsupported(`expression type ${String(n.type)}`);
  }

  #param(n: Node): Expr {
    if (this.native) throw unsupported('parameters in DDL');
    if (n.prefix !== '$' || typeof n.name !== 'number' || !Number.isInteger(n.name) || n.name < 1 || n.name > 1000) {
      throw unsupported('parameters other than $1…$1000');
    }
    this.params.add(n.name);
    return { sql: `\0P${n.name}\0`, type: 'unknown', name: '?column?' };
  }

  #subquery(n: Node, scope: Source[]): Expr {
    if (this.native) throw unsupported('subqueries in DDL');
    const sub = this.select(n.ast as Node, scope);
    return { sql: `(${sub.sql})`, type: sub.columns?.[0]?.type ?? null, name: sub.columns?.[0]?.name ?? '?column?' };
  }

  #resolve(table: string | null, name: string, scope: Source[]): { source: Source; type: PgType | null } | null {
    for (const s of scope) {
      if (table !== null && s.alias !== table) continue;
      if (s.columns === null) {
        if (table !== null) return { source: s, type: null };
        continue;
      }
      const c = s.columns.find((x) => x.name === name);
      if (c) return { source: s, type: c.type };
    }
    return null;
  }

  /** `arr[i]` of a `text[]` (1-based; NULL out of range, as in Postgres). Slices and other subscripts are refused. */
  #subscript(n: Node, scope: Source[]): Expr {
    const idx = n.array_index as Array<{ brackets?: boolean; index?: Node }>;
    if (idx.length !== 1 || !idx[0]!.brackets || !idx[0]!.index) throw unsupported('this subscript');
    const base = this.expr({ ...n, array_index: null }, scope);
    if (base.type !== 'text[]') throw unsupported(`subscripts of a ${String(base.type)} value (arrays here are text[])`);
    const i = this.coerce(this.expr(idx[0]!.index, scope), 'int8');
    return { sql: `(CASE WHEN ${i.sql} >= 1 THEN json_extract(${base.sql}, '$[' || (${i.sql} - 1) || ']') END)`, type: 'text', name: base.name };
  }

  #column(n: Node, scope: Source[]): Expr {
    if (n.column === '*') throw unsupported('* in this position');
    const name = columnName(n);
    const t = n.table as unknown;
    const table = typeof t === 'string' ? t.toLowerCase() : t ? String((t as Node).value ?? '').toLowerCase() : null;
    if (n.schema || (n as { db?: unknown }).db) throw unsupported('schema-qualified column references');
    const r = this.#resolve(table, name, scope);
    if (table !== null && !r && !scope.some((s) => s.alias === table)) {
      // note: `excluded.col` in ON CONFLICT, or a table the query does not name.
      if (table !== 'excluded') throw new EdgeError('invalid_request', `missing FROM-clause entry for table "${table}"`);
    }
    const sql = table !== null ? `${quoteIdent(table)}.${quoteIdent(name)}` : quoteIdent(name);
    if (this.#bare && this.#aggDepth === 0 && r && this.#coreSources.includes(r.source)) this.#bare.push({ alias: r.source.alias, name, sql });
    return { sql, type: r?.type ?? null, name };
  }

  /** Makes a value of unknown type (literal, parameter) the given type, as Postgres does from context. */
  coerce(e: Expr, to: PgType | null): Expr {
    if (!to || e.type === to || e.sql === 'NULL') return e;
    if (e.type !== 'unknown' && !(to === 'jsonb' && e.type === 'json')) {
      if (to === 'timestamptz' && e.type === 'timestamp' && e.iso) return { ...e, type: to };
      if (to === 'timestamptz' && (e.type === 'timestamp' || e.type === 'date')) return { ...e, sql: this.#fn('pe_ts', e.sql), type: to };
      return e;
    }
    return this.castTo(e, to);
  }

  #fn(name: string, ...args: string[]): string {
    if (this.native) throw unsupported(`this expression in DDL (${name.replace(/^pe_/, '')})`);
    // note: a conversion of a bare parameter is applied to the value when it is bound (the same
    // function, in translate.ts), as Postgres types a parameter at bind time: no SQL callback.
    const param = args.length === 1 && BIND_CONVERSIONS.has(name) ? /^\0P(\d+)\0$/.exec(args[0]!) : null;
    if (param) return `\0P${param[1]}:${name}\0`;
    return `${name}(${args.join(', ')})`;
  }

  /** `e::to`. */
  castTo(e: Expr, to: PgType): Expr {
    const r = (sql: string): Expr => ({ sql, type: to, name: e.name === '?column?' ? typeLabel(to) : e.name });
    if (e.sql === 'NULL') return r('NULL');
    switch (to) {
      case 'int4':
      case 'int8':
        if (e.type === 'int4' || e.type === 'int8') return r(e.sql);
        if (e.type === 'bool') return r(e.sql);
        return r(this.#fn('pe_int', e.sql));
      case 'float8':
      case 'numeric':
        if (e.type === 'int4' || e.type === 'int8' || e.type === 'float8' || e.type === 'numeric') return r(`CAST(${e.sql} AS REAL)`);
        return r(this.#fn('pe_float', e.sql));
      case 'text':
        if (e.type === 'bool') return r(`CASE WHEN ${e.sql} IS NULL THEN NULL WHEN ${e.sql} THEN 'true' ELSE 'false' END`);
        if (e.type === 'timestamptz') return r(this.#fn('pe_ts_text', e.sql));
        if (e.type === 'float8' || e.type === 'numeric') return r(this.#fn('pe_float_text', e.sql));
        return r(`CAST(${e.sql} AS TEXT)`);
      case 'bool':
        if (e.type === 'bool') return r(e.sql);
        if (e.type === 'int4' || e.type === 'int8') return r(`(${e.sql} <> 0)`);
        if (this.native && /^'(t|true|f|false)'$/i.test(e.sql)) return r(/^'t/i.test(e.sql) ? '1' : '0');
        return r(this.#fn('pe_bool', e.sql));
      case 'timestamptz':
      case 'timestamp':
        if (e.type === 'timestamptz' || e.type === 'timestamp') return r(e.sql);
        return r(this.#fn('pe_ts', e.sql));
      case 'date':
        return r(this.#fn('pe_date', e.sql));
      case 'jsonb':
      case 'json':
        if (e.type === 'jsonb' || e.type === 'json') return r(e.sql);
        if (this.native) {
          const lit = literalText(e.sql);
          if (lit === null) throw unsupported('non-literal JSON in DDL');
          try {
            return r(quoteLiteral(JSON.stringify(JSON.parse(lit))));
          } catch {
            throw new EdgeError('invalid_request', 'invalid input syntax for type json');
          }
        }
        if (e.type === 'unknown' || e.type === 'text') return r(this.#fn('pe_jsonb', e.sql));
        throw unsupported(`cast from ${String(e.type)} to ${to}`);
      case 'uuid':
        if (e.type === 'uuid') return r(e.sql);
        return r(this.#fn('pe_uuid', e.sql));
      case 'text[]':
        if (e.type === 'text[]') return r(e.sql);
        if (this.native) {
          const lit = literalText(e.sql);
          if (lit === '{}') return r(`'[]'`);
          throw unsupported('non-empty array literals in DDL');
        }
        return r(this.#fn('pe_text_array', e.sql));
      case 'interval':
        if (e.type === 'unknown' && literalText(e.sql) !== null) return { sql: e.sql, type: 'interval', name: 'interval' };
        throw unsupported('interval values other than literals');
      case 'bytea':
        throw unsupported('casts to bytea');
    }
    throw unsupported(`cast to ${to}`);
  }

  #cast(n: Node, scope: Source[]): Expr {
    const tail = n.tail as { operator?: string; expr?: Node } | undefined;
    if (tail?.operator) {
      // note: `a::t + b` arrives as the cast with the rest of the expression in `tail`.
      return this.expr({ type: 'binary_expr', operator: tail.operator, left: { ...n, tail: undefined }, right: tail.expr }, scope);
    }
    const target = (n.target as Node[] | undefined)?.[0];
    if (!target || (n.target as Node[]).length !== 1) throw unsupported('this cast');
    const typeName = typeNameOf(target);
    const to = pgTypeOf(typeName);
    if (!to) throw unsupported(`type ${typeName.toLowerCase()}`);
    const e = this.expr(n.expr as Node, scope);
    return this.#typmod(this.castTo(e, to), target);
  }

  /**
   * What a cast's type modifier does in Postgres, which SQLite's types do not: `varchar(n)`
   * truncates to n characters, `char(n)` (n = 1 without one) truncates and pads with blanks,
   * `numeric(p, s)` rounds to s places and fails past p digits ("numeric field overflow").
   */
  #typmod(e: Expr, target: Node): Expr {
    const dt = String(target.dataType ?? '').toUpperCase().replace(/\s+/g, ' ');
    const len = typeof target.length === 'number' ? target.length : null;
    if (e.sql === 'NULL') return e;
    if ((dt === 'VARCHAR' || dt === 'CHARACTER VARYING') && len !== null) return { ...e, sql: `substr(${e.sql}, 1, ${len})` };
    if (dt === 'CHAR' || dt === 'CHARACTER') {
      const n = len ?? 1;
      return { ...e, sql: `(CASE WHEN ${e.sql} IS NULL THEN NULL ELSE printf('%-!${n}.${n}s', ${e.sql}) END)` };
    }
    if ((dt === 'NUMERIC' || dt === 'DECIMAL') && len !== null) {
      const scale = typeof target.scale === 'number' ? target.scale : 0;
      const rounded = `round(${e.sql}, ${scale})`;
      return { ...e, sql: this.#fn('pe_numeric_fits', rounded, String(len - scale)) };
    }
    return e;
  }

  #interval(n: Node): Expr {
    const e = n.expr as Node;
    if (e?.type !== 'single_quote_string') throw unsupported('interval values other than literals');
    const unit = typeof n.unit === 'string' && n.unit ? ` ${n.unit}` : '';
    return { sql: quoteLiteral(String(e.value).replaceAll("''", "'") + unit), type: 'interval', name: 'interval' };
  }

  #binary(n: Node, scope: Source[]): Expr {
    const op = String(n.operator).toUpperCase();
    const left = n.left as Node;
    const right = n.right as Node;
    if (op === 'AND' || op === 'OR') {
      return { sql: `(${this.bool(left, scope)} ${op} ${this.bool(right, scope)})`, type: 'bool', name: '?column?' };
    }
    const catalogued = this.#catalogOperator(op, left, right, scope);
    if (catalogued) return catalogued;
    if (op === 'IN' || op === 'NOT IN') {
      const l = this.expr(left, scope);
      const items = right.value as Node[] | undefined;
      if (right.type !== 'expr_list' || !Array.isArray(items) || items.length === 0) throw unsupported('this IN form');
      if (items.length === 1 && items[0]!.ast) {
        const sub = this.select(items[0]!.ast as Node, scope);
        return { sql: `(${l.sql} ${op} (${sub.sql}))`, type: 'bool', name: '?column?' };
      }
      const vals = items.map((v) => this.coerce(this.expr(v, scope), l.type === 'unknown' ? null : l.type).sql);
      return { sql: `(${l.sql} ${op} (${vals.join(', ')}))`, type: 'bool', name: '?column?' };
    }
    if (op === 'BETWEEN' || op === 'NOT BETWEEN') {
      const l = this.expr(left, scope);
      const [a, b] = (right.value as Node[]).map((v) => this.coerce(this.expr(v, scope), l.type === 'unknown' ? null : l.type));
      return { sql: `(${l.sql} ${op} ${a!.sql} AND ${b!.sql})`, type: 'bool', name: '?column?' };
    }
    if (op === 'IS' || op === 'IS NOT') {
      const l = this.expr(left, scope);
      const not = op === 'IS NOT' ? ' NOT' : '';
      if (right.type === 'null') return { sql: `(${l.sql} IS${not} NULL)`, type: 'bool', name: '?column?' };
      if (right.type === 'bool') return { sql: `(${l.sql} IS${not} ${right.value ? '1' : '0'})`, type: 'bool', name: '?column?' };
      // note: node-sql-parser reads `IS DISTINCT FROM x` as a text that no longer says whether x was a literal or a name.
      if (right.type === 'default' && /^distinct\s+from/i.test(String(right.value))) throw unsupported('IS DISTINCT FROM (write a <> b OR (a IS NULL) <> (b IS NULL))');
      throw unsupported(`IS${not} with this operand`);
    }
    if (op === 'IS DISTINCT FROM' || op === 'IS NOT DISTINCT FROM') {
      const [l, r] = this.#pair(left, right, scope);
      return { sql: `(${l.sql} ${op === 'IS DISTINCT FROM' ? 'IS NOT' : 'IS'} ${r.sql})`, type: 'bool', name: '?column?' };
    }
    if (op === 'LIKE' || op === 'NOT LIKE' || op === 'ILIKE' || op === 'NOT ILIKE') {
      const l = this.expr(left, scope);
      const r = this.expr(right, scope);
      if (right.type === 'binary_expr' && String(right.operator).toUpperCase() === 'ESCAPE') throw unsupported('LIKE … ESCAPE');
      const like = this.#fn('pe_like', l.sql, r.sql, op.includes('ILIKE') ? '1' : '0');
      return { sql: op.startsWith('NOT') ? `(NOT ${like})` : like, type: 'bool', name: '?column?' };
    }
    if (COMPARE.has(op) && right.type === 'function') {
      const q = callName(right).name;
      if (q === 'any' || q === 'some' || q === 'all') return this.#quantified(op === '!=' ? '<>' : op, left, right, q === 'all', scope);
    }
    if (COMPARE.has(op)) {
      const [l, r] = this.#pair(left, right, scope);
      if ((l.type === 'jsonb' || r.type === 'jsonb') && op !== '=' && op !== '<>' && op !== '!=') throw unsupported('ordering comparisons of jsonb');
      return { sql: `(${l.sql} ${op === '!=' ? '<>' : op} ${r.sql})`, type: 'bool', name: '?column?' };
    }
    if (op === '||') {
      const l = this.expr(left, scope);
      const r = this.expr(right, scope);
      if (l.type === 'jsonb' || r.type === 'jsonb' || l.type === 'text[]' || r.type === 'text[]') throw unsupported('|| on jsonb or arrays');
      return { sql: `(${this.#textOf(l)} || ${this.#textOf(r)})`, type: 'text', name: '?column?' };
    }
    if (op === '->' || op === '->>') {
      const l = this.expr(left, scope);
      const r = this.expr(right, scope);
      this.#jsonOperand(l, op);
      const key = r.type === 'int4' || r.type === 'int8' ? r.sql : r.sql;
      return { sql: this.#fn(op === '->' ? 'pe_jget' : 'pe_jgett', l.sql, key), type: op === '->' ? 'jsonb' : 'text', name: op === '->' ? '?column?' : '?column?' };
    }
    if (op === '#>' || op === '#>>') {
      const l = this.expr(left, scope);
      const r = this.expr(right, scope);
      this.#jsonOperand(l, op);
      return { sql: this.#fn(op === '#>' ? 'pe_jpath' : 'pe_jpatht', l.sql, r.sql), type: op === '#>' ? 'jsonb' : 'text', name: '?column?' };
    }
    if (op === '@>' || op === '<@') {
      const l = this.coerce(this.expr(left, scope), 'jsonb');
      const r = this.coerce(this.expr(right, scope), 'jsonb');
      if (l.type !== 'jsonb' || r.type !== 'jsonb') throw unsupported(`${op} on non-jsonb values`);
      const [a, b] = op === '@>' ? [l, r] : [r, l];
      return { sql: this.#fn('pe_jcontains', a.sql, b.sql), type: 'bool', name: '?column?' };
    }
    if (op === '?' || op === '?|' || op === '?&') {
      const l = this.expr(left, scope);
      const r = this.expr(right, scope);
      this.#jsonOperand(l, op);
      const f = op === '?' ? 'pe_jexists' : op === '?|' ? 'pe_jexists_any' : 'pe_jexists_all';
      return { sql: this.#fn(f, l.sql, r.sql), type: 'bool', name: '?column?' };
    }
    if (ARITH.has(op)) return this.#arith(op, left, right, scope);
    throw unsupported(`operator ${op}`);
  }

  /**
   * `x op ANY|SOME|ALL (array)`, with Postgres' three-valued result. An `ARRAY[…]` list becomes
   * the comparisons ORed (ANY) or ANDed (ALL), which is exactly that; an array known only when
   * the statement runs — a parameter (a JSON array, or a Postgres array literal '{a,b}') or a
   * `text[]` column — is read with json_each, its elements typed as x (as Postgres types an
   * untyped array by the comparison): ANY is true if some comparison is, else NULL if some
   * is NULL, else false (an empty array: false); ALL is false if some comparison is, else
   * NULL if some is NULL, else true.
   */
  #quantified(op: string, left: Node, right: Node, all: boolean, scope: Source[]): Expr {
    const kw = all ? 'ALL' : 'ANY';
    const args = this.#args(right);
    if (args.length !== 1) throw new EdgeError('invalid_request', `${kw} takes one array`);
    const arg = args[0]!;
    if (arg.ast) throw unsupported(`${kw} (subquery): write IN (subquery) or EXISTS`);
    const r = (sql: string): Expr => ({ sql, type: 'bool', name: all ? 'all' : 'any' });
    if (arg.type === 'array') {
      const items = ((arg.expr_list as Node | undefined)?.value as Node[] | undefined) ?? [];
      if (!items.length) throw new EdgeError('invalid_request', 'cannot determine type of empty array');
      const cmps = items.map((item) => {
        const [l, e] = this.#pair(left, item, scope);
        return `${l.sql} ${op} ${e.sql}`;
      });
      return r(`(${cmps.join(all ? ' AND ' : ' OR ')})`);
    }
    if (this.native) throw unsupported(`${kw} over a run-time array in DDL (write ARRAY[…] or IN (…))`);
    const l = this.expr(left, scope);
    let a = this.expr(arg, scope);
    if (a.type === 'unknown') a = this.coerce(a, 'text[]');
    if (a.type !== 'text[]') throw unsupported(`${kw} over a ${String(a.type)} value (arrays here are text[] columns, parameters and ARRAY[…])`);
    const el = this.coerce({ sql: '"pe_el"."pe_v"', type: 'unknown', name: 'value' }, l.type === 'unknown' ? null : l.type);
    const cmp = `(${l.sql} ${op} ${el.sql})`;
    // note: json_each's own columns (id, key, value, …) are renamed away, so x's unqualified columns stay x's.
    const some = (cond: string) => `EXISTS (SELECT 1 FROM (SELECT "value" AS "pe_v" FROM json_each(${a.sql})) AS "pe_el" WHERE ${cond})`;
    return all
      ? r(`(CASE WHEN ${a.sql} IS NULL THEN NULL WHEN ${some(`NOT ${cmp}`)} THEN 0 WHEN ${some(`${cmp} IS NULL`)} THEN NULL ELSE 1 END)`)
      : r(`(CASE WHEN ${a.sql} IS NULL THEN NULL WHEN ${some(cmp)} THEN 1 WHEN ${some(`${cmp} IS NULL`)} THEN NULL ELSE 0 END)`);
  }

  #jsonOperand(e: Expr, op: string): void {
    if (e.type !== 'jsonb' && e.type !== 'json' && e.type !== null) throw unsupported(`${op} on a ${String(e.type)} value`);
  }

  #textOf(e: Expr): string {
    if (e.type === 'bool' || e.type === 'timestamptz' || e.type === 'float8' || e.type === 'numeric') return this.castTo(e, 'text').sql;
    return e.sql;
  }

  /** Two operands of a comparison, a literal side typed from the other side. */
  #pair(left: Node, right: Node, scope: Source[]): [Expr, Expr] {
    let l = this.expr(left, scope);
    let r = this.expr(right, scope);
    if (l.type === 'unknown' && r.type && r.type !== 'unknown') l = this.coerce(l, r.type);
    else if (r.type === 'unknown' && l.type && l.type !== 'unknown') r = this.coerce(r, l.type);
    else if (l.type === 'timestamptz' && (r.type === 'date' || r.type === 'timestamp')) r = this.coerce(r, 'timestamptz');
    else if (r.type === 'timestamptz' && (l.type === 'date' || l.type === 'timestamp')) l = this.coerce(l, 'timestamptz');
    return [l, r];
  }

  #arith(op: string, left: Node, right: Node, scope: Source[]): Expr {
    let l = this.expr(left, scope);
    let r = this.expr(right, scope);
    const isTs = (t: PgType | null) => t === 'timestamptz' || t === 'timestamp' || t === 'date';
    if (r.type === 'unknown' && isTs(l.type) && (op === '+' || op === '-')) r = this.castTo(r, 'interval');
    if ((op === '+' || op === '-') && isTs(l.type) && r.type === 'interval') {
      const base = l.type === 'date' ? this.#fn('pe_ts', l.sql) : l.sql;
      return { sql: this.#fn('pe_ts_add', base, r.sql, op === '+' ? '1' : '-1'), type: 'timestamptz', name: '?column?' };
    }
    if (op === '+' && l.type === 'interval' && isTs(r.type)) {
      return { sql: this.#fn('pe_ts_add', r.sql, l.sql, '1'), type: 'timestamptz', name: '?column?' };
    }
    if (l.type === 'interval' || r.type === 'interval' || isTs(l.type) || isTs(r.type)) throw unsupported(`${op} on dates and intervals other than timestamptz ± interval`);
    if (l.type === 'unknown') l = this.castTo(l, r.type === 'float8' || r.type === 'numeric' ? 'float8' : 'int8');
    if (r.type === 'unknown') r = this.castTo(r, l.type === 'float8' || l.type === 'numeric' ? 'float8' : 'int8');
    const isNum = (t: PgType | null) => t === null || t === 'int4' || t === 'int8' || t === 'float8' || t === 'numeric';
    if (!isNum(l.type) || !isNum(r.type)) throw unsupported(`${op} on ${String(l.type)} and ${String(r.type)}`);
    const type: PgType | null =
      l.type === null || r.type === null
        ? null
        : l.type === 'float8' || r.type === 'float8'
          ? 'float8'
          : l.type === 'numeric' || r.type === 'numeric'
            ? 'numeric'
            : l.type === 'int8' || r.type === 'int8'
              ? 'int8'
              : 'int4';
    if (op === '/' || op === '%') {
      // note: Postgres raises on division by zero; SQLite returns NULL. Made to raise.
      const div = `(CASE WHEN ${r.sql} = 0 THEN ${this.native ? 'NULL' : this.#fn('pe_error', "'division by zero'")} ELSE ${r.sql} END)`;
      if (op === '%' && (type === 'float8' || type === 'numeric')) throw unsupported('% on non-integers');
      return { sql: `(${l.sql} ${op} ${div})`, type, name: '?column?' };
    }
    return { sql: `(${l.sql} ${op} ${r.sql})`, type, name: '?column?' };
  }

  #unary(n: Node, scope: Source[]): Expr {
    const op = String(n.operator).toUpperCase();
    if (op === 'NOT') return { sql: `(NOT ${this.bool(n.expr as Node, scope)})`, type: 'bool', name: '?column?' };
    if (op === '-') {
      const e = this.expr(n.expr as Node, scope);
      return { sql: `(- ${e.sql})`, type: e.type, name: '?column?' };
    }
    if (op === '+') return this.expr(n.expr as Node, scope);
    if (op === 'NOT EXISTS' || op === 'EXISTS') {
      const sub = n.expr as Node;
      if (!sub?.ast) throw unsupported(`${op} without a subquery`);
      const sql = `EXISTS (${this.select(sub.ast as Node, scope).sql})`;
      return { sql: op === 'NOT EXISTS' ? `(NOT ${sql})` : sql, type: 'bool', name: 'exists' };
    }
    throw unsupported(`unary operator ${op}`);
  }

  #args(n: Node): Node[] {
    const a = n.args as { value?: Node[]; type?: string } | Node[] | undefined;
    if (!a) return [];
    if (Array.isArray(a)) return a;
    return a.value ?? [];
  }

  #function(n: Node, scope: Source[]): Expr {
    const { schema, name, written } = callName(n);
    if (schema === 'auth') return this.#auth(name, n);
    if (schema && schema !== 'pg_catalog') throw unsupported(`function ${written}`);
    if (AGGREGATES.has(name)) {
      const args = this.#args(n);
      if (args.length !== 1) throw new EdgeError('invalid_request', `${name}() takes one argument`);
      return this.#aggregate({ type: 'aggr_func', name, args: { expr: args[0] }, over: n.over }, scope);
    }
    if (n.over && ['row_number', 'rank', 'dense_rank', 'ntile', 'lag', 'lead', 'first_value', 'last_value', 'percent_rank', 'cume_dist'].includes(name)) {
      return this.#windowFunc({ ...n, name }, scope);
    }
    if (n.over) return this.#windowed(name, this.#functionCore(name, n, scope), n, scope);
    return this.#functionCore(name, n, scope);
  }

  /**
   * `auth.uid()`, `auth.role()`, `auth.jwt()` (Supabase's): the caller's user id, role and
   * token claims, bound per call (`\0A<name>\0`), so a cached translation serves every caller.
   * Not in DDL: a stored default or check cannot name whoever writes later.
   */
  #auth(name: string, n: Node): Expr {
    const types: Record<string, PgType> = { uid: 'uuid', role: 'text', jwt: 'jsonb' };
    const type = types[name];
    if (!type) throw unsupported(`function auth.${name} (auth.uid(), auth.role() and auth.jwt() are)`);
    if (this.#args(n).length !== 0) throw new EdgeError('invalid_request', `function auth.${name} takes no arguments`);
    if (this.native) throw unsupported(`auth.${name}() in DDL (a stored default or check cannot name the caller)`);
    return { sql: `\0A${name}\0`, type, name };
  }

  #functionCore(name: string, n: Node, scope: Source[]): Expr {
    const args = this.#args(n);
    const a = (i: number): Expr => {
      const x = args[i];
      if (!x) throw new EdgeError('invalid_request', `function ${name} needs more arguments`);
      return this.expr(x, scope);
    };
    const arity = (min: number, max = min) => {
      if (args.length < min || args.length > max) throw new EdgeError('invalid_request', `function ${name} takes ${min === max ? min : `${min} to ${max}`} arguments`);
    };
    const r = (sql: string, type: PgType | null): Expr => ({ sql, type, name });
    const cat = Object.hasOwn(FUNCTIONS, name) ? FUNCTIONS[name]! : null;
    if (cat) return this.#catalogCall(name, cat, args, scope);
    switch (name) {
      case 'now':
      case 'current_timestamp':
      case 'transaction_timestamp':
      case 'statement_timestamp':
      case 'localtimestamp':
        arity(0);
        return r(`(${NOW})`, 'timestamptz');
      case 'current_date':
        return r(`date('now')`, 'date');
      case 'gen_random_uuid':
      case 'uuid_generate_v4':
        arity(0);
        return r(`(${UUID_V4})`, 'uuid');
      case 'exists': {
        const sub = args[0];
        if (!sub?.ast) throw unsupported('EXISTS without a subquery');
        return r(`EXISTS (${this.select(sub.ast as Node, scope).sql})`, 'bool');
      }
      case 'not': {
        arity(1);
        return r(`(NOT ${this.bool(args[0]!, scope)})`, 'bool');
      }
      case 'coalesce': {
        if (args.length < 1) throw new EdgeError('invalid_request', 'coalesce needs arguments');
        const xs = args.map((x) => this.expr(x, scope));
        const t = xs.find((x) => x.type && x.type !== 'unknown')?.type ?? 'unknown';
        const ys = xs.map((x) => this.coerce(x, t === 'unknown' ? null : t).sql);
        return r(ys.length === 1 ? ys[0]! : `coalesce(${ys.join(', ')})`, t);
      }
      case 'nullif': {
        arity(2);
        const [x, y] = this.#pair(args[0]!, args[1]!, scope);
        return r(`nullif(${x.sql}, ${y.sql})`, x.type);
      }
      case 'greatest':
      case 'least': {
        const xs = args.map((x) => this.expr(x, scope));
        const t = xs.find((x) => x.type && x.type !== 'unknown')?.type ?? 'unknown';
        return r(this.#fn(name === 'greatest' ? 'pe_greatest' : 'pe_least', ...xs.map((x) => this.coerce(x, t === 'unknown' ? null : t).sql)), t);
      }
      case 'trim':
      case 'btrim':
      case 'ltrim':
      case 'rtrim': {
        arity(1, 2);
        const f = name === 'btrim' ? 'trim' : name;
        return r(`${f}(${args.map((_, i) => a(i).sql).join(', ')})`, 'text');
      }
      case 'substr':
      case 'substring': {
        arity(2, 3);
        return r(`substr(${args.map((_, i) => a(i).sql).join(', ')})`, 'text');
      }
      case 'left': {
        arity(2);
        return r(`substr(${a(0).sql}, 1, ${a(1).sql})`, 'text');
      }
      case 'concat': {
        const xs = args.map((x) => this.expr(x, scope));
        return r(xs.length ? `(${xs.map((x) => `coalesce(${this.#textOf(x)}, '')`).join(' || ')})` : `''`, 'text');
      }
      case 'abs':
        arity(1);
        return r(`abs(${a(0).sql})`, a(0).type);
      case 'round': {
        arity(1, 2);
        const x = a(0);
        if (args.length === 1) return r(`round(${x.sql})`, x.type === 'int4' || x.type === 'int8' ? x.type : x.type === 'numeric' ? 'numeric' : 'float8');
        return r(`round(${x.sql}, ${a(1).sql})`, 'numeric');
      }
      case 'ceil':
      case 'ceiling':
        arity(1);
        return r(`ceil(${a(0).sql})`, a(0).type === 'int4' || a(0).type === 'int8' ? a(0).type : 'float8');
      case 'floor':
        arity(1);
        return r(`floor(${a(0).sql})`, a(0).type === 'int4' || a(0).type === 'int8' ? a(0).type : 'float8');
      case 'timezone': {
        // note: `timezone('utc', now())` (Supabase's default for timestamps) is the UTC wall time; the session
        // time zone is UTC and timestamps are stored in UTC, so only UTC is exact here: any other zone is refused.
        arity(2);
        let z = args[0]!;
        while (z.type === 'cast') z = z.expr as Node;
        const zone = z.type === 'single_quote_string' || z.type === 'string' ? String(z.value) : null;
        if (zone === null || !UTC_ZONES.has(zone.toLowerCase())) throw unsupported('timezone() with a zone other than UTC');
        const ts = a(1);
        if (ts.type !== 'timestamptz' && ts.type !== 'timestamp') throw unsupported(`timezone() of a ${ts.type ?? 'value'} (a timestamp is expected)`);
        // note: timestamptz → its UTC wall time (timestamp), timestamp → read as UTC (timestamptz): the same stored text.
        return { ...r(ts.sql, ts.type === 'timestamptz' ? 'timestamp' : 'timestamptz'), iso: ts.type === 'timestamptz' };
      }
      case 'date_trunc': {
        arity(2);
        const ts = this.coerce(a(1), 'timestamptz');
        return r(this.#fn('pe_date_trunc', a(0).sql, ts.sql), 'timestamptz');
      }
      case 'jsonb_build_object':
      case 'json_build_object': {
        if (args.length % 2) throw new EdgeError('invalid_request', 'argument list must have even number of elements');
        const xs = args.map((x, i) => (i % 2 ? this.#jsonValue(this.expr(x, scope)) : this.#textOf(this.expr(x, scope))));
        return r(name.startsWith('jsonb') ? this.#fn('pe_jsonb', `json_object(${xs.join(', ')})`) : `json_object(${xs.join(', ')})`, name.startsWith('jsonb') ? 'jsonb' : 'json');
      }
      case 'jsonb_build_array':
      case 'json_build_array': {
        const xs = args.map((x) => this.#jsonValue(this.expr(x, scope)));
        return r(`json_array(${xs.join(', ')})`, name.startsWith('jsonb') ? 'jsonb' : 'json');
      }
      case 'to_jsonb':
      case 'to_json': {
        arity(1);
        if (args[0]!.type === 'column_ref' && (args[0]!.column === '*' || !this.#resolve(null, columnName(args[0]!), scope))) throw unsupported(`${name} of a whole row`);
        return r(this.#jsonValue(a(0)), name === 'to_jsonb' ? 'jsonb' : 'json');
      }
      case 'jsonb_typeof':
      case 'json_typeof':
        arity(1);
        return r(this.#fn('pe_jtypeof', a(0).sql), 'text');
      case 'jsonb_array_length':
      case 'json_array_length':
        arity(1);
        return r(this.#fn('pe_jarray_length', a(0).sql), 'int4');
      case 'md5':
      case 'random':
        throw unsupported(`function ${name}`);
    }
    throw unsupported(`function ${name}()`);
  }

  /** A call of a catalog function (catalog/): arity, arguments coerced to its signature, its SQLite. */
  #catalogCall(name: string, cat: CatalogFunction, args: Node[], scope: Source[]): Expr {
    const [min, max] = cat.arity;
    if (args.length < min || args.length > max) throw new EdgeError('invalid_request', `function ${name} takes ${min === max ? min : max === Infinity ? `at least ${min}` : `${min} to ${max}`} arguments`);
    if (cat.registered && this.native) throw unsupported(`${name}() in DDL`);
    const sig = cat.args ?? [];
    const xs = args.map((x, i) => {
      const e = this.expr(x, scope);
      const t = sig.length ? sig[Math.min(i, sig.length - 1)]! : null;
      const c = this.coerce(e, t);
      return { sql: c.sql, type: c.type };
    });
    const out = cat.emit(xs);
    return { sql: out.sql, type: out.type, name };
  }

  /** An operator of the catalog (catalog/everyday.ts), or null when it defines none for these operands. */
  #catalogOperator(op: string, left: Node, right: Node, scope: Source[]): Expr | null {
    if (!OPERATORS.has(op)) return null;
    const [l, r] = this.#pair(left, right, scope);
    const cat = operatorFor(op, l.type, r.type);
    if (!cat) return null;
    if (cat.registered && this.native) throw unsupported(`the operator ${op} in DDL`);
    const a = this.coerce(l, cat.args[0]);
    const b = this.coerce(r, cat.args[1]);
    const out = cat.emit({ sql: a.sql, type: a.type }, { sql: b.sql, type: b.type });
    return { sql: out.sql, type: out.type, name: '?column?' };
  }

  /** A value as a JSON argument of json_object/json_array: booleans and JSON stay typed. */
  #jsonValue(e: Expr): string {
    if (e.type === 'bool') return `CASE WHEN ${e.sql} IS NULL THEN NULL WHEN ${e.sql} THEN json('true') ELSE json('false') END`;
    if (e.type === 'jsonb' || e.type === 'json' || e.type === 'text[]') return `json(${e.sql})`;
    if (e.type === 'timestamptz') return this.#fn('pe_ts_json', e.sql);
    return e.sql;
  }

  #aggregate(n: Node, scope: Source[]): Expr {
    if (n.over) return this.#aggregateCore(n, scope);
    this.#sawAgg = true;
    this.#aggDepth++;
    try {
      return this.#aggregateCore(n, scope);
    } finally {
      this.#aggDepth--;
    }
  }

  #aggregateCore(n: Node, scope: Source[]): Expr {
    const name = String(n.name).toLowerCase();
    const args = (n.args ?? {}) as { expr?: Node; distinct?: string; orderby?: Node[]; separator?: { delimiter?: Node } };
    const distinct = args.distinct ? 'DISTINCT ' : '';
    if (args.orderby && name !== 'string_agg' && name !== 'jsonb_agg' && name !== 'array_agg' && name !== 'json_agg') throw unsupported(`ORDER BY inside ${name}()`);
    // note: SQLite has FILTER (WHERE …) on every aggregate, as Postgres.
    const filterNode = (n as { filter?: Node | null }).filter;
    const f = filterNode ? ` FILTER (WHERE ${this.bool(filterNode, scope)})` : '';
    const order = args.orderby?.length ? ` ORDER BY ${args.orderby.map((o) => this.#orderItem(o, scope, [], new Map())).join(', ')}` : '';
    let out: Expr;
    if (name === 'count') {
      const e = args.expr;
      if (!e || e.type === 'star') out = { sql: `count(*)${f}`, type: 'int8', name: 'count' };
      else out = { sql: `count(${distinct}${this.expr(e, scope).sql})${f}`, type: 'int8', name: 'count' };
    } else {
      if (!args.expr) throw new EdgeError('invalid_request', `${name}() needs an argument`);
      const x = this.expr(args.expr, scope);
      switch (name) {
        case 'sum':
          out = { sql: `sum(${distinct}${x.sql})${f}`, type: x.type === 'int4' || x.type === 'int8' ? 'int8' : x.type === 'float8' ? 'float8' : 'numeric', name };
          break;
        case 'avg':
          out = { sql: `avg(${distinct}${x.sql})${f}`, type: x.type === 'float8' ? 'float8' : 'numeric', name };
          break;
        case 'min':
        case 'max':
          if (x.type === 'jsonb' || x.type === 'bool') throw unsupported(`${name}() of ${x.type}`);
          out = { sql: `${name}(${distinct}${x.sql})${f}`, type: x.type, name };
          break;
        case 'bool_and':
        case 'every':
          out = { sql: `min(${distinct}${x.sql})${f}`, type: 'bool', name };
          break;
        case 'bool_or':
          out = { sql: `max(${distinct}${x.sql})${f}`, type: 'bool', name };
          break;
        case 'string_agg': {
          const sep = args.separator?.delimiter;
          if (!sep) throw new EdgeError('invalid_request', 'string_agg needs a delimiter');
          const d = this.expr(sep, scope);
          if (distinct && order) throw unsupported('string_agg(DISTINCT … ORDER BY …)');
          out = { sql: `group_concat(${distinct}${this.#textOf(x)}, ${d.sql}${order})${f}`, type: 'text', name };
          break;
        }
        case 'jsonb_agg':
        case 'json_agg':
        case 'array_agg':
          if (x.type === null && args.expr.type === 'column_ref' && !this.#resolve(null, columnName(args.expr), scope)) throw unsupported(`${name} of a whole row`);
          out = {
            sql: `CASE WHEN count(*)${f} = 0 THEN NULL ELSE json_group_array(${distinct}${this.#jsonValue(x)}${order})${f} END`,
            type: name === 'array_agg' ? (x.type === 'text' || x.type === 'unknown' ? 'text[]' : 'jsonb') : name === 'json_agg' ? 'json' : 'jsonb',
            name,
          };
          if (name === 'array_agg' && out.type !== 'text[]') throw unsupported('array_agg of non-text values');
          break;
        default:
          throw unsupported(`aggregate ${name}()`);
      }
    }
    if (n.over) return this.#windowed(name, out, n, scope);
    return out;
  }

  #windowFunc(n: Node, scope: Source[]): Expr {
    const name = String(n.name).toLowerCase();
    const args = this.#args(n).map((x) => this.expr(x, scope));
    let e: Expr;
    switch (name) {
      case 'row_number':
      case 'rank':
      case 'dense_rank':
        e = { sql: `${name}()`, type: 'int8', name };
        break;
      case 'ntile':
        e = { sql: `ntile(${args[0]?.sql ?? 'NULL'})`, type: 'int4', name };
        break;
      case 'lag':
      case 'lead':
      case 'first_value':
      case 'last_value':
        e = { sql: `${name}(${args.map((x) => x.sql).join(', ')})`, type: args[0]?.type ?? null, name };
        break;
      case 'percent_rank':
      case 'cume_dist':
        e = { sql: `${name}()`, type: 'float8', name };
        break;
      default:
        throw unsupported(`window function ${name}()`);
    }
    return this.#windowed(name, e, n, scope);
  }

  #windowed(_name: string, e: Expr, n: Node, scope: Source[]): Expr {
    const over = n.over as Node | undefined;
    const spec = ((over?.as_window_specification as Node | undefined)?.window_specification ?? null) as Node | null;
    if (!spec) throw unsupported('named windows');
    if (spec.window_frame_clause) throw unsupported('window frame clauses');
    const parts: string[] = [];
    if (Array.isArray(spec.partitionby) && spec.partitionby.length) {
      parts.push(`PARTITION BY ${(spec.partitionby as Node[]).map((p) => this.expr((p.expr as Node) ?? p, scope).sql).join(', ')}`);
    }
    if (Array.isArray(spec.orderby) && spec.orderby.length) {
      parts.push(`ORDER BY ${(spec.orderby as Node[]).map((o) => this.#orderItem(o, scope, [], new Map())).join(', ')}`);
    }
    return { ...e, sql: `${e.sql} OVER (${parts.join(' ')})` };
  }

  #case(n: Node, scope: Source[]): Expr {
    const parts: string[] = [];
    let type: PgType | null = null;
    const results: Expr[] = [];
    const subject = n.expr ? this.expr(n.expr as Node, scope) : null;
    for (const arm of (n.args as Node[]) ?? []) {
      const res = this.expr(arm.result as Node, scope);
      results.push(res);
      if (res.type && res.type !== 'unknown' && !type) type = res.type;
      if (arm.type === 'when') {
        const cond = subject ? this.coerce(this.expr(arm.cond as Node, scope), subject.type === 'unknown' ? null : subject.type).sql : this.bool(arm.cond as Node, scope);
        parts.push(`WHEN ${cond} THEN \0R${results.length - 1}\0`);
      } else parts.push(`ELSE \0R${results.length - 1}\0`);
    }
    const t = type ?? 'text';
    let sql = `CASE ${subject ? `${subject.sql} ` : ''}${parts.join(' ')} END`;
    sql = sql.replace(/\0R(\d+)\0/g, (_, i: string) => this.coerce(results[Number(i)]!, t).sql);
    return { sql, type: t, name: 'case' };
  }

  #extract(n: Node, scope: Source[]): Expr {
    const args = n.args as { field?: string; source?: Node } | undefined;
    if (!args?.field || !args.source) throw unsupported('this EXTRACT form');
    const src = this.coerce(this.expr(args.source, scope), 'timestamptz');
    if (src.type !== 'timestamptz' && src.type !== 'timestamp' && src.type !== 'date' && src.type !== null) throw unsupported(`EXTRACT from ${String(src.type)}`);
    return { sql: this.#fn('pe_extract', quoteLiteral(args.field.toLowerCase()), src.sql), type: 'numeric', name: 'extract' };
  }
}

/**
 * `pe_tick(a.x, b.y, …)` (as its marker): one column of every source, so SQLite evaluates it
 * in the innermost loop (a term without column references would run once, before the loops).
 */
export function tickCall(sources: ReadonlyArray<{ alias: string; columns: ColumnType[] | null }>): string {
  const args = sources.filter((s) => s.columns?.length).map((s) => `${quoteIdent(s.alias)}.${quoteIdent(s.columns![0]!.name)}`);
  return `\0K${args.join(', ')}\0`;
}

/** A function call's schema (lower case, null when unqualified), name (lower case) and name as written. */
export function callName(n: Node): { schema: string | null; name: string; written: string } {
  const q = n.name as { name?: Array<{ value?: string }>; schema?: { value?: string } } | undefined;
  const parts = (q?.name ?? []).map((p) => p.value ?? '');
  const schema = typeof q?.schema?.value === 'string' ? q.schema.value : null;
  return { schema: schema?.toLowerCase() ?? null, name: parts.join('.').toLowerCase(), written: [schema, ...parts].filter((x) => x !== null).join('.') };
}

/**
 * The properties the emitter reads, per expression node type. node-sql-parser keeps some
 * syntax as extra properties of a node (AT TIME ZONE, COLLATE, subscripts, a cast's type
 * modifier): one the emitter did not read would be a silently different result, so a
 * node with any other property set is refused, naming it.
 */
const NODE_KEYS: Record<string, ReadonlySet<string>> = Object.fromEntries(
  Object.entries({
    column_ref: 'table,column,collate,array_index,options,schema,db',
    number: 'value',
    bigint: 'value',
    single_quote_string: 'value',
    double_quote_string: 'value',
    bool: 'value',
    null: 'value',
    default: 'value',
    var: 'name,prefix,members,quoted',
    function: 'name,args,over,suffix,separator',
    aggr_func: 'name,args,over,filter',
    window_func: 'name,args,over',
    binary_expr: 'operator,left,right',
    unary_expr: 'operator,expr',
    cast: 'keyword,symbol,target,tail,expr',
    case: 'expr,args',
    interval: 'expr,unit',
    extract: 'args',
    array: 'brackets,expr_list,keyword',
    expr_list: 'value,separator',
  }).map(([type, keys]) => [type, new Set(['type', 'parentheses', ...keys.split(',')])]),
);

/** The same for a SELECT and for an item of its FROM list (statements.ts does it for INSERT, UPDATE and DELETE). */
const SELECT_KEYS = new Set('type,values,with,options,distinct,columns,into,from,where,groupby,having,orderby,limit,window,_next,set_op,parentheses,locking_read'.split(','));
const FROM_KEYS = new Set('db,table,as,columns,fn,join,on,using,expr,type,parentheses,tablesample'.split(','));

export function checkKeys(n: Node, allowed = typeof n.type === 'string' ? NODE_KEYS[n.type] : undefined, what = String(n.type)): void {
  if (!allowed) return;
  for (const k in n) {
    if (allowed.has(k)) continue;
    const v = n[k];
    if (v === null || v === undefined || v === false || (Array.isArray(v) && v.length === 0)) continue;
    // note: an object of nulls (the parser's way to say "absent" for some clauses) is absent too.
    if (typeof v === 'object' && !Array.isArray(v) && Object.values(v as object).every((x) => x === null || x === undefined)) continue;
    throw unsupported(`${k.replaceAll('_', ' ')} on ${what.replaceAll('_', ' ')} (syntax the translator does not read)`);
  }
}

/**
 * `x AT TIME ZONE z`, which is `timezone(z, x)`. node-sql-parser keeps the clause on the
 * operand (a `suffix` of a call, `options` of a column), where it would otherwise be
 * dropped: any other suffix or option is refused rather than ignored.
 */
function atTimeZone(n: Node): { zone: Node; of: Node } | null {
  const suffix = n.suffix as Node | null | undefined;
  if (suffix) {
    if (String(suffix.prefix ?? '').toLowerCase().replace(/\s+/g, ' ') !== 'at time zone') throw unsupported(`${String(suffix.prefix ?? 'this suffix')} after an expression`);
    const { prefix: _p, ...zone } = suffix;
    return { zone: zone as Node, of: { ...n, suffix: null } };
  }
  const options = n.options as { value?: Node[] } | null | undefined;
  if (options && n.type === 'column_ref') {
    const [kw, zone, ...rest] = options.value ?? [];
    if (String(kw?.value ?? '').toLowerCase().replace(/\s+/g, ' ') !== 'at time zone' || !zone || rest.length) throw unsupported('this column option');
    return { zone, of: { ...n, options: null } };
  }
  return null;
}

export function columnName(n: Node): string {
  const col = n.column as { expr?: { value?: unknown; type?: string } } | string | undefined;
  if (typeof col === 'string') return col;
  const v = col?.expr?.value;
  if (typeof v !== 'string' || v.includes('\0')) {
    if (typeof n.value === 'string') return n.value;
    throw unsupported('this column reference');
  }
  // note: unquoted identifiers fold to lower case in Postgres.
  return col?.expr?.type === 'double_quote_string' ? v : v.toLowerCase();
}

/** The text of a quoted SQL literal we emitted ('…'), or null. */
function literalText(sql: string): string | null {
  if (!/^'(?:[^']|'')*'$/.test(sql)) return null;
  return sql.slice(1, -1).replaceAll("''", "'");
}

const typeLabel = (t: PgType): string =>
  ({ int4: 'int4', int8: 'int8', float8: 'float8', numeric: 'numeric', text: 'text', bool: 'bool', timestamptz: 'timestamptz', timestamp: 'timestamp', date: 'date', jsonb: 'jsonb', json: 'json', uuid: 'uuid', bytea: 'bytea', 'text[]': 'text', interval: 'interval', unknown: '?column?' })[t];
