import type { FunctionLookup } from './sql-functions.js';
import { EdgeError } from '../../core/errors.js';
import { physicalName, quoteIdent } from '../../project/schemas.js';
import { quoteLiteral } from '../quote.js';
import { emitArray } from './arrays.js';
import { elementOf, isArrayType, type ColumnType, type PgType, type SchemaLookup } from './types.js';
import { AUTH_USERS, AUTH_USERS_COLUMNS, AUTH_USERS_SQL, authUsersReadOnly, isReservedName, readOnlyView, reservedRefusal } from './reserved.js';
import { introspectionColumns, introspectionSql, introspectionView, isIntrospectionView, type Introspect, type IntrospectTable } from './introspect.js';
import { emitAggregate, emitCase, emitExtract, emitFunction, emitFunctionCore, emitWindowFunc } from './calls.js';
import { emitBinary, emitUnary } from './ops.js';
import { emitCast, emitCastTo, emitInterval } from './cast.js';
import { emitOrderLimit, emitSelectCore, emitSetOrder } from './query-parts.js';
import { windowLimit } from './lateral.js';
import type { ViewCatalog } from './views.js';
/**
 * Emits SQLite from the emitter's tree (lowered from PostgreSQL's parse tree by lower.ts),
 * from an allowlist: every node type and function has a translation (this file: names,
 * expressions' entry and leaves; query-parts.ts, ops.ts, cast.ts, calls.ts: the rest); anything else throws 400
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
export const BIND_CONVERSIONS: ReadonlySet<string> = new Set(['pe_uuid', 'pe_ts', 'pe_date', 'pe_jsonb', 'pe_bool', 'pe_int', 'pe_int4', 'pe_int8', 'pe_float', 'pe_text_array', 'pe_int4_array', 'pe_int8_array', 'pe_float8_array', 'pe_numeric_array', 'pe_bool_array', 'pe_uuid_array']);
export type Node = { type?: string; [k: string]: unknown };

export interface Expr {
  sql: string;
  type: PgType | null;
  /** The output name Postgres gives an unaliased select item. */
  name: string;
  /** A timestamp whose SQL already yields the stored ISO form (no normalisation when it meets a timestamptz). */
  iso?: boolean;
  /** A text value of this enum type (a column of it, a cast to it: types-ddl.ts). */
  enum?: string;
}

export interface Source {
  alias: string;
  columns: ColumnType[] | null;
  /** Columns that are expressions over the item rather than its own columns (a set-returning function over an earlier FROM item: from-functions.ts). */
  exprs?: Readonly<Record<string, string>>;
  /** An item the translator added (a select list's set-returning function, lateral.ts): not part of `*`. */
  hidden?: boolean;
}

/** The column that stands for "the referenced table's primary key" in a REFERENCES translate.ts rewrote for the parser. */
export const PRIMARY_KEY_MARK = 'pe_primary_key';

export const unsupported = (construct: string): EdgeError =>
  new EdgeError('unsupported_sql', `not supported: ${construct}`, { details: { construct } });

/** Postgres' words for a data-modifying WITH item below the statement's own WITH (dml-cte.ts runs those). */
export const nestedDml = (): EdgeError =>
  new EdgeError('unsupported_sql', 'WITH clause containing a data-modifying statement must be at the top level', { details: { construct: 'data-modifying WITH below the top level', sqlstate: '0A000' } });

export const NOW = `strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`;
/** Zone names that mean UTC (timezone() accepts only these: the session time zone is UTC). */
export const UTC_ZONES = new Set(['utc', 'etc/utc', 'gmt', 'etc/gmt', 'zulu', 'z', 'utc0', '+00', '+00:00', 'universal', 'etc/universal']);
export const UUID_V4 =
  `lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-' || ` +
  `substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))`;
export const COMPARE = new Set(['=', '<>', '!=', '<', '<=', '>', '>=']);
export const ARITH = new Set(['+', '-', '*', '/', '%']);
export const MAX_NODES = 20_000;
export const AGGREGATES = new Set(['sum', 'avg', 'min', 'max', 'bool_and', 'bool_or', 'every', 'jsonb_agg', 'json_agg', 'array_agg']);
export const MAX_DEPTH = 200;
/** The columns of SQLite's json_each, hidden ones included. */
const JSON_EACH_COLUMNS = new Set(['key', 'value', 'type', 'atom', 'id', 'parent', 'fullkey', 'path', 'json', 'root']);

