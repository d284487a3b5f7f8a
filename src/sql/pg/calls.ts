import { emitSqlFunction } from './sql-functions.js';
import { EdgeError } from '../../core/errors.js';
import { quoteLiteral } from '../quote.js';
import { CALLER_SQL } from '../caller.js';
import { arrayOf, isArrayType, type PgType } from './types.js';
import { emitArrayFunction } from './arrays.js';
import { FUNCTIONS } from './catalog/core.js';
import { EVERYDAY, OPERATORS, operatorFor } from './catalog/everyday.js';
import type { CatalogFunction } from './catalog/types.js';
import { AGGREGATES, type Emitter, type Expr, NOW, type Node, type Source, UTC_ZONES, UUID_V4, callName, columnName, unsupported } from './emit.js';
import { emitPair, emitTextOf } from './ops.js';
import { emitOrderItem } from './query-parts.js';
import { emitCastTo } from './cast.js';
import { enumCast, enumLabelAt, enumLabels, enumPosition } from './types-ddl.js';

/** Functions the switch of emitFunctionCore keeps before the catalog (it types their literals from the other arguments). */
const SWITCH_FIRST = new Set(['greatest', 'least', 'to_jsonb', 'to_json', 'jsonb_typeof']);

/** Function calls, aggregates and window functions (the catalog, catalog/, for the functions it lists; auth.*, timezone(), the JSON builders here). Free functions over the Emitter (emit.ts), one room of the emitter. */

export function emitFunction(em: Emitter, n: Node, scope: Source[]): Expr {
  const { schema, name, written } = callName(n);
  if (schema === 'auth') return emitAuth(em, name, n);
  const own = (!schema || schema === 'public') && !n.over ? em.opts.functions?.(name) : null;
  if (own) return emitSqlFunction(em, own, em._args(n), scope);
  if (schema && schema !== 'pg_catalog') throw unsupported(`function ${written}`);
  if (AGGREGATES.has(name)) {
    const args = em._args(n);
    if (args.length !== 1) throw new EdgeError('invalid_request', `${name}() takes one argument`);
    return emitAggregate(em, { type: 'aggr_func', name, args: { expr: args[0] }, over: n.over }, scope);
  }
  if (n.over && ['row_number', 'rank', 'dense_rank', 'ntile', 'lag', 'lead', 'first_value', 'last_value', 'nth_value', 'percent_rank', 'cume_dist'].includes(name)) {
    return emitWindowFunc(em, { ...n, name }, scope);
  }
  if (n.over) return emitWindowed(em, name, emitFunctionCore(em, name, n, scope), n, scope);
  return emitArrayFunction(em, name, n, scope) ?? emitFunctionCore(em, name, n, scope);
}

/**
 * `auth.uid()`, `auth.role()`, `auth.jwt()` (Supabase's): the caller's user id, role and
 * token claims, bound per call (`\0A<name>\0`), so a cached translation serves every caller.
 * In a column's DEFAULT they read whoever writes the row (src/sql/caller.ts); not in other DDL.
 */
export function emitAuth(em: Emitter, name: string, n: Node): Expr {
  const types: Record<string, PgType> = { uid: 'uuid', role: 'text', jwt: 'jsonb' };
  const type = types[name];
  if (!type) throw unsupported(`function auth.${name} (auth.uid(), auth.role() and auth.jwt() are)`);
  if (em._args(n).length !== 0) throw new EdgeError('invalid_request', `function auth.${name} takes no arguments`);
  // note: a column's DEFAULT reads whoever writes the row (pe_caller_*, src/sql/caller.ts); a CHECK, an index
  // or a view's stored text cannot (a check would judge old rows by a later writer).
  if (em.native && em.callerDefault) return { sql: CALLER_SQL[name as keyof typeof CALLER_SQL], type, name };
  if (em.native) throw unsupported(`auth.${name}() in DDL other than a column's DEFAULT (a check or an index cannot name the caller)`);
  return { sql: `\0A${name}\0`, type, name };
}

