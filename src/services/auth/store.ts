import type { ProjectLease } from '../../project/registry.js';
import { schemaChanged } from '../../project/schema-version.js';
import { quoteIdent } from '../../project/schemas.js';
import type { FieldType, Role, UserField, UserRow } from './types.js';

// All SQL of the auth service. Table names are the reserved-schema tables of 0002_auth.sql.

const USERS = '"_svc_auth.users"';
const SESSIONS = '"_svc_auth.sessions"';
const REFRESH = '"_svc_auth.refresh_tokens"';
const CONFIG = '"_svc_auth.config"';
const FIELDS = '"_svc_meta.auth_user_fields"';
const ROLES = '"_svc_meta.auth_roles"';

/** The SQLite declared type of each field type (its affinity follows from the name). */
export const SQL_TYPE: Record<FieldType, string> = {
  text: 'TEXT',
  bool: 'BOOLEAN',
  int8: 'INT8',
  timestamptz: 'TIMESTAMPTZ',
  float8: 'FLOAT8',
};

/** Runs `fn` in one IMMEDIATE transaction (writes never upgrade a read lock). */
export const tx = <T>(p: ProjectLease, fn: () => T): T => p.db.transaction(fn).immediate();

export function configValue(p: ProjectLease, key: string): string | null {
  const row = p.stmt(`SELECT value FROM ${CONFIG} WHERE key = ?`).get(key) as { value: string } | undefined;
  return row?.value ?? null;
}

/** Replaces a value. */
export function setConfigValue(p: ProjectLease, key: string, value: string): void {
  p.stmt(`INSERT INTO ${CONFIG} (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`).run(key, value);
}

/** Sets a value unless one exists; returns the stored value (the first writer wins). */
export function initConfigValue(p: ProjectLease, key: string, value: string): string {
  p.stmt(`INSERT OR IGNORE INTO ${CONFIG} (key, value) VALUES (?, ?)`).run(key, value);
  return configValue(p, key)!;
}

// --- users

export const userById = (p: ProjectLease, id: string): UserRow | undefined =>
  p.stmt(`SELECT * FROM ${USERS} WHERE id = ?`).get(id) as UserRow | undefined;

export const userByEmail = (p: ProjectLease, email: string): UserRow | undefined =>
  p.stmt(`SELECT * FROM ${USERS} WHERE email = ?`).get(email) as UserRow | undefined;

export function insertUser(p: ProjectLease, u: UserRow): void {
  p.stmt(
    `INSERT INTO ${USERS} (id, email, password_hash, name, role, email_verified, user_metadata, app_metadata,
       is_anonymous, created_at, updated_at, last_sign_in_at)
     VALUES (@id, @email, @password_hash, @name, @role, @email_verified, @user_metadata, @app_metadata,
       @is_anonymous, @created_at, @updated_at, @last_sign_in_at)`,
  ).run(u);
}

const USER_COLUMNS = new Set([
  'email', 'password_hash', 'name', 'role', 'email_verified', 'user_metadata', 'app_metadata', 'is_anonymous',
  'updated_at', 'last_sign_in_at',
]);

export type UserPatch = { -readonly [K in Exclude<keyof UserRow, 'id' | 'created_at'>]?: UserRow[K] };

/** Updates the given columns of a user; false when there is no such user. */
export function updateUser(p: ProjectLease, id: string, patch: UserPatch): boolean {
  const cols = Object.keys(patch).filter((k) => USER_COLUMNS.has(k));
  if (cols.length === 0) return userById(p, id) !== undefined;
  const sets = cols.map((c) => `${c} = @${c}`).join(', ');
  return p.stmt(`UPDATE ${USERS} SET ${sets} WHERE id = @id`).run({ ...pick(patch, cols), id }).changes === 1;
}

export const deleteUser = (p: ProjectLease, id: string): boolean =>
  p.stmt(`DELETE FROM ${USERS} WHERE id = ?`).run(id).changes === 1;

