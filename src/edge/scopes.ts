import { EdgeError, missingScope } from '../core/errors.js';
import type { ScopeRule } from './route.js';
import type { Scope } from '../core/auth-context.js';

/** Whether a caller's scopes satisfy a rule: the scope itself, or any one of a list. */
export function holdsScope(scopes: ReadonlySet<Scope>, rule: ScopeRule): boolean {
  return typeof rule === 'string' ? scopes.has(rule) : rule.some((s) => scopes.has(s));
}

/**
 * The one scope check (401 `missing_scope`). The pipeline applies it to every route's
 * `scope`; a route that serves several operations (JSON-RPC, GraphQL) declares the scopes
 * any of them may need and checks each operation's own scope with this, so the rule and
 * the answer are the same on every door.
 */
export function requireScope(scopes: ReadonlySet<Scope>, rule: ScopeRule): void {
  if (holdsScope(scopes, rule)) return;
  if (typeof rule === 'string') throw missingScope(rule);
  throw new EdgeError('missing_scope', `this request needs one of the scopes ${rule.map((s) => `"${s}"`).join(', ')}`, { details: { scope: rule.join(' ') } });
}