export function emitFunctionCore(em: Emitter, name: string, n: Node, scope: Source[]): Expr {
  const args = em._args(n);
  const a = (i: number): Expr => {
    const x = args[i];
    if (!x) throw new EdgeError('invalid_request', `function ${name} needs more arguments`);
    return em.expr(x, scope);
  };
  const arity = (min: number, max = min) => {
    if (args.length < min || args.length > max) throw new EdgeError('invalid_request', `function ${name} takes ${min === max ? min : `${min} to ${max}`} arguments`);
  };
  const r = (sql: string, type: PgType | null): Expr => ({ sql, type, name });
  // note: the catalog answers first, except where the switch below types literals from their siblings.
  const cat = !SWITCH_FIRST.has(name) && Object.hasOwn(FUNCTIONS, name) ? FUNCTIONS[name]! : null;
  if (cat) return emitCatalogCall(em, name, cat, args, scope);
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
      return r(`EXISTS (${em.select(sub.ast as Node, scope).sql})`, 'bool');
    }
    case 'not': {
      arity(1);
      return r(`(NOT ${em.bool(args[0]!, scope)})`, 'bool');
    }
    case 'date': {
      // note: date(x) is Postgres' cast function (`date(created_at)`, the day in the session's zone, UTC here).
      arity(1);
      const x = a(0);
      if (x.type !== 'timestamptz' && x.type !== 'timestamp' && x.type !== 'date' && x.type !== 'unknown' && x.type !== 'text') break;
      return r(emitCastTo(em, x, 'date').sql, 'date');
    }
    case 'coalesce': {
      if (args.length < 1) throw new EdgeError('invalid_request', 'coalesce needs arguments');
      const xs = args.map((x) => em.expr(x, scope));
      const t = xs.find((x) => x.type && x.type !== 'unknown')?.type ?? 'unknown';
      const ys = xs.map((x) => em.coerce(x, t === 'unknown' ? null : t).sql);
      return r(ys.length === 1 ? ys[0]! : `coalesce(${ys.join(', ')})`, t);
    }
    case 'nullif': {
      arity(2);
      const [x, y] = emitPair(em, args[0]!, args[1]!, scope);
      return r(`nullif(${x.sql}, ${y.sql})`, x.type);
    }
    case 'greatest':
    case 'least': {
      const xs = args.map((x) => em.expr(x, scope));
      const t = xs.find((x) => x.type && x.type !== 'unknown')?.type ?? 'unknown';
      const fn = name === 'greatest' ? 'pe_greatest' : 'pe_least';
      // note: enums compare by their labels' order (a literal beside one must be a label, 22P02).
      const en = xs.find((x) => x.enum)?.enum;
      const labels = en ? enumLabels(em, en) : null;
      if (en && labels) {
        const keys = xs.map((x) => enumPosition(labels, x.enum ? x.sql : (enumCast(em, en, x) ?? x).sql));
        return { ...r(enumLabelAt(labels, em._fn(fn, ...keys)), 'text'), enum: en };
      }
      return r(em._fn(fn, ...xs.map((x) => em.coerce(x, t === 'unknown' ? null : t).sql)), t);
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
      if (args.length === 0) throw new EdgeError('invalid_request', 'function concat() does not exist', { details: { sqlstate: '42883' } });
      const xs = args.map((x) => em.expr(x, scope));
      // note: concat prints a boolean as t/f (its text output), unlike a cast to text.
      const text = (x: Expr): string => (x.type === 'bool' ? `(CASE WHEN ${x.sql} THEN 't' ELSE 'f' END)` : emitTextOf(em, x));
      return r(xs.length ? `(${xs.map((x) => `coalesce(${text(x)}, '')`).join(' || ')})` : `''`, 'text');
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
      const ts = em.coerce(a(1), 'timestamptz');
      return r(em._fn('pe_date_trunc', a(0).sql, ts.sql), 'timestamptz');
    }
    case 'jsonb_build_object':
    case 'json_build_object': {
      if (args.length % 2) throw new EdgeError('invalid_request', 'argument list must have even number of elements');
      const xs = args.map((x, i) => (i % 2 ? emitJsonValue(em, em.expr(x, scope)) : emitTextOf(em, em.expr(x, scope))));
      return r(name.startsWith('jsonb') ? em._fn('pe_jsonb', `json_object(${xs.join(', ')})`) : `json_object(${xs.join(', ')})`, name.startsWith('jsonb') ? 'jsonb' : 'json');
    }
    case 'jsonb_build_array':
    case 'json_build_array': {
      const xs = args.map((x) => emitJsonValue(em, em.expr(x, scope)));
      return r(`json_array(${xs.join(', ')})`, name.startsWith('jsonb') ? 'jsonb' : 'json');
    }
    case 'to_jsonb':
    case 'to_json': {
      arity(1);
      if (args[0]!.type === 'column_ref' && (args[0]!.column === '*' || !em._resolve(null, columnName(args[0]!), scope))) throw unsupported(`${name} of a whole row`);
      return r(emitJsonValue(em, a(0)), name === 'to_jsonb' ? 'jsonb' : 'json');
    }
    case 'jsonb_typeof':
    case 'json_typeof':
      arity(1);
      // note: in DDL (`check (jsonb_typeof(steps) = 'array')`) with SQLite's own json_type, named as Postgres names them.
      if (em.native) {
        const x = a(0).sql;
        return r(`CASE json_type(${x}) WHEN 'integer' THEN 'number' WHEN 'real' THEN 'number' WHEN 'true' THEN 'boolean' WHEN 'false' THEN 'boolean' WHEN 'text' THEN 'string' ELSE json_type(${x}) END`, 'text');
      }
      return r(em._fn('pe_jtypeof', a(0).sql), 'text');
    case 'jsonb_array_length':
    case 'json_array_length':
      arity(1);
      return r(em._fn('pe_jarray_length', a(0).sql), 'int4');
    case 'md5':
    case 'random':
      throw unsupported(`function ${name}`);
  }
  if (KNOWN.has(name)) throw unsupported(`function ${name}()`);
  // note: a name neither translated nor one of Postgres' own is Postgres' "does not exist" (42883).
  const types = args.map((x) => pgTypeName(em.expr(x, scope).type));
  throw new EdgeError('unsupported_sql', `function ${name}(${types.join(', ')}) does not exist`, { details: { construct: `function ${name}()`, sqlstate: '42883' } });
}

