import { v7 as uuidv7 } from 'uuid';
import type { Config } from '../../config.js';
import { digestEquals } from '../../control/random.js';
import type { Sealer } from '../../control/seal.js';
import { EdgeError, conflict, invalidField, notFound, unauthorized } from '../../core/errors.js';
import type { UserClaims } from '../../core/auth-context.js';
import type { EventBus } from '../../events/bus.js';
import { appendChange, catchUpChanges, expectChanges, publishChanges, storedImage, type Change, type ChangeOp, type RowImages } from '../../events/change-log.js';
import type { ProjectLease, ProjectRegistry } from '../../project/registry.js';
import { checkPassword, hashPassword } from './passwords.js';
import * as store from './store.js';
import { REFRESH_PREFIX, Tokens, newRefreshToken, refreshHash, type IssuedAccess } from './tokens.js';
import { toUser, type User, type UserRow } from './types.js';
import * as v from './validate.js';

export interface Session {
  access_token: string;
  refresh_token: string;
  token_type: 'bearer';
  expires_in: number;
  expires_at: number;
  user: User;
}

export type SessionBody = Session & { tokens: Session };

/** The rows a delete changes through foreign keys, in change-event form (the db service's `cascade`). */
export type RowCascade = (
  p: ProjectLease,
  table: string,
  id: string,
) => Array<{ op: ChangeOp; table: string; id: string; data: Record<string, unknown> | null; old: Record<string, unknown> } & RowImages>;

const USER_TTL_MS = 1000;
const MAX_CACHED_USERS = 50_000;
const ME_KEYS = new Set(['name', 'user_metadata', 'metadata', 'data', 'email', 'password']);
const FORBIDDEN_SELF = ['app_metadata', 'role', 'email_verified', 'is_anonymous', 'id'];

/**
 * Sign-up, sign-in and sessions (docs/api.md "Auth"). No HTTP here: routes.ts
 * parses and answers. Writes run in one transaction; events are emitted after commit.
 */
export class AuthService {
  readonly tokens: Tokens;
  readonly #config: Config;
  readonly #bus: EventBus;
  #rowCascade: RowCascade | null = null;
  readonly #now: () => number;
  readonly #users = new Map<string, { user: User; until: number }>();

  constructor(config: Config, registry: ProjectRegistry, bus: EventBus, sealer: Sealer, now: () => number = Date.now) {
    this.#config = config;
    this.#bus = bus;
    this.#now = now;
    this.tokens = new Tokens(registry, sealer, config.authAccessTtlS, now);
  }

  /** How the db service finds the rows a delete changes through foreign keys (set by the server). */
  setRowCascade(fn: RowCascade): void {
    this.#rowCascade = fn;
  }

  /** The pipeline's bearer hook: verifies `lca_…` without reading SQLite (after the first use). */
  readonly verifyBearer = (projectId: string, token: string): UserClaims | Promise<UserClaims> => this.tokens.verify(projectId, token);

