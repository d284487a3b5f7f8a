/**
 * Who is calling, as every layer sees it: the scopes an API key can carry and the context the
 * edge pipeline derives from the credentials (key, user token, operator session). The lowest
 * layer (src/core/): it imports nothing of ours, so src/control/ (keys), src/sql/ (RLS) and
 * the services use it without importing the edge.
 */
/** Scopes an API key can carry (docs/api.md "Keys, scopes and sessions"). */
export const SCOPES = [
  'data:read',
  'data:write',
  'storage:read',
  'storage:write',
  'realtime:subscribe',
  'functions:invoke',
  'notifications:send',
  'auth:admin',
] as const;
export type Scope = (typeof SCOPES)[number];
/** The scopes a publishable key may carry (docs/api.md "Keys, scopes and sessions"). */
export const PUBLISHABLE_SCOPES: readonly Scope[] = [
  'data:read',
  'data:write',
  'storage:read',
  'storage:write',
  'realtime:subscribe',
  'functions:invoke',
];

/** Claims of a verified user access token. */
export interface UserClaims {
  readonly id: string;
  readonly role: string;
  readonly sessionId: string;
  readonly aal: string;
  readonly claims: Readonly<Record<string, unknown>>;
}

export interface Operator {
  readonly id: string;
  readonly email: string;
}

export interface AuthContext {
  readonly projectId: string;
  readonly keyId: string | null;
  readonly scopes: ReadonlySet<Scope>;
  /** `service_role` bypasses RLS; otherwise the user's role or `anon`. */
  readonly role: string;
  readonly operator: Operator | null;
  readonly user: UserClaims | null;
}