/** Postgres' (or SQLite's) own functions the translator refuses as not supported rather than unknown. */
const KNOWN = new Set(
  'jsonb_object_keys json_object_keys jsonb_each jsonb_each_text jsonb_array_elements jsonb_array_elements_text json_each json_array_elements to_tsvector to_tsquery plainto_tsquery phraseto_tsquery websearch_to_tsquery ts_rank ts_rank_cd ts_headline setweight pg_sleep random setseed md5 sha256 encode decode digest crypt gen_salt gen_random_bytes load_extension sqlite_version sqlite_source_id readfile writefile edit fts5 regexp_split_to_table regexp_split_to_array regexp_matches array_dims array_upper array_lower array_fill array_replace unnest generate_series jsonb_path_query jsonb_path_exists jsonb_path_match jsonb_populate_record jsonb_to_record jsonb_to_recordset json_populate_record row_to_json to_jsonb to_json xmlelement xmlagg pg_typeof current_setting set_config nextval currval setval lastval txid_current pg_advisory_lock pg_advisory_xact_lock pg_notify inet_client_addr version current_user session_user current_schema current_database has_table_privilege to_timestamp to_date to_number make_date make_timestamp make_timestamptz make_interval justify_interval justify_days date_bin clock_timestamp timeofday age overlay quote_ident quote_literal quote_nullable convert_from convert_to sha224 sha384 sha512 bit_length get_byte set_byte width_bucket gcd lcm factorial scale min_scale trim_scale log10 degrees radians pi sin cos tan asin acos atan atan2 sinh cosh tanh random_normal percentile_cont percentile_disc mode string_agg array_agg'.split(' '),
);

