import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import type { JWTPayload } from 'jose';
import { v7 as uuidv7 } from 'uuid';
import { EdgeError, unauthorized } from '../../core/errors.js';
import type { UserClaims } from '../../core/auth-context.js';
import type { ProjectLease, ProjectRegistry } from '../../project/registry.js';
import { randomBase62, sha256Hex } from '../../control/random.js';
import type { Sealer } from '../../control/seal.js';
import { Revocations } from './revocations.js';

// note: jose is loaded on first use (and warmed once the server listens): importing it
// eagerly adds about 100 ms to `serve`'s start.
let joseModule: Promise<typeof import('jose')> | null = null;
export const jose = (): Promise<typeof import('jose')> => (joseModule ??= import('jose'));
import { initConfigValue, recentRevocations, setConfigValue } from './store.js';

export const ACCESS_PREFIX = 'lca_';
export const REFRESH_PREFIX = 'lcr_';
const ISSUER = 'platform-edge';
const MAX_VERIFIED = 50_000;
/** Revocations are kept this long past a token's lifetime (clock slack). */
const SLACK_MS = 60_000;
/** The `_svc_auth.config` row of the project's signing secret (also its name when sealed). */
const JWT_SECRET = 'jwt_secret';

export interface AccessSubject {
  readonly userId: string;
  readonly role: string;
  readonly sessionId: string;
  readonly aal: string;
  readonly email: string | null;
  readonly isAnonymous: boolean;
  /** The user's app_metadata, a claim as in Supabase (policies read `auth.jwt() -> 'app_metadata'`). */
  readonly appMetadata?: Record<string, unknown>;
}

export interface IssuedAccess {
  readonly token: string;
  readonly jti: string;
  readonly expiresIn: number;
  /** Unix seconds. */
  readonly expiresAt: number;
  /** Unix seconds (`iat`). */
  readonly issuedAt: number;
}

interface Verified {
  /** The whole token this verification is for. */
  readonly token: string;
  readonly user: UserClaims;
  readonly expMs: number;
  readonly jti: string;
}

export const tokenExpired = (): EdgeError =>
  new EdgeError('token_expired', 'the access token has expired; refresh the session');

/** A new refresh token and the hash it is stored under. */
export function newRefreshToken(): { token: string; hash: string } {
  const token = REFRESH_PREFIX + randomBase62(32);
  return { token, hash: sha256Hex(token) };
}

export const refreshHash = (token: string): string => sha256Hex(token);
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * Issues and verifies access tokens: `lca_` + a JWT signed HS256 with a random
 * per-project secret (kept in the project's `_svc_auth.config`, sealed for the project with
 * purpose `jwt`: control/seal.ts), `aud` = project id.
 * Verification is cached per token and checks revocation in memory only.
 */
export class Tokens {
  readonly revoked: Revocations;
  readonly #registry: ProjectRegistry;
  readonly #sealer: Sealer;
  readonly #ttlS: number;
  readonly #now: () => number;
  readonly #keys = new Map<string, KeyObject>();
  /** Verified tokens per project, by signature (no per-request key string to build). */
  readonly #verified = new Map<string, Map<string, Verified>>();
  #verifiedCount = 0;

  constructor(registry: ProjectRegistry, sealer: Sealer, accessTtlS: number, now: () => number = Date.now) {
    this.#registry = registry;
    this.#sealer = sealer;
    this.#ttlS = accessTtlS;
    this.#now = now;
    this.revoked = new Revocations(now);
  }

  get ttlS(): number {
    return this.#ttlS;
  }

  /** How long a revocation must be remembered so no token it covers is still valid. */
  revokeUntil(): number {
    return this.#now() + Math.max(this.#ttlS, 0) * 1000 + SLACK_MS;
  }

