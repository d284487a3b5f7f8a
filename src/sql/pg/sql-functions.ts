import { EdgeError } from '../../core/errors.js';
import { quoteIdent } from '../../project/schemas.js';
import { Emitter, unsupported, type Expr, type Node, type Source } from './emit.js';
import { kind, lowerSelect, str } from './lower.js';
import { parseOne } from './parse.js';
import { pgTypeOf } from './types.js';
import type { PgType } from './types.js';

/**
 * `CREATE FUNCTION … LANGUAGE sql` functions, inlined where they are called (docs/sql.md
 * "Functions and triggers"): the call becomes the body — its SELECT as a scalar subquery,
 * or its expression when it has no FROM — with the arguments, emitted in the caller's scope,
 * in place of the parameters. A SECURITY DEFINER body reads its tables as the service role
 * (no RLS); otherwise as the caller.
 */

export interface SqlFunction {
  name: string;
  language: string;
  returns: string;
  definer: number;
  /** Its CREATE FUNCTION text. */
  source: string;
}

export type FunctionLookup = (name: string) => SqlFunction | null;

const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

export interface Parsed {
  params: Array<{ name: string | null; type: PgType | null }>;
  returns: PgType | null;
  /** Postgres' names of the parameter types and of the return type, as its messages show them. */
  argNames: string[];
  returnsName: string;
  body: Node;
}

const PG_NAMES: Record<string, string> = { int4: 'integer', int: 'integer', int8: 'bigint', int2: 'smallint', float8: 'double precision', float4: 'real', bool: 'boolean', varchar: 'character varying', timestamptz: 'timestamp with time zone', timestamp: 'timestamp without time zone' };
/** A type name as Postgres' messages write it (`int4` → integer). */
export const pgTypeName = (name: string): string => PG_NAMES[name.toLowerCase()] ?? name.toLowerCase();

const parsedCache = new Map<string, Parsed>();

/** A LANGUAGE sql function's parameters, return type and body (a lowered SELECT), parsed once per text. */
export function parseFunction(source: string): Parsed {
  const hit = parsedCache.get(source);
  if (hit) return hit;
  const [, f] = kind(parseOne(source));
  const argNames: string[] = [];
  const params = list(f.parameters).map((p) => {
    const [, pf] = kind(p);
    if (pf.mode && pf.mode !== 'FUNC_PARAM_DEFAULT' && pf.mode !== 'FUNC_PARAM_IN') throw unsupported('OUT / INOUT / VARIADIC / TABLE parameters in a LANGUAGE sql function');
    if (pf.defexpr) throw unsupported('parameter defaults in a LANGUAGE sql function');
    const names = list((pf.argType as Record<string, unknown>).names).map(str);
    argNames.push(pgTypeName(names[names.length - 1]!));
    return { name: typeof pf.name === 'string' ? pf.name.toLowerCase() : null, type: pgTypeOf(names[names.length - 1]!) };
  });
  const rt = f.returnType as Record<string, unknown> | undefined;
  if (!rt) throw unsupported('a LANGUAGE sql function without RETURNS');
  if (rt.setof) throw unsupported('RETURNS SETOF / TABLE functions (a LANGUAGE sql function here returns one value)');
  const rnames = list(rt.names).map(str);
  const returns = rnames[rnames.length - 1]!.toLowerCase();
  if (returns === 'trigger') throw unsupported('LANGUAGE sql trigger functions (write LANGUAGE plpgsql)');
  if (returns === 'void' || returns === 'record') throw unsupported(`LANGUAGE sql functions returning ${returns}`);
  let text: string | null = null;
  for (const o of list(f.options)) {
    const [, d] = kind(o);
    if (d.defname === 'as') text = str(list(kind(d.arg)[1].items)[0]);
  }
  if (text === null) throw unsupported('SQL-standard function bodies (write AS $$ select … $$)');
  const stmt = parseOne(text.trim().replace(/;\s*$/, ''));
  if (kind(stmt)[0] !== 'SelectStmt') throw unsupported('LANGUAGE sql functions whose body is not one SELECT');
  const p: Parsed = { params, returns: pgTypeOf(returns), argNames, returnsName: pgTypeName(returns), body: lowerSelect(stmt) };
  if (parsedCache.size > 200) parsedCache.clear();
  parsedCache.set(source, p);
  return p;
}

/** Checks a `CREATE FUNCTION … LANGUAGE sql` statement when it is created. */
export function checkSqlFunction(_f: Record<string, unknown>, text: string): void {
  parseFunction(text);
}