/** A type's name as Postgres writes it in "function f(type) does not exist". */
function pgTypeName(t: PgType | null): string {
  const names: Partial<Record<string, string>> = { int4: 'integer', int8: 'bigint', float8: 'double precision', bool: 'boolean', timestamptz: 'timestamp with time zone', timestamp: 'timestamp without time zone', 'text[]': 'text[]' };
  if (isArrayType(t) && t !== 'text[]') return `${pgTypeName(t.slice(0, -2) as PgType)}[]`;
  return t === null || t === 'unknown' ? 'unknown' : (names[t] ?? t);
}

/** A call of a catalog function (catalog/): arity, arguments coerced to its signature, its SQLite. */
export function emitCatalogCall(em: Emitter, name: string, cat: CatalogFunction, args: Node[], scope: Source[]): Expr {
  const [min, max] = cat.arity;
  if (args.length < min || args.length > max) throw new EdgeError('invalid_request', `function ${name} takes ${min === max ? min : max === Infinity ? `at least ${min}` : `${min} to ${max}`} arguments`);
  if (cat.registered && em.native && !cat.native) throw unsupported(`${name}() in DDL`);
  const sig = cat.args ?? [];
  const xs = args.map((x, i) => {
    const e = em.expr(x, scope);
    const t = sig.length ? sig[Math.min(i, sig.length - 1)]! : null;
    const c = em.coerce(e, t);
    return { sql: c.sql, type: c.type };
  });
  const out = em.native && cat.native ? cat.native(xs) : cat.emit(xs);
  return { sql: out.sql, type: out.type, name };
}

/** An operator of the catalog (catalog/everyday.ts), or null when it defines none for these operands. */
export function emitCatalogOperator(em: Emitter, op: string, left: Node, right: Node, scope: Source[]): Expr | null {
  if (!OPERATORS.has(op)) return null;
  const l = em.expr(left, scope);
  const r = em.expr(right, scope);
  const cat = operatorFor(op, l.type, r.type);
  if (!cat || (cat.registered && em.native)) {
    // note: the emitter's own branch takes these operands as they are (no second emission: a chain of
    // operators the catalog does not define stays linear).
    em.emitted.set(left, l).set(right, r);
    return null;
  }
  const a = em.coerce(l, cat.args[0]);
  const b = em.coerce(r, cat.args[1]);
  const out = cat.emit({ sql: a.sql, type: a.type }, { sql: b.sql, type: b.type });
  return { sql: out.sql, type: out.type, name: '?column?' };
}

/** A value as a JSON argument of json_object/json_array: booleans and JSON stay typed. */
export function emitJsonValue(em: Emitter, e: Expr): string {
  if (e.type === 'bool') return `CASE WHEN ${e.sql} IS NULL THEN NULL WHEN ${e.sql} THEN json('true') ELSE json('false') END`;
  if (e.type === 'jsonb' || e.type === 'json' || isArrayType(e.type)) return `json(${e.sql})`;
  if (e.type === 'timestamptz') return em._fn('pe_ts_json', e.sql);
  return e.sql;
}

export function emitAggregate(em: Emitter, n: Node, scope: Source[]): Expr {
  if (n.over) return emitAggregateCore(em, n, scope);
  em._sawAgg = true;
  em._aggDepth++;
  try {
    return emitAggregateCore(em, n, scope);
  } finally {
    em._aggDepth--;
  }
}

