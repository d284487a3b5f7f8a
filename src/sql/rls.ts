import type { AuthContext } from '../core/auth-context.js';
import { systemColumns, type CompiledPolicy, type PolicyParam, type TableDef } from './table-model.js';
import { JSON_KEY, jsonPathLiteral, quoteIdent } from './quote.js';
import { translateExpr, type ExprScope } from './translate.js';

/** The translator's view of a table: its real columns, and JSON paths into JSON columns. */
export function tableScope(def: TableDef): ExprScope {
  const cols = new Map<string, boolean>(); // name → holds JSON
  for (const c of systemColumns(def)) cols.set(c, false);
  if (def.kind === 'document') cols.set('data', true);
  for (const c of def.columns) cols.set(c.name, c.type === 'jsonb');
  return {
    column: (name) => (cols.has(name) ? quoteIdent(name) : null),
    isBoolean: (name) => def.columns.some((c) => c.name === name && c.type === 'bool'),
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
export function compilePolicy(source: string, def: TableDef): CompiledPolicy {
  const t = translateExpr(source, tableScope(def));
  return { sql: t.sql, params: t.params };
}

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
        out[i] = claimValue(auth, p.claim);
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