  /**
   * Signs an access token. `again` re-signs the token of a pair already issued (its id and
   * issue time), for a refresh repeated within the reuse interval.
   */
  async issue(projectId: string, s: AccessSubject, again?: { jti: string; iat: number }): Promise<IssuedAccess> {
    const jti = again?.jti ?? uuidv7();
    const iat = again?.iat ?? Math.floor(this.#now() / 1000);
    const { SignJWT } = await jose();
    const jwt = await new SignJWT({
      role: s.role,
      sid: s.sessionId,
      aal: s.aal,
      email: s.email,
      is_anonymous: s.isAnonymous,
      app_metadata: s.appMetadata ?? {},
    })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(s.userId)
      .setAudience(projectId)
      .setIssuer(ISSUER)
      .setJti(jti)
      .setIssuedAt(iat)
      .setExpirationTime(iat + this.#ttlS)
      .sign(this.#key(projectId));
    return { token: ACCESS_PREFIX + jwt, jti, expiresIn: this.#ttlS, expiresAt: iat + this.#ttlS, issuedAt: iat };
  }

  /**
   * The user of a valid access token; 401 `token_expired` or `unauthorized` otherwise.
   * Synchronous for a token verified before (the hot path), a promise the first time.
   */
  verify(projectId: string, token: string): UserClaims | Promise<UserClaims> {
    // note: looked up by the signature (hashing 43 characters, not the whole token), then the
    // whole token is compared, so only the exact token verified before is accepted.
    const sig = token.slice(token.lastIndexOf('.') + 1);
    const v = this.#verified.get(projectId)?.get(sig);
    if (v !== undefined && v.token === token) return this.#check(projectId, sig, v);
    return this.#verifyJwt(projectId, token.slice(ACCESS_PREFIX.length)).then((fresh) => {
      // note: bounded so a flood of valid tokens cannot grow memory; verification is just redone.
      if (this.#verifiedCount >= MAX_VERIFIED) {
        this.#verified.clear();
        this.#verifiedCount = 0;
      }
      let forProject = this.#verified.get(projectId);
      if (forProject === undefined) this.#verified.set(projectId, (forProject = new Map()));
      if (!forProject.has(sig)) this.#verifiedCount++;
      forProject.set(sig, fresh);
      return this.#check(projectId, sig, fresh);
    });
  }

  #check(projectId: string, sig: string, v: Verified): UserClaims {
    if (v.expMs <= this.#now()) {
      if (this.#verified.get(projectId)?.delete(sig)) this.#verifiedCount--;
      throw tokenExpired();
    }
    if (this.revoked.has(v.user.sessionId) || this.revoked.has(v.jti)) throw unauthorized('the session has been revoked');
    return v.user;
  }

  /**
   * The refresh token that rotating `parent` issues: `lcr_` + 32 base62 characters of
   * HMAC-SHA-512(project secret, parent). Derived rather than random, so that a refresh
   * repeated within the reuse interval can answer the pair already issued without the
   * server keeping any refresh token in the clear: only whoever holds the parent (and the
   * sealed project secret) can name its successor.
   */
  successor(projectId: string, parent: string): { token: string; hash: string } {
    const key = this.#key(projectId);
    let out = '';
    for (let round = 0; out.length < 32; round++) {
      const mac = createHmac('sha512', key).update(`refresh-successor\0${round}\0${parent}`).digest();
      // note: bytes past the largest multiple of 62 are skipped, so every character is uniform.
      for (const b of mac) if (b < 248 && out.length < 32) out += BASE62[b % 62];
    }
    const token = REFRESH_PREFIX + out;
    return { token, hash: refreshHash(token) };
  }

  /** Forgets a deleted project's secret and cached verifications. */
  forget(projectId: string): void {
    this.#keys.delete(projectId);
    this.#verifiedCount -= this.#verified.get(projectId)?.size ?? 0;
    this.#verified.delete(projectId);
  }

  async #verifyJwt(projectId: string, jwt: string): Promise<Verified> {
    let payload: JWTPayload;
    try {
      const { jwtVerify } = await jose();
      ({ payload } = await jwtVerify(jwt, this.#key(projectId), {
        algorithms: ['HS256'],
        audience: projectId,
        issuer: ISSUER,
        currentDate: new Date(this.#now()),
        requiredClaims: ['sub', 'exp', 'jti'],
      }));
    } catch (err) {
      if (err instanceof (await jose()).errors.JWTExpired) throw tokenExpired();
      throw unauthorized('invalid access token');
    }
    const { sub, sid, role, aal, jti, exp } = payload as Record<string, unknown>;
    if (typeof sub !== 'string' || typeof sid !== 'string' || typeof role !== 'string' || typeof jti !== 'string' || typeof exp !== 'number') {
      throw unauthorized('invalid access token');
    }
    const user: UserClaims = { id: sub, role, sessionId: sid, aal: typeof aal === 'string' ? aal : 'aal1', claims: Object.freeze(payload) };
    return { token: ACCESS_PREFIX + jwt, user, expMs: exp * 1000, jti };
  }

  /**
   * The project's signing secret, stored sealed. A secret a previous version stored in the
   * clear (base64url has no `.`, a sealed value has) is sealed in place on first use, and so
   * is one sealed in an older format.
   */
  #secret(lease: ProjectLease): string {
    const seal = (plain: string): string => this.#sealer.seal(lease.projectId, 'jwt', JWT_SECRET, plain);
    const stored = initConfigValue(lease, JWT_SECRET, seal(randomBytes(32).toString('base64url')));
    if (!stored.includes('.')) {
      setConfigValue(lease, JWT_SECRET, seal(stored));
      return stored;
    }
    // note: a value that does not open throws an Error naming the project, purpose and
    // record (never the value): a 500 whose log line says which secret to look at.
    return this.#sealer.open(lease.projectId, 'jwt', JWT_SECRET, stored, (current) => setConfigValue(lease, JWT_SECRET, current));
  }

  /** The project's signing key; created on first use. The first load also restores recent revocations. */
  #key(projectId: string): KeyObject {
    const hit = this.#keys.get(projectId);
    if (hit) return hit;
    const lease = this.#registry.acquire(projectId);
    try {
      const secret = this.#secret(lease);
      const since = new Date(this.#now() - Math.max(this.#ttlS, 0) * 1000 - SLACK_MS).toISOString();
      const r = recentRevocations(lease, since);
      const until = this.revokeUntil();
      for (const id of [...r.sessions, ...r.jtis]) this.revoked.add(id, until);
      const key = createSecretKey(Buffer.from(secret, 'base64url'));
      this.#keys.set(projectId, key);
      return key;
    } finally {
      lease.release();
    }
  }
}
