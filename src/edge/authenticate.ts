import type { CredentialCache, ResolvedKey } from '../control/keys.js';
import { unauthorized } from '../core/errors.js';
import type { EdgeRequest, RouteDef } from './route.js';
import type { AuthContext, Scope, UserClaims } from '../core/auth-context.js';
import { SCOPES } from '../core/auth-context.js';
import { requireScope } from './scopes.js';

/** Verifies a user access token (`lca_…`) for a project; filled by the auth service. */
export type BearerVerifier = (projectId: string, token: string) => UserClaims | Promise<UserClaims>;

/** What authenticating a request consults: the credential cache, the projects, the bearer verifier. */
export interface AuthDeps {
  readonly credentials: CredentialCache;
  readonly projectExists: (id: string) => boolean;
  bearer: BearerVerifier | null;
}

const ALL_SCOPES: ReadonlySet<Scope> = new Set(SCOPES);

/**
 * Who a request is, for a route that needs auth: an operator session (`lcd_…`), or an API key
 * (with the key's scope checked against the route's) and the user its Bearer token names.
 * Credentials come from headers, or from the query string on routes with `credentials: 'query'`.
 */
export function authenticate(d: AuthDeps, req: EdgeRequest, route: RouteDef): AuthContext | Promise<AuthContext> {
  const { credentials } = d;
  let authz = req.headers.authorization;
  let keyHeader = req.headers['x-service-key'];
  let projectHeader = req.headers['x-service-project'];
  const fromQuery = route.credentials === 'query';
  if (fromQuery && req.rawQuery !== '') {
    // note: only routes that opt in read credentials from the query string (EventSource cannot
    // send headers); a header, when sent, wins. Elsewhere these parameters are ignored.
    const q = new URLSearchParams(req.rawQuery);
    keyHeader ??= q.get('apikey') ?? undefined;
    if (authz === undefined) {
      const token = q.get('access_token');
      if (token !== null) authz = `Bearer ${token}`;
    }
    projectHeader ??= q.get('project') ?? undefined;
  }
  if (route.websocket === true && req.headers['sec-websocket-protocol'] !== undefined) {
    // note: a browser's WebSocket sends no headers but subprotocols: `key.<API_KEY>` and
    // `bearer.<ACCESS_TOKEN>` carry them (docs/api.md "Realtime"); a header, when sent, wins.
    for (const p of req.headers['sec-websocket-protocol'].split(',')) {
      const v = p.trim();
      if (v.startsWith('key.')) keyHeader ??= v.slice(4);
      else if (v.startsWith('bearer.') && authz === undefined) authz = `Bearer ${v.slice(7)}`;
    }
  }
  const bearer = authz !== undefined && /^bearer /i.test(authz) ? authz.slice(7).trim() : null;
  let auth: AuthContext;
  if (route.auth === 'operator' || (keyHeader === undefined && bearer?.startsWith('lcd_'))) {
    const op = bearer?.startsWith('lcd_') ? credentials.operator(bearer) : null;
    if (!op) throw unauthorized('missing or invalid operator session');
    const projectId = projectHeader ?? '';
    if (route.auth !== 'operator' && !d.projectExists(projectId)) {
      throw unauthorized(fromQuery ? 'X-Service-Project (or ?project=) must name an existing project' : 'X-Service-Project must name an existing project');
    }
    auth = {
      projectId,
      keyId: null,
      scopes: ALL_SCOPES,
      role: 'service_role',
      operator: { id: op.id, email: op.email },
      user: null,
    };
    return auth;
  }
  if (keyHeader === undefined || keyHeader === '') {
    throw unauthorized(fromQuery ? 'missing X-Service-Key header (or apikey query parameter)' : 'missing X-Service-Key header');
  }
  const key = credentials.key(keyHeader);
  if (!key) throw unauthorized('invalid API key');
  if (route.scope !== undefined) requireScope(key.scopes, route.scope);
  // note: only routes that use a user verify the token, so a stale Authorization header
  // cannot break key-only calls such as POST /auth/refresh.
  if (route.auth !== 'key' && authz !== undefined && authz !== '') {
    if (bearer !== null && bearer.startsWith('lca_')) {
      if (!d.bearer) throw unauthorized('access tokens are not accepted here');
      const user = d.bearer(key.projectId, bearer);
      return user instanceof Promise ? user.then((u) => keyAuth(key, u)) : keyAuth(key, user);
    }
    // note: a header that names no user (`Bearer abc`, an API key as the bearer, a bare token,
    // `Basic …`) is refused rather than served as anonymous; an operator session sent with a
    // key is the one exception (the key wins, see docs/api.md).
    if (bearer === null || !bearer.startsWith('lcd_')) {
      throw unauthorized('malformed Authorization header: expected "Bearer <access token>" (lca_…)');
    }
  }
  if (route.auth === 'bearer') throw unauthorized('this request needs Authorization: Bearer <access token>');
  return keyAuth(key, null);
}

/** The auth context of an API key, with the user its Bearer token names (if any). */
function keyAuth(key: ResolvedKey, user: UserClaims | null): AuthContext {
  return {
    projectId: key.projectId,
    keyId: key.id,
    scopes: key.scopes,
    role: key.role === 'service_role' ? 'service_role' : (user?.role ?? 'anon'),
    operator: null,
    user,
  };
}
