import type Database from 'better-sqlite3';
import type { AuthContext } from '../core/auth-context.js';

/**
 * The caller of the statement a connection is running, as a stored default reads it
 * (`user_id uuid not null default auth.uid()`, docs/sql.md "The caller in stored defaults").
 * A default is stored in the table, so it cannot be bound per request like a query's
 * `auth.uid()`: it is emitted as `pe_caller_uid()`, a function registered on every project
 * connection (the registry's and each SQL worker's) that answers the caller set around the
 * write being run there, and NULL when none is set (an internal write: sign-up, cascades,
 * upkeep). Writes on one connection run one at a time (better-sqlite3 is synchronous), so one
 * slot per connection is exact: the caller is set just before a write and reset in `finally`.
 *
 * note: the worker thread imports it (src/sql/worker/entry.ts, its own bundle entry).
 */
export interface CallerValues {
  /** `auth.uid()`: the user's id, NULL without a user token (the service role too). */
  readonly uid: string | null;
  /** `auth.role()`: `anon`, `authenticated` (or the user's role), `service_role`. */
  readonly role: string | null;
  /** `auth.jwt()`: the verified token's claims as JSON text (`{"role": …}` without a token). */
  readonly jwt: string | null;
}

/** One connection's current caller (null: an internal write). */
export interface CallerSlot {
  current: CallerValues | null;
}

/** What `auth.uid()`, `auth.role()` and `auth.jwt()` are emitted as in a stored default or a trigger body. */
export const CALLER_SQL = { uid: 'pe_caller_uid()', role: 'pe_caller_role()', jwt: 'pe_caller_jwt()' } as const;

/**
 * A stored default naming the caller as written (`auth.uid()`, `auth.jwt() ->> 'email'`,
 * `auth.uid()::text`); null for a default that does not name it. Reads only the forms the
 * translator itself emits (src/sql/pg/calls.ts, ops.ts, cast.ts).
 */
export function callerDefaultText(dflt: string): string | null {
  if (!dflt.includes('pe_caller_')) return null;
  let t = dflt.replace(/^\((.*)\)$/s, '$1').replace(/pe_caller_(uid|role|jwt)\(\)/g, 'auth.$1()');
  // note: pe_jget(t)(auth.jwt() [-> 'a'…], 'k') → auth.jwt() [-> 'a'…] ->(>) 'k', innermost first.
  const access = /pe_jget(t?)\((auth\.jwt\(\)(?: ->>? '(?:[^']|'')*')*), ('(?:[^']|'')*')\)/g;
  const step = (x: string): string => x.replace(access, (_, text: string, base: string, key: string) => `${base} ${text ? '->>' : '->'} ${key}`);
  for (let n = step(t); n !== t; n = step(t)) t = n;
  const cast = /^CAST\((.*) AS ([A-Z_]+)\)$/s.exec(t);
  if (cast) return `${cast[1]}::${cast[2]!.toLowerCase()}`;
  return t.startsWith('auth.jwt() -') ? `(${t})` : t;
}

/** Registers the `pe_caller_*` functions over `slot` (not deterministic: the answer changes per write). */
export function registerCaller(db: Database.Database, slot: CallerSlot): void {
  const opts = { deterministic: false, safeIntegers: false } as const;
  db.function('pe_caller_uid', opts, () => slot.current?.uid ?? null);
  db.function('pe_caller_role', opts, () => slot.current?.role ?? null);
  db.function('pe_caller_jwt', opts, () => slot.current?.jwt ?? null);
}

/** Runs `fn` with `who` as the slot's caller; the previous one is back afterwards, whatever happens. */
export function withCaller<T>(slot: CallerSlot, who: CallerValues | null, fn: () => T): T {
  const prev = slot.current;
  slot.current = who;
  try {
    return fn();
  } finally {
    slot.current = prev;
  }
}

/**
 * The caller of a request, read lazily (the claims are serialised only when a default or a
 * statement asks for `auth.jwt()`). As Supabase: the service role has no user, so no uid.
 */
export class CallerOf implements CallerValues {
  #jwt: string | undefined;
  constructor(readonly auth: AuthContext) {}

  get uid(): string | null {
    return this.auth.user?.id ?? null;
  }

  get role(): string {
    return this.auth.role;
  }

  get jwt(): string {
    const u = this.auth.user;
    this.#jwt ??= JSON.stringify(u ? u.claims : { role: this.auth.role });
    return this.#jwt;
  }
}

/** The caller as plain values (for a SQL worker's job: a structured clone keeps no getters). */
export function plainCaller(auth: AuthContext): CallerValues {
  const c = new CallerOf(auth);
  return { uid: c.uid, role: c.role, jwt: c.jwt };
}