export function emitAggregateCore(em: Emitter, n: Node, scope: Source[]): Expr {
  const name = String(n.name).toLowerCase();
  const args = (n.args ?? {}) as { expr?: Node; distinct?: string; orderby?: Node[]; separator?: { delimiter?: Node }; fraction?: Node | null; desc?: boolean };
  const distinct = args.distinct ? 'DISTINCT ' : '';
  if (args.orderby && name !== 'string_agg' && name !== 'jsonb_agg' && name !== 'array_agg' && name !== 'json_agg') throw unsupported(`ORDER BY inside ${name}()`);
  // note: SQLite has FILTER (WHERE …) on every aggregate, as Postgres.
  const filterNode = (n as { filter?: Node | null }).filter;
  const f = filterNode ? ` FILTER (WHERE ${em.bool(filterNode, scope)})` : '';
  const order = args.orderby?.length ? ` ORDER BY ${args.orderby.map((o) => emitOrderItem(em, o, scope, [], new Map())).join(', ')}` : '';
  let out: Expr;
  if (name === 'count') {
    const e = args.expr;
    if (!e || e.type === 'star') out = { sql: `count(*)${f}`, type: 'int8', name: 'count' };
    else out = { sql: `count(${distinct}${em.expr(e, scope).sql})${f}`, type: 'int8', name: 'count' };
  } else {
    if (!args.expr) throw new EdgeError('invalid_request', `${name}() needs an argument`);
    const x = em.expr(args.expr, scope);
    if (x.type === 'interval') throw unsupported(`${name}() of intervals`);
    // note: an untyped NULL or literal fits several of Postgres' sum/avg (int, numeric, float8, interval …): 42725.
    if ((name === 'sum' || name === 'avg') && (args.expr.type === 'null' || args.expr.type === 'single_quote_string')) {
      throw new EdgeError('invalid_request', `function ${name}(unknown) is not unique`, { details: { sqlstate: '42725' } });
    }
    if ((name === 'sum' || name === 'avg') && x.type !== null && !['int4', 'int8', 'float8', 'numeric', 'unknown'].includes(x.type)) {
      throw new EdgeError('invalid_request', `function ${name}(${pgTypeName(x.type)}) does not exist`, { details: { sqlstate: '42883' } });
    }
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
        {
          // note: min/max of an enum by its labels' order (the extreme position, read back as its label).
          const labels = x.enum ? enumLabels(em, x.enum) : null;
          if (labels) {
            const inner: Expr = { sql: `${name}(${distinct}${enumPosition(labels, x.sql)})${f}`, type: 'int4', name };
            const at = n.over ? emitWindowed(em, name, inner, n, scope).sql : inner.sql;
            return { sql: enumLabelAt(labels, at), type: x.type, name, enum: x.enum };
          }
        }
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
        const d = em.expr(sep, scope);
        if (distinct && order) throw unsupported('string_agg(DISTINCT … ORDER BY …)');
        // note: SQLite's DISTINCT aggregates take one argument; Postgres sorts the distinct values.
        if (distinct) {
          out = { sql: em._fn('pe_string_agg_distinct', `json_group_array(DISTINCT ${emitTextOf(em, x)})${f}`, d.sql), type: 'text', name };
          break;
        }
        out = { sql: `group_concat(${distinct}${emitTextOf(em, x)}, ${d.sql}${order})${f}`, type: 'text', name };
        break;
      }
      case 'jsonb_object_agg':
      case 'json_object_agg': {
        const v = args.separator?.delimiter;
        if (!v) throw new EdgeError('invalid_request', `${name} takes two arguments`);
        if (order) throw unsupported(`ORDER BY inside ${name}()`);
        // note: a NULL key is Postgres' 22004 ("field name must not be null"); the last value of a repeated key wins.
        const key = `coalesce(${emitTextOf(em, x)}, ${em._fn('pe_error', "'field name must not be null'")})`;
        const obj = `json_group_object(${key}, ${emitJsonValue(em, em.expr(v, scope))})${f}`;
        out = { sql: `CASE WHEN count(*)${f} = 0 THEN NULL ELSE ${name === 'jsonb_object_agg' ? em._fn('pe_jsonb', obj) : obj} END`, type: name === 'jsonb_object_agg' ? 'jsonb' : 'json', name };
        break;
      }
      case 'jsonb_agg':
      case 'json_agg':
      case 'array_agg':
        if (x.type === null && args.expr.type === 'column_ref' && !em._resolve(null, columnName(args.expr), scope)) throw unsupported(`${name} of a whole row`);
        out = {
          sql: `CASE WHEN count(*)${f} = 0 THEN NULL ELSE json_group_array(${distinct}${emitJsonValue(em, x)}${order})${f} END`,
          type: name === 'array_agg' ? (x.type === 'text' || x.type === 'unknown' ? 'text[]' : (arrayOf(x.type) ?? 'jsonb')) : name === 'json_agg' ? 'json' : 'jsonb',
          name,
        };
        if (name === 'array_agg' && !isArrayType(out.type)) throw unsupported(`array_agg of ${String(x.type)} values`);
        break;
      case 'percentile_cont':
      case 'percentile_disc':
      case 'mode': {
        // note: WITHIN GROUP (ORDER BY x) (lower.ts withinGroup): the group's values to a function that sorts them.
        const numeric = x.type === 'int4' || x.type === 'int8' || x.type === 'float8' || x.type === 'numeric';
        if (name === 'percentile_cont' && !numeric) throw new EdgeError('invalid_request', `function percentile_cont(double precision, ${pgTypeName(x.type ?? 'text')}) does not exist`, { details: { sqlstate: '42883' } });
        if (x.type === 'jsonb' || x.type === 'json' || isArrayType(x.type)) throw unsupported(`${name}() of ${String(x.type)}`);
        const frac = args.fraction ? em.coerce(em.expr(args.fraction, scope), 'float8').sql : 'NULL';
        const kind = name === 'percentile_cont' ? 'cont' : name === 'percentile_disc' ? 'disc' : 'mode';
        // note: an enum sorts by its labels' order: its positions go in, the label comes back.
        const labels = x.enum ? enumLabels(em, x.enum) : null;
        const set = em._fn('pe_ordered_set', `json_group_array(${labels ? enumPosition(labels, x.sql) : x.sql})${f}`, quoteLiteral(kind), frac, args.desc ? '1' : '0');
        out = labels ? { sql: enumLabelAt(labels, set), type: x.type, name, enum: x.enum } : { sql: set, type: name === 'percentile_cont' ? 'float8' : x.type, name };
        break;
      }
      default:
        throw unsupported(`aggregate ${name}()`);
    }
  }
  if (n.over) return emitWindowed(em, name, out, n, scope);
  return out;
}