/** A page of users, newest first; `email` matches a substring (case-insensitive). */
export function listUsers(p: ProjectLease, q: { email: string | null; role: string | null; limit: number; offset: number }) {
  const where: string[] = [];
  const args: Record<string, unknown> = { limit: q.limit, offset: q.offset };
  if (q.email !== null) {
    where.push(`email LIKE @email ESCAPE '\\'`);
    args.email = `%${q.email.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  }
  if (q.role !== null) {
    where.push('role = @role');
    args.role = q.role;
  }
  const w = where.length ? `WHERE ${where.join(' AND ')}` : '';
  const rows = p.stmt(`SELECT * FROM ${USERS} ${w} ORDER BY id DESC LIMIT @limit OFFSET @offset`).all(args) as UserRow[];
  const { n } = p.stmt(`SELECT count(*) AS n FROM ${USERS} ${w}`).get(args) as { n: number };
  return { rows, total: n };
}

export const usersWithRole = (p: ProjectLease, role: string): number =>
  (p.stmt(`SELECT count(*) AS n FROM ${USERS} WHERE role = ?`).get(role) as { n: number }).n;

// --- sessions and refresh tokens

export interface SessionRow {
  readonly id: string;
  readonly user_id: string;
  readonly aal: string;
  readonly created_at: string;
  readonly refreshed_at: string;
  readonly revoked_at: string | null;
}

export interface RefreshRow {
  readonly hash: string;
  readonly session_id: string;
  readonly access_jti: string;
  readonly issued_at: string;
  readonly expires_at: string;
  readonly used_at: string | null;
}

export function insertSession(p: ProjectLease, s: { id: string; userId: string; aal: string; now: string }): void {
  p.stmt(`INSERT INTO ${SESSIONS} (id, user_id, aal, created_at, refreshed_at) VALUES (?, ?, ?, ?, ?)`).run(
    s.id, s.userId, s.aal, s.now, s.now,
  );
}

export const sessionById = (p: ProjectLease, id: string): SessionRow | undefined =>
  p.stmt(`SELECT * FROM ${SESSIONS} WHERE id = ?`).get(id) as SessionRow | undefined;

export const touchSession = (p: ProjectLease, id: string, now: string): void => {
  p.stmt(`UPDATE ${SESSIONS} SET refreshed_at = ? WHERE id = ?`).run(now, id);
};

/** Marks a session revoked; false when it already was (or does not exist). */
export const revokeSession = (p: ProjectLease, id: string, now: string): boolean =>
  p.stmt(`UPDATE ${SESSIONS} SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`).run(now, id).changes === 1;

/** Revokes every live session of a user; returns their ids. */
export function revokeUserSessions(p: ProjectLease, userId: string, now: string): string[] {
  const ids = p.stmt(`SELECT id FROM ${SESSIONS} WHERE user_id = ? AND revoked_at IS NULL`).all(userId) as { id: string }[];
  p.stmt(`UPDATE ${SESSIONS} SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL`).run(now, userId);
  return ids.map((r) => r.id);
}

export function insertRefresh(p: ProjectLease, r: Omit<RefreshRow, 'used_at'>): void {
  p.stmt(
    `INSERT INTO ${REFRESH} (hash, session_id, access_jti, issued_at, expires_at) VALUES (@hash, @session_id, @access_jti, @issued_at, @expires_at)`,
  ).run(r);
}

export const refreshByHash = (p: ProjectLease, hash: string): RefreshRow | undefined =>
  p.stmt(`SELECT * FROM ${REFRESH} WHERE hash = ?`).get(hash) as RefreshRow | undefined;

/** Marks a refresh token used; false when it already was (reuse). */
export const useRefresh = (p: ProjectLease, hash: string, now: string): boolean =>
  p.stmt(`UPDATE ${REFRESH} SET used_at = ? WHERE hash = ? AND used_at IS NULL`).run(now, hash).changes === 1;

/** Access tokens possibly still unexpired whose session or pair was revoked since `since`. */
export function recentRevocations(p: ProjectLease, since: string): { sessions: string[]; jtis: string[] } {
  const sessions = p.stmt(`SELECT id FROM ${SESSIONS} WHERE revoked_at IS NOT NULL AND revoked_at >= ?`).all(since) as { id: string }[];
  const jtis = p.stmt(`SELECT access_jti FROM ${REFRESH} WHERE used_at IS NOT NULL AND used_at >= ?`).all(since) as { access_jti: string }[];
  return { sessions: sessions.map((r) => r.id), jtis: jtis.map((r) => r.access_jti) };
}

/** Forgets refresh tokens expired before `before` (the used ones are kept until then for reuse detection). */
export const pruneRefresh = (p: ProjectLease, before: string): number =>
  p.stmt(`DELETE FROM ${REFRESH} WHERE expires_at < ?`).run(before).changes;

// --- profiles

/** Column name → declared type of public.profiles. */
export function profileColumns(p: ProjectLease): Map<string, string> {
  const rows = p.db.prepare('SELECT name, type FROM pragma_table_info(?)').all('profiles') as { name: string; type: string }[];
  return new Map(rows.map((r) => [r.name, r.type]));
}

/**
 * Makes the user's profiles row; false when it is there already: an SQL trigger on auth.users
 * (`handle_new_user`, docs/sql.md "Functions and triggers") made it, and its row wins.
 */
export function insertProfile(p: ProjectLease, id: string, name: string | null, values: Record<string, unknown>, now: string): boolean {
  const cols = Object.keys(values);
  const names = ['id', 'name', 'created_at', 'updated_at', ...cols].map(quoteIdent).join(', ');
  const marks = new Array(4 + cols.length).fill('?').join(', ');
  return p.stmt(`INSERT INTO profiles (${names}) VALUES (${marks}) ON CONFLICT (id) DO NOTHING`).run(id, name, now, now, ...cols.map((c) => values[c])).changes > 0;
}

/** Sets the given profile columns (the row is created when missing). */
export function updateProfile(p: ProjectLease, id: string, values: Record<string, unknown>, now: string): void {
  const cols = Object.keys(values);
  if (cols.length === 0) return;
  const sets = cols.map((c) => `${quoteIdent(c)} = ?`).join(', ');
  const r = p.stmt(`UPDATE profiles SET ${sets}, updated_at = ? WHERE id = ?`).run(...cols.map((c) => values[c]), now, id);
  if (r.changes === 0) {
    const { name = null, ...rest } = values;
    insertProfile(p, id, name as string | null, rest, now);
  }
}

export const profileById = (p: ProjectLease, id: string): Record<string, unknown> | undefined =>
  p.stmt('SELECT * FROM profiles WHERE id = ?').get(id) as Record<string, unknown> | undefined;

/** A profiles row as the db service presents it (`data`: every column but id and timestamps; bool fields as booleans). */
export function profileData(p: ProjectLease, id: string): Record<string, unknown> | undefined {
  const row = profileById(p, id);
  if (!row) return undefined;
  const bools = new Set(userFields(p).filter((f) => f.type === 'bool').map((f) => f.name));
  const data: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) {
    if (k === 'id' || k === 'created_at' || k === 'updated_at') continue;
    data[k] = bools.has(k) && (v === 0 || v === 1) ? v === 1 : v;
  }
  return data;
}

export const deleteProfile = (p: ProjectLease, id: string): void => {
  p.stmt('DELETE FROM profiles WHERE id = ?').run(id);
};

export const addProfileColumn = (p: ProjectLease, name: string, type: FieldType): void => {
  p.db.exec(`ALTER TABLE profiles ADD COLUMN ${quoteIdent(name)} ${SQL_TYPE[type]}`);
  schemaChanged(p);
};

/**
 * Drops the indexes naming a profiles column (a UNIQUE kept from SQL's `create table profiles`,
 * docs/sql.md "The profiles table"): SQLite refuses to drop an indexed column.
 */
function dropIndexesOf(p: ProjectLease, name: string): void {
  const rows = p.db
    .prepare(`SELECT l.name FROM pragma_index_list('profiles') AS l WHERE l.origin = 'c' AND EXISTS (SELECT 1 FROM pragma_index_info(l.name) AS i WHERE i.name = ?)`)
    .all(name) as { name: string }[];
  for (const r of rows) p.db.exec(`DROP INDEX ${quoteIdent(r.name)}`);
}

export const dropProfileColumn = (p: ProjectLease, name: string): void => {
  dropIndexesOf(p, name);
  p.db.exec(`ALTER TABLE profiles DROP COLUMN ${quoteIdent(name)}`);
  schemaChanged(p);
};

export function profileValues(p: ProjectLease, column: string): { id: string; v: unknown }[] {
  return p.db.prepare(`SELECT id, ${quoteIdent(column)} AS v FROM profiles WHERE ${quoteIdent(column)} IS NOT NULL`).all() as {
    id: string;
    v: unknown;
  }[];
}

/**
 * Changes a column's declared type: a new column is added, filled with the converted
 * values, the old one dropped and the new one renamed (SQLite has no ALTER COLUMN TYPE).
 */
export function retypeProfileColumn(p: ProjectLease, name: string, type: FieldType, values: { id: string; v: unknown }[]): void {
  const tmp = `${name}__retype`;
  p.db.exec(`ALTER TABLE profiles ADD COLUMN ${quoteIdent(tmp)} ${SQL_TYPE[type]}`);
  const set = p.db.prepare(`UPDATE profiles SET ${quoteIdent(tmp)} = ? WHERE id = ?`);
  for (const r of values) set.run(r.v, r.id);
  dropIndexesOf(p, name);
  p.db.exec(`ALTER TABLE profiles DROP COLUMN ${quoteIdent(name)}`);
  p.db.exec(`ALTER TABLE profiles RENAME COLUMN ${quoteIdent(tmp)} TO ${quoteIdent(name)}`);
  schemaChanged(p);
}

// --- user fields and roles

export function userFields(p: ProjectLease): UserField[] {
  const rows = p.stmt(`SELECT name, type, required, in_signup FROM ${FIELDS} ORDER BY position`).all() as {
    name: string;
    type: FieldType;
    required: number;
    in_signup: number;
  }[];
  return rows.map((r) => ({ name: r.name, type: r.type, required: r.required === 1, in_signup: r.in_signup === 1 }));
}

export function replaceUserFields(p: ProjectLease, fields: readonly UserField[]): void {
  p.stmt(`DELETE FROM ${FIELDS}`).run();
  const ins = p.stmt(`INSERT INTO ${FIELDS} (name, type, required, in_signup, position) VALUES (?, ?, ?, ?, ?)`);
  fields.forEach((f, i) => ins.run(f.name, f.type, f.required ? 1 : 0, f.in_signup ? 1 : 0, i));
}

export const customRoles = (p: ProjectLease): Role[] =>
  p.stmt(`SELECT name, description FROM ${ROLES} ORDER BY name`).all() as Role[];

export const roleExists = (p: ProjectLease, name: string): boolean =>
  p.stmt(`SELECT 1 FROM ${ROLES} WHERE name = ?`).get(name) !== undefined;

export function replaceRoles(p: ProjectLease, roles: readonly Role[], now: string): void {
  const keep = new Set(roles.map((r) => r.name));
  for (const r of customRoles(p)) if (!keep.has(r.name)) p.stmt(`DELETE FROM ${ROLES} WHERE name = ?`).run(r.name);
  const up = p.stmt(
    `INSERT INTO ${ROLES} (name, description, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET description = excluded.description`,
  );
  for (const r of roles) up.run(r.name, r.description, now);
}

function pick<T extends object>(o: T, keys: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k] = (o as Record<string, unknown>)[k];
  return out;
}
