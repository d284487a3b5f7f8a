/** Types of profiles columns a user field can have (contract "User field definition"). */
export const FIELD_TYPES = ['text', 'bool', 'int8', 'timestamptz', 'float8'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

export interface UserField {
  readonly name: string;
  readonly type: FieldType;
  readonly required: boolean;
  readonly in_signup: boolean;
}

/** A row of `_svc_auth.users` as stored. */
export interface UserRow {
  readonly id: string;
  readonly email: string | null;
  readonly password_hash: string | null;
  readonly name: string | null;
  readonly role: string;
  readonly email_verified: number;
  readonly user_metadata: string;
  readonly app_metadata: string;
  readonly is_anonymous: number;
  readonly created_at: string;
  readonly updated_at: string;
  readonly last_sign_in_at: string | null;
}

/** The user object of the API (docs/api.md "Auth"). */
export interface User {
  id: string;
  email: string | null;
  name: string | null;
  role: string;
  email_verified: boolean;
  user_metadata: Record<string, unknown>;
  metadata: Record<string, unknown>;
  app_metadata: Record<string, unknown>;
  is_anonymous: boolean;
  created_at: string;
  updated_at: string;
  last_sign_in_at: string | null;
}

export interface Role {
  readonly name: string;
  readonly description: string;
}

export const BUILT_IN_ROLES: readonly Role[] = [
  { name: 'authenticated', description: 'every signed-in user (built in)' },
  { name: 'anon', description: 'requests without a user (built in)' },
];

/** Shapes a stored row as the API's user object. */
export function toUser(r: UserRow): User {
  const userMeta = JSON.parse(r.user_metadata) as Record<string, unknown>;
  return {
    id: r.id,
    email: r.email,
    name: r.name,
    role: r.role,
    email_verified: r.email_verified === 1,
    user_metadata: userMeta,
    metadata: userMeta,
    app_metadata: JSON.parse(r.app_metadata) as Record<string, unknown>,
    is_anonymous: r.is_anonymous === 1,
    created_at: r.created_at,
    updated_at: r.updated_at,
    last_sign_in_at: r.last_sign_in_at,
  };
}