export function emitWindowFunc(em: Emitter, n: Node, scope: Source[]): Expr {
  const name = String(n.name).toLowerCase();
  const args = em._args(n).map((x) => em.expr(x, scope));
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
    case 'nth_value': {
      if (args.length !== 2) throw new EdgeError('invalid_request', 'function nth_value takes two arguments', { details: { sqlstate: '42883' } });
      // note: Postgres refuses n < 1 (22016); SQLite would say it in its own words.
      if (/^-?\d+$/.test(args[1]!.sql) && Number(args[1]!.sql) < 1) throw new EdgeError('invalid_request', 'argument of nth_value must be greater than zero', { details: { sqlstate: '22016' } });
      e = { sql: `nth_value(${args[0]!.sql}, ${args[1]!.sql})`, type: args[0]!.type, name };
      break;
    }
    default:
      throw unsupported(`window function ${name}()`);
  }
  return emitWindowed(em, name, e, n, scope);
}

export function emitWindowed(em: Emitter, _name: string, e: Expr, n: Node, scope: Source[]): Expr {
  const over = n.over as Node | undefined;
  const spec = ((over?.as_window_specification as Node | undefined)?.window_specification ?? null) as Node | null;
  if (!spec) throw unsupported('named windows');
  const parts: string[] = [];
  if (Array.isArray(spec.partitionby) && spec.partitionby.length) {
    parts.push(`PARTITION BY ${(spec.partitionby as Node[]).map((p) => em.expr((p.expr as Node) ?? p, scope).sql).join(', ')}`);
  }
  if (Array.isArray(spec.orderby) && spec.orderby.length) {
    parts.push(`ORDER BY ${(spec.orderby as Node[]).map((o) => emitOrderItem(em, o, scope, [], new Map())).join(', ')}`);
  }
  if (spec.window_frame_clause) parts.push(emitFrame(em, spec.window_frame_clause as Node, scope));
  return { ...e, sql: `${e.sql} OVER (${parts.join(' ')})` };
}