  async register(p: ProjectLease, body: v.Body): Promise<SessionBody> {
    const email = v.email(body.email);
    const password = v.password(body.password);
    const name = v.optionalName(body.name) ?? null;
    const meta = v.userMetadataOf(body) ?? {};
    const fieldValues = v.signupFields(store.userFields(p), body);
    if (store.userByEmail(p, email)) throw conflict('a user with this e-mail already exists');
    const hash = await hashPassword(password);
    const row = this.#newUserRow({ email, password_hash: hash, name, user_metadata: JSON.stringify(meta) });
    const changes: Change[] = [];
    let triggered = false;
    expectChanges(p);
    const session = await this.#startSession(p, row, () => {
      store.insertUser(p, row);
      // note: a trigger on auth.users may have made the profiles row (and logged its change) already.
      if (store.insertProfile(p, row.id, name, fieldValues, row.created_at)) changes.push(profileChange(p, 'insert', row.id, null, null, row.created_at));
      else triggered = true;
    });
    publishChanges(this.#bus, p, changes);
    if (triggered) catchUpChanges(this.#bus, p);
    this.#emitCreated(p.projectId, row);
    return session;
  }

  async login(p: ProjectLease, body: v.Body): Promise<SessionBody> {
    if (typeof body.email !== 'string') throw invalidField('email', 'must be a string');
    if (typeof body.password !== 'string') throw invalidField('password', 'must be a string');
    const user = store.userByEmail(p, body.email.trim().toLowerCase());
    // note: an unknown e-mail is checked against a dummy hash so both failures take about as long.
    const ok = await checkPassword(user?.password_hash ?? null, body.password);
    if (!user || !ok) throw new EdgeError('invalid_credentials', 'invalid e-mail or password');
    // note: MFA seam — when the user has a verified factor, answer {mfa_required, mfa_token} here instead.
    const now = this.#iso();
    const signedIn = { ...user, last_sign_in_at: now };
    const session = await this.#startSession(p, signedIn, () => {
      store.updateUser(p, user.id, { last_sign_in_at: now });
    });
    this.forgetUser(p.projectId, user.id);
    return session;
  }

  async anonymous(p: ProjectLease): Promise<SessionBody> {
    const row = this.#newUserRow({ is_anonymous: 1 });
    const changes: Change[] = [];
    let triggered = false;
    expectChanges(p);
    const session = await this.#startSession(p, row, () => {
      store.insertUser(p, row);
      if (store.insertProfile(p, row.id, null, {}, row.created_at)) changes.push(profileChange(p, 'insert', row.id, null, null, row.created_at));
      else triggered = true;
    });
    publishChanges(this.#bus, p, changes);
    if (triggered) catchUpChanges(this.#bus, p);
    this.#emitCreated(p.projectId, row);
    return session;
  }

  /** Rotates the pair; a used refresh token revokes its whole session (reuse detection). */
  async refresh(p: ProjectLease, body: v.Body): Promise<SessionBody> {
    const token = body.refresh_token;
    if (typeof token !== 'string' || !token.startsWith(REFRESH_PREFIX)) {
      throw invalidField('refresh_token', `must be a refresh token (${REFRESH_PREFIX}…)`);
    }
    const hash = refreshHash(token);
    const byHash = store.refreshByHash(p, hash);
    // note: the index lookup finds the row; the digests are then compared in constant time.
    const found = byHash && digestEquals(byHash.hash, hash) ? byHash : undefined;
    const session = found && store.sessionById(p, found.session_id);
    if (!found || !session || session.revoked_at !== null) throw unauthorized('invalid refresh token');
    if (found.used_at !== null) return this.#reuse(p, token, found, session);
    if (Date.parse(found.expires_at) <= this.#now()) throw unauthorized('the refresh token has expired; sign in again');
    const user = store.userById(p, session.user_id);
    if (!user) throw unauthorized('invalid refresh token');
    const next = this.tokens.successor(p.projectId, token);
    const issued = { access: await this.#access(p.projectId, user, session.id, session.aal), refresh: next.token, refreshHash: next.hash };
    const now = this.#iso();
    const rotated = store.tx(p, () => {
      // note: checked again inside the transaction: another request may have used it during the await.
      if (!store.useRefresh(p, hash, now)) return false;
      store.touchSession(p, session.id, now);
      store.insertRefresh(p, this.#refreshRow(issued, session.id));
      return true;
    });
    // note: a parallel refresh of the same token rotated it first: a reuse within the interval.
    if (!rotated) return this.#reuse(p, token, store.refreshByHash(p, hash)!, session);
    this.tokens.revoked.add(found.access_jti, this.tokens.revokeUntil());
    return sessionBody(issued.access, issued.refresh, toUser(user));
  }

  /**
   * A refresh token presented again after it was used. Within the reuse interval of its use
   * (two tabs, a retried request) the pair its rotation issued is answered again — followed
   * down the chain while each successor was itself used within the interval — the refresh
   * token re-derived (Tokens.successor), the access token re-signed with the same id. Past
   * the interval, or when the chain has no live successor, the whole session is revoked.
   */
  async #reuse(p: ProjectLease, token: string, used: store.RefreshRow, session: store.SessionRow): Promise<SessionBody> {
    const windowMs = this.#config.authRefreshReuseIntervalS * 1000;
    const now = this.#now();
    let current = token;
    let row: store.RefreshRow | undefined = used;
    // note: bounded: a chain longer than this within one interval is not two tabs.
    for (let hops = 0; windowMs > 0 && hops < 8 && row !== undefined && row.used_at !== null && now - Date.parse(row.used_at) <= windowMs; hops++) {
      const next = this.tokens.successor(p.projectId, current);
      row = store.refreshByHash(p, next.hash);
      if (row === undefined || row.session_id !== session.id) break;
      current = next.token;
      if (row.used_at !== null) continue;
      if (Date.parse(row.expires_at) <= now) break;
      const user = store.userById(p, session.user_id);
      if (!user) throw unauthorized('invalid refresh token');
      const access = await this.#access(p.projectId, user, session.id, session.aal, { jti: row.access_jti, iat: Math.floor(Date.parse(row.issued_at) / 1000) });
      // note: the session may have been revoked (logout, a reuse past the interval) during the await.
      if (store.sessionById(p, session.id)?.revoked_at !== null) throw unauthorized('invalid refresh token');
      return sessionBody(access, current, toUser(user));
    }
    this.#revoke(p, session.id);
    throw unauthorized('refresh token already used; the session has been revoked');
  }

  logout(p: ProjectLease, user: UserClaims): void {
    this.#revoke(p, user.sessionId);
  }

  /**
   * The user of a token. Served from a short-lived cache (GET /auth/me is a hot path and
   * a SQLite read costs more than the rest of the request); every write made here drops
   * the entry, and a write made outside the auth service shows within USER_TTL_MS.
   */
  me(p: ProjectLease, userId: string): User {
    const key = `${p.projectId}\n${userId}`;
    const hit = this.#users.get(key);
    const now = this.#now();
    if (hit && hit.until > now) return hit.user;
    const row = store.userById(p, userId);
    if (!row) throw unauthorized('the user no longer exists');
    const user = toUser(row);
    if (this.#users.size >= MAX_CACHED_USERS) this.#users.clear();
    this.#users.set(key, { user, until: now + USER_TTL_MS });
    return user;
  }

  /** Drops a cached user after a change (admin routes call it after their writes). */
  forgetUser(projectId: string, userId: string): void {
    this.#users.delete(`${projectId}\n${userId}`);
  }

  /** The user's own changes: `name`, `user_metadata`; `email` + `password` upgrade an anonymous user. */
  async updateMe(p: ProjectLease, userId: string, body: v.Body): Promise<User> {
    for (const k of FORBIDDEN_SELF) {
      if (body[k] !== undefined) throw new EdgeError('forbidden', `${k} can only be changed by an administrator`);
    }
    const row = store.userById(p, userId);
    if (!row) throw unauthorized('the user no longer exists');
    const fields = store.userFields(p);
    const fieldNames = new Set(fields.map((f) => f.name));
    v.onlyKeys(body, new Set([...ME_KEYS, ...fieldNames]));
    const patch: store.UserPatch = {};
    const profile: Record<string, unknown> = {};
    const name = v.optionalName(body.name);
    if (name !== undefined) patch.name = profile.name = name;
    const meta = v.userMetadataOf(body);
    if (meta) patch.user_metadata = JSON.stringify(v.mergeMetadata(JSON.parse(row.user_metadata), meta, 'user_metadata'));
    for (const f of fields) if (body[f.name] !== undefined) profile[f.name] = v.fieldValue(f, body[f.name]);
    if (body.email !== undefined || body.password !== undefined) {
      Object.assign(patch, await this.#upgrade(p, row, body, fields));
    }
    const now = this.#iso();
    const changes: Change[] = [];
    store.tx(p, () => {
      store.updateUser(p, userId, { ...patch, updated_at: now });
      if (Object.keys(profile).length === 0) return;
      const old = store.profileData(p, userId);
      const oldRow = profileImage(p, userId);
      store.updateProfile(p, userId, profile, now);
      changes.push(profileChange(p, old ? 'update' : 'insert', userId, old ?? null, oldRow, now));
    });
    publishChanges(this.#bus, p, changes);
    this.forgetUser(p.projectId, userId);
    return toUser(store.userById(p, userId)!);
  }

  async #upgrade(p: ProjectLease, row: UserRow, body: v.Body, fields: ReturnType<typeof store.userFields>): Promise<store.UserPatch> {
    if (row.is_anonymous !== 1) {
      throw invalidField(body.email !== undefined ? 'email' : 'password', 'can only be set here when upgrading an anonymous user');
    }
    const email = v.email(body.email);
    const password = v.password(body.password);
    v.signupFields(fields, body, store.profileById(p, row.id));
    if (store.userByEmail(p, email)) throw conflict('a user with this e-mail already exists');
    return { email, password_hash: await hashPassword(password), is_anonymous: 0 };
  }

  // --- administration (auth:admin; the rest is in admin.ts)

  /** Deletes a user, their profiles row and sessions (their tokens fail at once). */
  deleteUser(p: ProjectLease, id: string): void {
    const now = this.#iso();
    const changes: Change[] = [];
    const revoked = store.tx(p, () => {
      const sessions = store.revokeUserSessions(p, id, now);
      const old = store.profileData(p, id);
      if (old) {
        const oldRow = profileImage(p, id);
        // note: rows of user tables that reference profiles change with it (ON DELETE CASCADE / SET NULL).
        const cascaded = this.#rowCascade?.(p, 'profiles', id) ?? [];
        store.deleteProfile(p, id);
        changes.push(appendChange(p, 'delete', 'profiles', id, null, old, now, { newRow: null, oldRow }));
        for (const c of cascaded) changes.push(appendChange(p, c.op, c.table, c.id, c.data, c.old, now, c));
      }
      if (!store.deleteUser(p, id)) throw notFound('user', id);
      return sessions;
    });
    publishChanges(this.#bus, p, changes);
    this.forgetUser(p.projectId, id);
    this.#revoked(p.projectId, revoked);
  }

  // --- internals

  #newUserRow(o: Partial<UserRow>): UserRow {
    const now = this.#iso();
    return {
      id: uuidv7(),
      email: null,
      password_hash: null,
      name: null,
      role: 'authenticated',
      email_verified: 0,
      user_metadata: '{}',
      app_metadata: '{}',
      is_anonymous: 0,
      created_at: now,
      updated_at: now,
      last_sign_in_at: now,
      ...o,
    };
  }

  /** Issues a pair for a new session and commits `write` with it in one transaction. */
  async #startSession(p: ProjectLease, user: UserRow, write: () => void): Promise<SessionBody> {
    const sessionId = uuidv7();
    const aal = 'aal1';
    const issued = await this.#pair(p.projectId, user, sessionId, aal);
    store.tx(p, () => {
      write();
      store.insertSession(p, { id: sessionId, userId: user.id, aal, now: this.#iso() });
      store.insertRefresh(p, this.#refreshRow(issued, sessionId));
    });
    return sessionBody(issued.access, issued.refresh, toUser(user));
  }

  async #pair(projectId: string, user: UserRow, sessionId: string, aal: string) {
    const access = await this.#access(projectId, user, sessionId, aal);
    return { access, ...splitRefresh(newRefreshToken()) };
  }

  #access(projectId: string, user: UserRow, sessionId: string, aal: string, again?: { jti: string; iat: number }): Promise<IssuedAccess> {
    return this.tokens.issue(
      projectId,
      { userId: user.id, role: user.role, sessionId, aal, email: user.email, isAnonymous: user.is_anonymous === 1, appMetadata: JSON.parse(user.app_metadata) as Record<string, unknown> },
      again,
    );
  }

  #refreshRow(issued: { access: IssuedAccess; refreshHash: string }, sessionId: string): Omit<store.RefreshRow, 'used_at'> {
    const now = this.#now();
    return {
      hash: issued.refreshHash,
      session_id: sessionId,
      access_jti: issued.access.jti,
      // note: the access token's iat, so a refresh repeated within the reuse interval re-signs the very same token.
      issued_at: new Date(issued.access.issuedAt * 1000).toISOString(),
      expires_at: new Date(now + this.#config.authRefreshTtlS * 1000).toISOString(),
    };
  }

  #revoke(p: ProjectLease, sessionId: string): void {
    if (store.revokeSession(p, sessionId, this.#iso())) this.#revoked(p.projectId, [sessionId]);
    else this.tokens.revoked.add(sessionId, this.tokens.revokeUntil());
  }

  #revoked(projectId: string, sessionIds: readonly string[]): void {
    const until = this.tokens.revokeUntil();
    const at = this.#iso();
    for (const sessionId of sessionIds) {
      this.tokens.revoked.add(sessionId, until);
      this.#bus.emit('auth.session.revoked', { projectId, at, sessionId });
    }
  }

  #emitCreated(projectId: string, row: UserRow): void {
    this.#bus.emit('auth.user.created', { projectId, at: row.created_at, userId: row.id, isAnonymous: row.is_anonymous === 1 });
  }

  #iso(): string {
    return new Date(this.#now()).toISOString();
  }
}

/** Logs a write of the user's profiles row in the change log (inside the transaction), like a db write. */
function profileChange(p: ProjectLease, op: 'insert' | 'update', id: string, old: Record<string, unknown> | null, oldRow: string | null, at: string): Change {
  return appendChange(p, op, 'profiles', id, store.profileData(p, id) ?? null, old, at, { newRow: profileImage(p, id), oldRow });
}

/** The user's profiles row as stored (the change log's row image), null when there is none. */
function profileImage(p: ProjectLease, id: string): string | null {
  const row = store.profileById(p, id);
  return row ? storedImage(row) : null;
}

function splitRefresh(r: { token: string; hash: string }): { refresh: string; refreshHash: string } {
  return { refresh: r.token, refreshHash: r.hash };
}

function sessionBody(access: IssuedAccess, refresh: string, user: User): SessionBody {
  const s: Session = {
    access_token: access.token,
    refresh_token: refresh,
    token_type: 'bearer',
    expires_in: access.expiresIn,
    expires_at: access.expiresAt,
    user,
  };
  return { ...s, tokens: { ...s } };
}
