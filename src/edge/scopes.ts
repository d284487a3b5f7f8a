import { missingScope } from './errors.js';
import type { AuthContext, Scope } from './route.js';

/**
 * The scope check of the edge pipeline, for services that learn which scope a request
 * needs only from its body (a JSON-RPC method, a GraphQL operation): throws the same
 * 401 `missing_scope` the pipeline throws for a route's declared scope.
 */
export function requireScope(auth: AuthContext, scope: Scope): void {
  if (!auth.scopes.has(scope)) throw missingScope(scope);
}