/** How an emitted expression is used: DDL defaults and checks must run on any connection. */
export interface EmitOptions {
  schema: SchemaLookup;
  /** Publishable callers: only tables accepted by this check may be read. */
  readable?: (physical: string) => boolean;
  /** The project's tables for the introspection views (introspect.ts); without it they are empty. */
  introspect?: Introspect;
  /** The project's views (views.ts): a FROM item naming one reads its SELECT; any other use is refused. */
  views?: ViewCatalog;
  /** The project's LANGUAGE sql functions, inlined where called (sql-functions.ts). */
  functions?: FunctionLookup;
}

export class Emitter {
  readonly tables = new Set<string>();
  /** Every table reference in the order emitted (privileges.ts: a data-changing statement's target comes first). */
  readonly refs: string[] = [];
  readonly params = new Set<number>();
  _nodes = 0;
  /** Operands the catalog emitted for an operator it does not define, taken once by the emitter's own branch (calls.ts). */
  readonly emitted = new Map<Node, Expr>();
  _depth = 0;
  /** Inside DDL: only native SQLite (no registered functions, no parameters). */
  native = false;
  /** Inside a column's DEFAULT: `auth.uid()`, `auth.role()`, `auth.jwt()` read the writing caller (src/sql/caller.ts). */
  callerDefault = false;
  readonly _ctes: Array<Map<string, ColumnType[] | null>> = [];
  /** Data-modifying WITH items without RETURNING (dml-cte.ts): naming one is Postgres' 0A000. */
  readonly _noReturning = new Set<string>();
  /** Column references outside aggregates in the current select core (null: not collecting). */
  _bare: Array<{ alias: string; name: string; sql: string; within?: string }> | null = null;
  _aggDepth = 0;
  _sawAgg = false;
  _coreSources: Source[] = [];
  /** How many LATERAL subqueries are being emitted (lateral.ts). */
  _lateral = 0;
  /** Row sources every expression may name (a trigger body's `new` and `old`, plpgsql.ts). */
  ambient: Source[] = [];

  constructor(readonly opts: EmitOptions) {}

  _count(): void {
    if (++this._nodes > MAX_NODES) throw unsupported('statements larger than 20000 syntax nodes');
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
    if (this.opts.views?.().has(p)) throw new EdgeError('invalid_request', `"${p}" is a view, not a table`, { details: { sqlstate: '42809' } });
    return p;
  }

  tableRef(physical: string): string {
    if (this.opts.readable && !this.opts.readable(physical)) {
      throw new EdgeError('missing_scope', `table "${physical}" cannot be read with this key`, { details: { scope: 'service_role' } });
    }
    this.tables.add(physical);
    this.refs.push(physical);
    // note: auth.users is its fixed subquery for the service role; other callers are refused it
    // (query.ts: a table outside the rows API's catalog), so it needs no per-caller form.
    if (physical === AUTH_USERS) return AUTH_USERS_SQL;
    if (isIntrospectionView(physical)) return introspectionSql(physical, this._introspected());
    return `\0T${physical}\0`;
  }

  _tables: IntrospectTable[] | null = null;

  _introspected(): IntrospectTable[] {
    return (this._tables ??= this.opts.introspect?.() ?? []);
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
    this._count();
    if (n.type !== 'select') throw unsupported(`${String(n.type)} statement here`);
    checkKeys(n, SELECT_KEYS, 'SELECT');
    if (n.into && (n.into as Node).position) throw unsupported('SELECT INTO');
    if (n.locking_read) throw unsupported('FOR UPDATE / FOR SHARE');
    let prefix = '';
    let pushed = false;
    if (Array.isArray(n.with) && n.with.length) {
      const scope = new Map<string, ColumnType[] | null>();
      this._ctes.push(scope);
      pushed = true;
      const recursive = (n.with as Node[]).some((w) => w.recursive);
      const parts: string[] = [];
      for (const w of n.with as Node[]) {
        if (w.dml || w.dmlRaw) throw nestedDml();
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
        const core = emitSelectCore(this, cur, outer);
        // note: a LIMIT/OFFSET over the outer row (in a LATERAL subquery) as a row_number() window: SQLite's LIMIT cannot be correlated (lateral.ts).
        const windowed = first && !cur._next ? windowLimit(this, cur, core, outer) : null;
        if (windowed !== null) {
          columns = core.columns;
          sql = windowed;
          break;
        }
        if (first) columns = core.columns;
        sql += first ? core.sql : ` ${op} ${core.sql}`;
        first = false;
        if (cur._next) {
          op = String(cur.set_op ?? 'union').toUpperCase();
          if (!['UNION', 'UNION ALL', 'INTERSECT', 'EXCEPT'].includes(op)) throw unsupported(`set operation ${op}`);
        }
        // note: an enum output column named by position or alias sorts by its labels: in a lone SELECT only (a set operation's ORDER BY names result columns).
        const alone = sql === core.sql && !cur._next;
        const setOrder = !alone && !cur._next && columns ? emitSetOrder(this, cur, columns, sql) : null;
        if (setOrder !== null) {
          sql = setOrder;
          break;
        }
        const tail = emitOrderLimit(this, cur, core.sources, core.aliases, core.ordered, columns?.length ?? null, alone ? core.positions : undefined);
        if (tail && cur._next) throw unsupported('ORDER BY / LIMIT inside one member of a set operation');
        sql += tail;
        cur = cur._next as Node | undefined;
      }
      return { sql: prefix + sql, columns };
    } finally {
      if (pushed) this._ctes.pop();
    }
  }

