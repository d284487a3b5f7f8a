import { isoAt } from '../../clock.js';
import type { Sealer } from '../../control/seal.js';
import { EdgeError, invalidField, notFound } from '../../edge/errors.js';
import type { ProjectLease } from '../../project/registry.js';
import { checkFlagKey, flagOf, flagRow, FlagsView, type Flag } from './flags.js';
import * as store from './store.js';

/** A secret or setting name: `[A-Za-z_][A-Za-z0-9_]{0,127}`; `flags` is reserved (it is an endpoint). */
const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** The largest value, in UTF-8 bytes. */
export const SECRET_VALUE_MAX_BYTES = 64 * 1024;
/** What the listing shows in place of a secret's value. */
export const MASK = '********';
/**
 * Names that are settings (shown in clear) unless a write says `secret: true`; every other
 * name is a secret unless a write says `secret: false`.
 */
export const DEFAULT_SETTINGS: ReadonlySet<string> = new Set(['EMAIL_FROM', 'EMAIL_PROVIDER', 'VAPID_PUBLIC_KEY', 'AUTH_REDIRECT_URLS']);
const FIELDS = new Set(['value', 'secret']);

/** A listing entry (`GET /secrets`): a secret's value is masked. */
export interface SecretEntry {
  name: string;
  secret: boolean;
  value: string;
  fingerprint: string;
  updated_at: string;
}

/** Per-project state, cached on the project's connection (`lease.cache`) and emptied on write. */
class ProjectState {
  /** Opened values by name; null: no such name. */
  readonly values = new Map<string, string | null>();
  flags: FlagsView | null = null;
}

const STATE = 'secrets.state';
const state = (lease: ProjectLease): ProjectState => lease.cache(STATE, () => new ProjectState());

/**
 * Secrets, settings and feature flags of a project (docs/api.md "Secrets and feature flags").
 * Values are sealed at rest under the project's `secrets` key with the project id and the name
 * as additional data (src/control/seal.ts): a value copied to another row or project does not
 * open, and reading it fails (500 `internal`, logged) rather than answer a wrong value. No
 * method returns a secret's plaintext to a client; `get` is for other services in this process.
 */
export class SecretsService {
  readonly #sealer: Sealer;
  readonly #now: () => number;

  constructor(sealer: Sealer, now: () => number = Date.now) {
    this.#sealer = sealer;
    this.#now = now;
  }

  /**
   * The plaintext of a secret or setting, or null when the project has none of that name: the
   * internal read API of the functions (`ctx.secrets.get`), notifications and auth services.
   * Cached per project; a write or delete is visible to the next call. Throws (an internal
   * error, naming the record but never its value) when the stored value does not open.
   */
  get(lease: ProjectLease, name: string): string | null {
    const s = state(lease);
    const hit = s.values.get(name);
    if (hit !== undefined) return hit;
    if (!NAME.test(name)) return null;
    const row = store.secretRow(lease, name);
    const plain = row === undefined ? null : this.#open(lease, row);
    s.values.set(name, plain);
    return plain;
  }

  list(lease: ProjectLease): { secrets: SecretEntry[] } {
    // note: every value is opened (through the cache): the fingerprint is of the plaintext, and a
    // value that does not open fails the listing rather than show a fingerprint of nothing.
    return { secrets: store.secretRows(lease).map((r) => this.#entry(lease, r, this.get(lease, r.name) ?? this.#open(lease, r))) };
  }

  put(lease: ProjectLease, name: string, body: unknown): SecretEntry {
    checkName(name);
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new EdgeError('invalid_body', 'the body must be a JSON object');
    const b = body as Record<string, unknown>;
    // note: an unknown field is not named back: a client may have put a value where a name goes.
    for (const f of Object.keys(b)) if (!FIELDS.has(f)) throw invalidField('body', 'unknown field; a write takes "value" and "secret"');
    const value = b.value;
    if (typeof value !== 'string') throw invalidField('value', 'required, a string');
    if (Buffer.byteLength(value, 'utf8') > SECRET_VALUE_MAX_BYTES) throw invalidField('value', `longer than ${SECRET_VALUE_MAX_BYTES} bytes`);
    const secret = b.secret === undefined ? !DEFAULT_SETTINGS.has(name) : b.secret;
    if (typeof secret !== 'boolean') throw invalidField('secret', 'must be true or false');
    const row: store.SecretRow = {
      name,
      secret: secret ? 1 : 0,
      value: this.#sealer.seal(lease.projectId, 'secrets', name, value),
      updated_at: isoAt(this.#now()),
    };
    store.upsertSecret(lease, row);
    state(lease).values.set(name, value);
    return this.#entry(lease, row, value);
  }

  delete(lease: ProjectLease, name: string): void {
    checkName(name);
    const gone = store.deleteSecret(lease, name);
    state(lease).values.delete(name);
    if (!gone) throw notFound('secret', name);
  }

  listFlags(lease: ProjectLease): { flags: Flag[] } {
    return { flags: store.flagRows(lease).map(flagOf) };
  }

  putFlag(lease: ProjectLease, key: string, body: unknown): Flag {
    const row = flagRow(key, body, isoAt(this.#now()));
    store.upsertFlag(lease, row);
    state(lease).flags = null;
    return flagOf(row);
  }

  deleteFlag(lease: ProjectLease, key: string): void {
    checkFlagKey(key);
    const gone = store.deleteFlag(lease, key);
    state(lease).flags = null;
    if (!gone) throw notFound('flag', key);
  }

  /** `{"flags":{key: value}}` as JSON text for a user (or none); see FlagsView. */
  evaluate(lease: ProjectLease, userId: string | null): string {
    const s = state(lease);
    s.flags ??= new FlagsView(store.flagRows(lease));
    return s.flags.evaluate(userId);
  }

  #open(lease: ProjectLease, row: store.SecretRow): string {
    return this.#sealer.open(lease.projectId, 'secrets', row.name, row.value, (resealed) => store.resealSecret(lease, row.name, resealed));
  }

  #entry(lease: ProjectLease, row: store.SecretRow, plain: string): SecretEntry {
    const secret = row.secret === 1;
    return {
      name: row.name,
      secret,
      value: secret ? MASK : plain,
      fingerprint: this.#sealer.mac(lease.projectId, 'secrets', plain).subarray(0, 4).toString('hex'),
      updated_at: row.updated_at,
    };
  }
}

export function checkName(name: string): void {
  if (!NAME.test(name)) throw invalidField('name', 'a name is 1 to 128 of A-Z, a-z, 0-9 and "_", not starting with a digit');
  if (name === 'flags') throw invalidField('name', '"flags" is reserved');
}
