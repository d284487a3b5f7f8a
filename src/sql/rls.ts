import type { AuthContext } from '../core/auth-context.js';
import { systemColumns, type CompiledPolicy, type PolicyParam, type TableDef } from './table-model.js';
import { JSON_KEY, jsonPathLiteral, quoteIdent } from './quote.js';
import { translateExpr, type ExprScope } from './translate.js';
import { EdgeError } from '../core/errors.js';
import type { FunctionLookup } from './pg/sql-functions.js';

/** A table's columns, name → holds JSON. */
export function columnsOf(def: TableDef): Map<string, boolean> {
  const cols = new Map<string, boolean>();
  for (const c of systemColumns(def)) cols.set(c, false);
  if (def.kind === 'document') cols.set('data', true);
  for (const c of def.columns) cols.set(c.name, c.type === 'jsonb');
  return cols;
}

/** The rows API's tables a policy's subqueries may read, by name. */
export type TableLookup = (name: string) => TableDef | null;

/** The translator's view of a table: its real columns, and JSON paths into JSON columns. */
export function tableScope(def: TableDef, lookup?: TableLookup, functions?: FunctionLookup): ExprScope {
  const cols = columnsOf(def);
  return {
    name: def.name,
    ...(functions ? { functions } : {}),
    typeName: (name, table) => {
      const d = table === undefined || table === def.name ? def : lookup?.(table);
      if (!d) return null;
      if (name === 'id') return d.key === 'int8' ? 'bigint' : 'uuid';
      if (name === 'created_at' || name === 'updated_at') return 'timestamp with time zone';
      const c = d.columns.find((x) => x.name === name);
      return c ? (PG_NAMES[c.type] ?? c.type) : null;
    },
    relation: lookup
      ? (table) => {
          const other = table === def.name ? def : lookup(table);
          if (!other) throw new EdgeError('invalid_request', `relation "${table}" does not exist`, { details: { sqlstate: '42P01' } });
          return columnsOf(other);
        }
      : undefined,
    column: (name) => (cols.has(name) ? quoteIdent(name) : null),
    isBoolean: (name, table) => ((table === undefined || table === def.name ? def : lookup?.(table))?.columns ?? []).some((c) => c.name === name && c.type === 'bool'),
    jsonPath: (name, path) => {
      if (!cols.get(name) || path.length === 0 || !path.every((p) => JSON_KEY.test(p))) return null;
      return `json_extract(${quoteIdent(name)}, ${jsonPathLiteral(path)})`;
    },
  };
}

/**
 * Compiles one policy when it is written: translated once, stored, and bound per
 * request from the auth context without re-parsing (docs/api.md "Row-level security").
 */
export function compilePolicy(source: string, def: TableDef, lookup?: TableLookup, functions?: FunctionLookup): CompiledPolicy {
  const t = translateExpr(source, tableScope(def, lookup, functions));
  const out: CompiledPolicy = { sql: t.sql, params: t.params };
  if (t.refs) out.refs = t.refs;
  if (t.fns) out.fns = t.fns;
  return out;
}

const PG_NAMES: Record<string, string> = { int8: 'bigint', float8: 'double precision', bool: 'boolean', timestamptz: 'timestamp with time zone' };

/** The values of a compiled policy's parameters for one caller. */
export function bindPolicy(params: readonly PolicyParam[], auth: AuthContext): unknown[] {
  const out = new Array<unknown>(params.length);
  for (let i = 0; i < params.length; i++) {
    const p = params[i]!;
    switch (p.k) {
      case 'uid':
        out[i] = auth.user?.id ?? null;
        break;
      case 'role':
        out[i] = auth.role;
        break;
      case 'jwt':
        out[i] = p.path || p.json ? claimPath(auth, p.claim, p.path ?? [], p.json === true) : claimValue(auth, p.claim);
        break;
      case 'lit':
        out[i] = p.v;
        break;
    }
  }
  return out;
}

function claimValue(auth: AuthContext, claim: string): unknown {
  const u = auth.user;
  if (!u) return claim === 'role' ? auth.role : null;
  const fixed: Record<string, unknown> = { sub: u.id, role: u.role, sid: u.sessionId, aal: u.aal };
  const v = claim in fixed ? fixed[claim] : u.claims[claim];
  if (v === undefined || v === null) return null;
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'object') return JSON.stringify(v);
  return v;
}

/** `auth.jwt() -> 'a' ->> 'b'` (text, as `->>` gives it) or `… -> 'b'` (JSON text); NULL where the path ends. */
function claimPath(auth: AuthContext, claim: string, path: readonly string[], json: boolean): unknown {
  const u = auth.user;
  const fixed: Record<string, unknown> = u ? { sub: u.id, role: u.role, sid: u.sessionId, aal: u.aal } : { role: auth.role };
  let v: unknown = claim in fixed ? fixed[claim] : u?.claims[claim];
  for (const k of path) v = v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>)[k] : undefined;
  if (v === undefined || v === null) return null;
  if (json) return JSON.stringify(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'object') return JSON.stringify(v);
  return v;
}
