import type { Scope } from '../core/auth-context.js';
import type { ControlStore, KeyWithHash, OperatorSession } from './control-store.js';
import { digestEquals, sha256Hex } from './random.js';

export interface ResolvedKey {
  readonly id: string;
  readonly projectId: string;
  readonly scopes: ReadonlySet<Scope>;
  readonly role: string;
}

export interface ResolvedOperator {
  readonly id: string;
  readonly email: string;
  readonly expiresAt: number;
}

const MAX_ENTRIES = 10_000;

/**
 * Resolves API keys and operator tokens without touching SQLite on the hot path.
 * Entries (hits and misses) are cached; the cache is dropped whenever control.db
 * changes — in this process at once, from another process (the CLI) within one poll
 * interval, by watching SQLite's `data_version`.
 */
export class CredentialCache {
  readonly #store: ControlStore;
  readonly #keys = new Map<string, ResolvedKey | null>();
  readonly #operators = new Map<string, ResolvedOperator | null>();
  readonly #used = new Set<string>();
  readonly #timers: NodeJS.Timeout[] = [];
  #version: number;
  #onExternal: () => void = () => {};

  constructor(store: ControlStore, pollMs: number) {
    this.#store = store;
    this.#version = store.dataVersion();
    this.#timers.push(setInterval(() => this.poll(), pollMs));
    this.#timers.push(setInterval(() => this.flushUsage(), 30_000));
    for (const t of this.#timers) t.unref();
  }

  key(secret: string): ResolvedKey | null {
    const hit = this.#keys.get(secret);
    if (hit !== undefined) {
      if (hit) this.#used.add(hit.id);
      return hit;
    }
    const hash = sha256Hex(secret);
    const row: KeyWithHash | null = this.#store.findKeyByHash(hash);
    const resolved =
      row && digestEquals(row.hash, hash)
        ? { id: row.id, projectId: row.project_id, scopes: new Set(row.scopes), role: row.role }
        : null;
    this.#remember(this.#keys, secret, resolved);
    if (resolved) this.#used.add(resolved.id);
    return resolved;
  }

  operator(token: string, now = Date.now()): ResolvedOperator | null {
    let hit = this.#operators.get(token);
    if (hit === undefined) {
      const hash = sha256Hex(token);
      const row: OperatorSession | null = this.#store.findOperatorSession(hash);
      hit =
        row && digestEquals(row.hash, hash)
          ? { id: row.operator_id, email: row.email, expiresAt: Date.parse(row.expires_at) }
          : null;
      this.#remember(this.#operators, token, hit);
    }
    return hit && hit.expiresAt > now ? hit : null;
  }

  #remember<V>(map: Map<string, V>, k: string, v: V): void {
    // note: bounded so a flood of invalid keys cannot grow memory.
    if (map.size >= MAX_ENTRIES) map.clear();
    map.set(k, v);
  }

  /** Forgets everything; called after any change to control.db made in this process. */
  invalidate(): void {
    this.#keys.clear();
    this.#operators.clear();
    this.#version = this.#store.dataVersion();
  }

  /** Registers what to run when another process changed control.db. */
  onExternalChange(fn: () => void): void {
    this.#onExternal = fn;
  }

  poll(): void {
    const v = this.#store.dataVersion();
    if (v !== this.#version) {
      this.#keys.clear();
      this.#operators.clear();
      this.#version = v;
      this.#onExternal();
    }
  }

  /** Writes `last_used_at` for keys used since the last flush (batched, not per request). */
  flushUsage(): void {
    if (this.#used.size === 0) return;
    const ids = [...this.#used];
    this.#used.clear();
    this.#store.touchKeys(ids, new Date().toISOString());
    // note: our own write bumps no data_version for us, so no self-invalidation here.
  }

  close(): void {
    for (const t of this.#timers) clearInterval(t);
    this.flushUsage();
  }
}