  // ---------------------------------------------------------------- expressions

  /** A boolean-valued expression (WHERE, ON, HAVING). */
  bool(n: Node, scope: Source[]): string {
    const e = this.expr(n, scope);
    if (e.type === 'unknown') return `pe_bool(${e.sql})`;
    return e.sql;
  }

  expr(n: Node, scope: Source[]): Expr {
    const again = this.emitted.get(n);
    if (again) {
      this.emitted.delete(n);
      return again;
    }
    this._count();
    if (this._depth++ > MAX_DEPTH) throw unsupported('expressions nested deeper than 200 levels');
    try {
      return this._expr(n, scope);
    } finally {
      this._depth--;
    }
  }

  _expr(n: Node, scope: Source[]): Expr {
    if (!n || typeof n !== 'object') throw unsupported('this expression');
    checkKeys(n);
    const zone = atTimeZone(n);
    if (zone) return emitFunctionCore(this, 'timezone', { type: 'function', args: { type: 'expr_list', value: [zone.zone, zone.of] } }, scope);
    if (n.collate) {
      // note: SQLite compares text byte by byte, which is Postgres' "C" collation: any other would order differently.
      const c = (n.collate as { collate?: { name?: { value?: unknown } } }).collate?.name?.value;
      if (typeof c !== 'string' || !['C', 'POSIX', 'default'].includes(c)) throw unsupported(`COLLATE ${String(c)} (text compares as in the "C" collation)`);
      return this._expr({ ...n, collate: null }, scope);
    }
    if (Array.isArray(n.array_index) && n.array_index.length) return this._subscript(n, scope);
    if (n.ast) return this._subquery(n, scope);
    switch (n.type) {
      case 'pe_sql':
        // note: an already emitted value (a LANGUAGE sql function's argument, sql-functions.ts).
        return n.expr as Expr;
      case 'column_ref':
        return this._column(n, scope);
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
        return this._column({ type: 'column_ref', column: String(n.value) }, scope);
      case 'null':
        return { sql: 'NULL', type: 'unknown', name: '?column?' };
      case 'bool':
        return { sql: n.value ? '1' : '0', type: 'bool', name: 'bool' };
      case 'var':
        return this._param(n);
      case 'binary_expr':
        return emitBinary(this, n, scope);
      case 'unary_expr':
        return emitUnary(this, n, scope);
      case 'function':
        return emitFunction(this, n, scope);
      case 'aggr_func':
        return emitAggregate(this, n, scope);
      case 'window_func':
        return emitWindowFunc(this, n, scope);
      case 'cast':
        return emitCast(this, n, scope);
      case 'case':
        return emitCase(this, n, scope);
      case 'extract':
        return emitExtract(this, n, scope);
      case 'interval':
        return emitInterval(this, n);
      case 'expr_list':
        if (Array.isArray(n.value) && n.value.length === 1) {
          const inner = this.expr(n.value[0] as Node, scope);
          return { ...inner, sql: `(${inner.sql})` };
        }
        throw unsupported('row values');
      case 'default':
        if (typeof n.value === 'string' && /^E'/i.test(n.value)) throw unsupported("E'' escape strings");
        throw unsupported(`this expression (${String(n.value)})`);
      case 'array':
        return emitArray(this, n, scope);
    }
    throw unsupported(`expression type ${String(n.type)}`);
  }

  _param(n: Node): Expr {
    if (this.native) throw unsupported('parameters in DDL');
    if (n.prefix !== '$' || typeof n.name !== 'number' || !Number.isInteger(n.name) || n.name < 1 || n.name > 1000) {
      throw unsupported('parameters other than $1…$1000');
    }
    this.params.add(n.name);
    return { sql: `\0P${n.name}\0`, type: 'unknown', name: '?column?' };
  }

  _subquery(n: Node, scope: Source[]): Expr {
    // note: Postgres' own refusal (0A000), also of `default (select auth.uid())`: write `default auth.uid()`.
    if (this.native && this.callerDefault) throw new EdgeError('unsupported_sql', 'cannot use subquery in DEFAULT expression', { details: { construct: 'subqueries in DEFAULT', sqlstate: '0A000' } });
    if (this.native) throw unsupported('subqueries in DDL');
    const sub = this.select(n.ast as Node, scope);
    // note: SQLite takes a scalar subquery's first row; Postgres fails past one (21000): at most two are read.
    const one = `(WITH "_pe_s"("v") AS (${sub.sql}) SELECT CASE WHEN count(*) > 1 THEN pe_error('more than one row returned by a subquery used as an expression') ELSE min("v") END FROM (SELECT "v" FROM "_pe_s" LIMIT 2))`;
    return { sql: one, type: sub.columns?.[0]?.type ?? null, name: sub.columns?.[0]?.name ?? '?column?' };
  }

  _resolve(table: string | null, name: string, scope: Source[]): { source: Source; type: PgType | null } | null {
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

  /** `arr[i]` of an array (1-based; NULL out of range, as in Postgres). Slices and other subscripts are refused. */
  _subscript(n: Node, scope: Source[]): Expr {
    const idx = n.array_index as Array<{ brackets?: boolean; index?: Node }>;
    if (idx.length !== 1 || !idx[0]!.brackets || !idx[0]!.index) throw unsupported('this subscript');
    const base = this.expr({ ...n, array_index: null }, scope);
    if (!isArrayType(base.type)) throw unsupported(`subscripts of a ${String(base.type)} value`);
    const i = this.coerce(this.expr(idx[0]!.index, scope), 'int8');
    return { sql: `(CASE WHEN ${i.sql} >= 1 THEN json_extract(${base.sql}, '$[' || (${i.sql} - 1) || ']') END)`, type: elementOf(base.type), name: base.name };
  }

  _column(n: Node, scope: Source[]): Expr {
    if (n.column === '*') throw unsupported('* in this position');
    const name = columnName(n);
    const t = n.table as unknown;
    const table = typeof t === 'string' ? t.toLowerCase() : t ? String((t as Node).value ?? '').toLowerCase() : null;
    if (n.schema || (n as { db?: unknown }).db) throw unsupported('schema-qualified column references');
    const r = this._resolve(table, name, scope) ?? (table !== null && this.ambient.length ? this._resolve(table, name, this.ambient) : null);
    // note: inside a LATERAL subquery SQLite would read an unknown name as the outer query's output alias of that name (lateral.ts names them so): refused here as Postgres does.
    if (table === null && !r && this._lateral > 0 && scope.length && scope.every((s) => s.columns !== null)) throw new EdgeError('invalid_request', `column "${name}" does not exist`, { details: { sqlstate: '42703' } });
    if (table !== null && !r && !scope.some((s) => s.alias === table) && !this.ambient.some((s) => s.alias === table)) {
      // note: `excluded.col` in ON CONFLICT, or a table the query does not name.
      if (table !== 'excluded') throw new EdgeError('invalid_request', `missing FROM-clause entry for table "${table}"`);
    }
    // note: json_each joined for a lateral item (lateral.ts, from-functions.ts) has columns of its own (id, key, value, …): an unqualified name beside it is qualified.
    const beside = table === null && r && JSON_EACH_COLUMNS.has(name) && scope.some((s) => s.exprs);
    const sql = r?.source.exprs?.[name] ?? (table !== null ? `${quoteIdent(table)}.${quoteIdent(name)}` : beside ? `${quoteIdent(r.source.alias)}.${quoteIdent(name)}` : quoteIdent(name));
    if (this._bare && this._aggDepth === 0 && r && this._coreSources.includes(r.source)) this._bare.push({ alias: r.source.alias, name, sql });
    const en = r?.type === 'text' ? r.source.columns?.find((c) => c.name === name)?.enum : undefined;
    return en ? { sql, type: r!.type, name, enum: en } : { sql, type: r?.type ?? null, name };
  }

  /** Makes a value of unknown type (literal, parameter) the given type, as Postgres does from context. */
  coerce(e: Expr, to: PgType | null): Expr {
    if (!to || e.type === to || e.sql === 'NULL') return e;
    if (e.type !== 'unknown' && !(to === 'jsonb' && e.type === 'json')) {
      if (to === 'timestamptz' && e.type === 'timestamp' && e.iso) return { ...e, type: to };
      if (to === 'timestamptz' && (e.type === 'timestamp' || e.type === 'date')) return { ...e, sql: this._fn('pe_ts', e.sql), type: to };
      return e;
    }
    return emitCastTo(this, e, to);
  }

  _fn(name: string, ...args: string[]): string {
    if (this.native) throw unsupported(`this expression in DDL (${name.replace(/^pe_/, '')})`);
    // note: a conversion of a bare parameter is applied to the value when it is bound (the same
    // function, in translate.ts), as Postgres types a parameter at bind time: no SQL callback.
    const param = args.length === 1 && BIND_CONVERSIONS.has(name) ? /^\0P(\d+)\0$/.exec(args[0]!) : null;
    if (param) return `\0P${param[1]}:${name}\0`;
    return `${name}(${args.join(', ')})`;
  }

  _args(n: Node): Node[] {
    const a = n.args as { value?: Node[]; type?: string } | Node[] | undefined;
    if (!a) return [];
    if (Array.isArray(a)) return a;
    return a.value ?? [];
  }

}

/**
 * `pe_tick(a.x, b.y, …)` (as its marker): one column of every source, so SQLite evaluates it
 * in the innermost loop (a term without column references would run once, before the loops).
 */
export function tickCall(sources: ReadonlyArray<{ alias: string; columns: ColumnType[] | null; exprs?: Readonly<Record<string, string>> }>): string {
  const args = sources.filter((s) => s.columns?.length).map((s) => s.exprs?.[s.columns![0]!.name] ?? `${quoteIdent(s.alias)}.${quoteIdent(s.columns![0]!.name)}`);
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
 * The properties the emitter reads, per expression node type (lower.ts puts some syntax on
 * a node as extra properties: COLLATE, subscripts): one the emitter did not read would be a
 * silently different result, so a node with any other property set is refused, naming it.
 */
export const NODE_KEYS: Record<string, ReadonlySet<string>> = Object.fromEntries(
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
    function: 'name,args,over,suffix,separator,array_index',
    aggr_func: 'name,args,over,filter',
    window_func: 'name,args,over',
    binary_expr: 'operator,left,right',
    unary_expr: 'operator,expr',
    cast: 'keyword,symbol,target,tail,expr,array_index',
    case: 'expr,args',
    interval: 'expr,unit',
    extract: 'args',
    array: 'brackets,expr_list,keyword,array_index',
    expr_list: 'value,separator',
  }).map(([type, keys]) => [type, new Set(['type', 'parentheses', ...keys.split(',')])]),
);

/** The same for a SELECT and for an item of its FROM list (statements.ts does it for INSERT, UPDATE and DELETE). */
export const SELECT_KEYS = new Set('type,values,with,options,distinct,columns,into,from,where,groupby,having,orderby,limit,window,_next,set_op,parentheses,locking_read'.split(','));
export const FROM_KEYS = new Set('db,table,as,columns,fn,join,on,using,expr,type,parentheses,tablesample,lateral,hidden,zip'.split(','));

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
 * `x AT TIME ZONE z` kept on the operand (a `suffix` of a call, `options` of a column), which
 * is `timezone(z, x)` (lower.ts emits the call itself; this reads the older form): any other
 * suffix or option is refused rather than ignored.
 */
export function atTimeZone(n: Node): { zone: Node; of: Node } | null {
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
export function literalText(sql: string): string | null {
  if (!/^'(?:[^']|'')*'$/.test(sql)) return null;
  return sql.slice(1, -1).replaceAll("''", "'");
}

export const typeLabel = (t: PgType): string =>
  isArrayType(t) ? typeLabel(elementOf(t)) : ({ int4: 'int4', int8: 'int8', float8: 'float8', numeric: 'numeric', text: 'text', bool: 'bool', timestamptz: 'timestamptz', timestamp: 'timestamp', date: 'date', jsonb: 'jsonb', json: 'json', uuid: 'uuid', bytea: 'bytea', interval: 'interval', unknown: '?column?' } as Record<string, string>)[t]!;
