import { EdgeError } from '../../core/errors.js';
import type { ColumnType } from './types.js';

/**
 * The names caller SQL may not reach, and `auth.users`, the one window onto the auth
 * store it may read (docs/sql.md "Reserved tables and auth.users").
 *
 * The platform's own tables live in the project file as `"_svc_<service>.<table>"`
 * (password hashes, refresh-token hashes, sealed secrets and webhook signing keys, the
 * change log, the catalog): no caller's SQL names one, the service role's included, in any
 * spelling (`_svc_auth.users`, `"_SVC_AUTH".users`, `public."_svc_auth.users"`, a table or
 * index name of its own starting with `_svc_`).
 */
export const RESERVED_PREFIX = '_svc_';

/** Whether a (lower-cased) schema, table or index name belongs to the platform. */
export const isReservedName = (name: string): boolean => name.toLowerCase().startsWith(RESERVED_PREFIX);

export function reservedRefusal(name: string): EdgeError {
  return new EdgeError('invalid_request', `relation "${name}" is reserved: the platform's own tables (the _svc_* schemas) are not reachable from SQL, with any key`);
}

/** The physical name the emitter gives `auth.users` (a dot: no caller's table can be called so). */
export const AUTH_USERS = 'auth.users';

/**
 * `auth.users` as Supabase users read it, over the auth store's table: these columns only,
 * never a password hash, a token or a session. `phone` is always NULL (no phone sign-in
 * here); `email_confirmed_at` is not recorded by the auth store: it is the user's
 * `created_at` once the email is verified, NULL before.
 */
export const AUTH_USERS_SQL =
  `(SELECT id, email, NULL AS phone, created_at, updated_at, last_sign_in_at, ` +
  `CASE WHEN email_verified = 1 THEN created_at END AS email_confirmed_at, ` +
  `user_metadata AS raw_user_meta_data, app_metadata AS raw_app_meta_data, is_anonymous ` +
  `FROM "_svc_auth.users")`;

export const AUTH_USERS_COLUMNS: readonly ColumnType[] = [
  { name: 'id', type: 'uuid', pk: true },
  { name: 'email', type: 'text' },
  { name: 'phone', type: 'text' },
  { name: 'created_at', type: 'timestamptz' },
  { name: 'updated_at', type: 'timestamptz' },
  { name: 'last_sign_in_at', type: 'timestamptz' },
  { name: 'email_confirmed_at', type: 'timestamptz' },
  { name: 'raw_user_meta_data', type: 'jsonb' },
  { name: 'raw_app_meta_data', type: 'jsonb' },
  { name: 'is_anonymous', type: 'bool' },
];

export function authUsersReadOnly(): EdgeError {
  return new EdgeError('invalid_request', 'auth.users is read-only here: users are made, changed and deleted through /auth (sign-up, the admin API)');
}

/** A write or DDL naming one of the read-only introspection views (introspect.ts). */
export function readOnlyView(name: string): EdgeError {
  return new EdgeError('invalid_request', `${name} is a read-only view of the project's tables`);
}

/**
 * Two statements that change SQLite's schema_version and leave nothing behind: for a statement
 * that writes only the catalog (enum labels, comments, a LANGUAGE sql function's body), since
 * translations and the rows API's catalog are cached by schema_version.
 */
export const SCHEMA_BUMP_SQL: readonly string[] = [
  `CREATE TRIGGER "_svc_meta.schema_bump" AFTER INSERT ON "_svc_meta.migrations" BEGIN SELECT 1; END`,
  `DROP TRIGGER "_svc_meta.schema_bump"`,
];