/** A script's view of the functions: the stored ones, with those its earlier statements create or drop. */
export function scriptFunctions(stored: FunctionLookup | undefined): { lookup: FunctionLookup; note(r: { op: string; name: string; language?: string; returns?: string; definer?: boolean; text?: string } | undefined): void } {
  const overlay = new Map<string, SqlFunction | null>();
  return {
    lookup: (name) => (overlay.has(name) ? overlay.get(name)! : (stored?.(name) ?? null)),
    note(r) {
      if (r?.op === 'function') overlay.set(r.name, { name: r.name, language: r.language!, returns: r.returns!, definer: r.definer ? 1 : 0, source: r.text! });
      if (r?.op === 'drop_function') overlay.set(r.name, null);
    },
  };
}

let depth = 0;
let calls = 0;

/** A call of a LANGUAGE sql function, inlined. */
export function emitSqlFunction(em: Emitter, fn: SqlFunction, args: Node[], scope: Source[]): Expr {
  if (fn.language !== 'sql') throw unsupported(`calling the ${fn.language} function ${fn.name}() (trigger functions run only as triggers)`);
  const p = parseFunction(fn.source);
  if (args.length !== p.params.length) throw new EdgeError('invalid_request', `function ${fn.name} takes ${p.params.length} argument${p.params.length === 1 ? '' : 's'}`, { details: { sqlstate: '42883' } });
  if (depth > 16) throw unsupported(`LANGUAGE sql functions calling each other more than 16 deep (${fn.name})`);
  // note: each argument is emitted once, in the caller's scope, then stands for its parameter in the body.
  const values = args.map((a, i) => em.coerce(em.expr(a, scope), p.params[i]!.type));
  // note: the arguments are a derived table the body reads by a name nothing in it can shadow (SQLite correlates it with the caller's row).
  const alias = `pe_args_${++calls}`;
  const slots = values.map((_, i) => `${quoteIdent(alias)}."a${i}"`);
  const bodyEm = fn.definer ? new Emitter({ schema: em.opts.schema, ...(em.opts.functions ? { functions: em.opts.functions } : {}) }) : em;
  depth++;
  let out: { sql: string; columns: Array<{ type: PgType | null }> | null };
  try {
    out = bodyEm.select(substitute(p.body, fn.name, p.params, slots, values), []);
  } finally {
    depth--;
  }
  let sql = out.sql;
  // note: a SECURITY DEFINER body reads its tables as they are (the service role's view), never the caller's RLS form.
  if (fn.definer) sql = sql.replace(/\0T([^\0]*)\0/g, (_, t: string) => quoteIdent(t));
  if (values.length) sql = `SELECT (${sql}) FROM (SELECT ${values.map((v, i) => `${v.sql} AS "a${i}"`).join(', ')}) AS ${quoteIdent(alias)}`;
  const type = out.columns?.[0]?.type ?? null;
  const e: Expr = { sql: `(${sql})`, type: type ?? p.returns, name: fn.name };
  return p.returns && type && type !== p.returns ? em.coerce({ ...e, type: 'unknown' }, p.returns) : e;
}

/** The body with each parameter (by name, `fn.name`, or `$n`) replaced by its argument's slot. */
function substitute(body: Node, fnName: string, params: Parsed['params'], slots: string[], values: Expr[]): Node {
  const slot = (i: number): Node => ({ type: 'pe_sql', expr: { sql: slots[i]!, type: values[i]!.type, name: params[i]!.name ?? `$${i + 1}` } });
  const visit = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(visit);
    if (!v || typeof v !== 'object') return v;
    const n = v as Node;
    if (n.type === 'var' && n.prefix === '$' && typeof n.name === 'number') {
      if (n.name < 1 || n.name > params.length) throw new EdgeError('invalid_request', `there is no parameter $${n.name}`, { details: { sqlstate: '42P02' } });
      return slot(n.name - 1);
    }
    if (n.type === 'column_ref' && typeof n.column === 'string') {
      const t = typeof n.table === 'string' ? n.table.toLowerCase() : null;
      const at = params.findIndex((p) => p.name === String(n.column).toLowerCase());
      if (at >= 0 && (t === null || t === fnName)) return slot(at);
    }
    const out: Node = {};
    for (const k in n) out[k] = visit(n[k]);
    return out;
  };
  return visit(body) as Node;
}