/** A window frame (lower.ts frameClause): SQLite reads ROWS, GROUPS and RANGE frames as Postgres does; RANGE offsets (over dates, intervals) are not translated. */
function emitFrame(em: Emitter, fr: Node, scope: Source[]): string {
  const bound = (b: Node, which: string): string => {
    if (!b.offset) return String(b.bound);
    if (fr.mode === 'RANGE') throw unsupported('RANGE frames with an offset (use ROWS or GROUPS)');
    const x = em.expr(b.offset as Node, scope);
    if (x.sql === 'NULL') throw new EdgeError('invalid_request', `frame ${which} offset must not be null`, { details: { sqlstate: '22004' } });
    if (/^-/.test(x.sql) || /^\(-/.test(x.sql)) throw new EdgeError('invalid_request', `frame ${which} offset must not be negative`, { details: { sqlstate: '22013' } });
    return `${x.sql} ${String(b.bound)}`;
  };
  const ex = fr.exclude ? ` EXCLUDE ${String(fr.exclude)}` : '';
  return `${String(fr.mode)} BETWEEN ${bound(fr.start as Node, 'starting')} AND ${bound(fr.end as Node, 'ending')}${ex}`;
}

export function emitCase(em: Emitter, n: Node, scope: Source[]): Expr {
  const parts: string[] = [];
  let type: PgType | null = null;
  const results: Expr[] = [];
  const subject = n.expr ? em.expr(n.expr as Node, scope) : null;
  for (const arm of (n.args as Node[]) ?? []) {
    const res = em.expr(arm.result as Node, scope);
    results.push(res);
    if (res.type && res.type !== 'unknown' && !type) type = res.type;
    if (arm.type === 'when') {
      const cond = subject ? em.coerce(em.expr(arm.cond as Node, scope), subject.type === 'unknown' ? null : subject.type).sql : em.bool(arm.cond as Node, scope);
      parts.push(`WHEN ${cond} THEN \0R${results.length - 1}\0`);
    } else parts.push(`ELSE \0R${results.length - 1}\0`);
  }
  const t = type ?? 'text';
  let sql = `CASE ${subject ? `${subject.sql} ` : ''}${parts.join(' ')} END`;
  sql = sql.replace(/\0R(\d+)\0/g, (_, i: string) => em.coerce(results[Number(i)]!, t).sql);
  return { sql, type: t, name: 'case' };
}

export function emitExtract(em: Emitter, n: Node, scope: Source[]): Expr {
  const args = n.args as { field?: string; source?: Node } | undefined;
  if (!args?.field || !args.source) throw unsupported('this EXTRACT form');
  const source = em.expr(args.source, scope);
  if (source.type === 'interval') {
    const f = EVERYDAY.extract!;
    if (f.registered && em.native) throw unsupported('extract() in DDL');
    return { ...f.emit([{ sql: quoteLiteral(args.field.toLowerCase()), type: 'text' }, { sql: source.sql, type: source.type }]), name: 'extract' };
  }
  const src = em.coerce(source, 'timestamptz');
  if (src.type !== 'timestamptz' && src.type !== 'timestamp' && src.type !== 'date' && src.type !== null) throw unsupported(`EXTRACT from ${String(src.type)}`);
  return { sql: em._fn('pe_extract', quoteLiteral(args.field.toLowerCase()), src.sql), type: 'numeric', name: 'extract' };
}
