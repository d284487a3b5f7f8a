import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { schemaDir } from '../paths.js';
import { loadMigrations, migrate } from '../project/migrate.js';
import { applyPragmas } from '../project/pragmas.js';
import { PUBLISHABLE_SCOPES, SCOPES, type Scope } from '../core/auth-context.js';
import { randomBase62, sha256Hex } from './random.js';
import type { Sealer } from './seal.js';

export interface Project {
  id: string;
  name: string;
  created_at: string;
}

export type KeyKind = 'publishable' | 'service' | 'custom';

export interface KeyRecord {
  id: string;
  project_id: string;
  name: string;
  kind: KeyKind;
  hint: string;
  scopes: Scope[];
  role: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface KeyWithHash extends KeyRecord {
  hash: string;
}

export interface OperatorRecord {
  id: string;
  email: string;
  password_hash: string | null;
  created_at: string;
}

export interface OperatorSession {
  id: string;
  operator_id: string;
  email: string;
  hash: string;
  expires_at: string;
  revoked_at: string | null;
}

interface KeyRow extends Omit<KeyWithHash, 'scopes'> {
  scopes: string;
}

export const KEY_PREFIX = 'svc_live_';
const now = (): string => new Date().toISOString();
const toKey = ({ scopes, ...r }: KeyRow): KeyWithHash => ({ ...r, scopes: JSON.parse(scopes) as Scope[] });
const publicKey = ({ hash: _hash, ...r }: KeyWithHash): KeyRecord => r;

/** The control plane's SQL (`control.db`): projects, API keys, operators. */
export class ControlStore {
  readonly db: Database.Database;
  readonly #sealer: Sealer;

  constructor(dataDir: string, durability: 'normal' | 'full', sealer: Sealer) {
    mkdirSync(dataDir, { recursive: true });
    this.db = new Database(join(dataDir, 'control.db'));
    applyPragmas(this.db, durability);
    migrate(this.db, loadMigrations(join(schemaDir(), 'control')), 'migrations');
    this.#sealer = sealer;
  }

  /** Changes whenever another connection (another process) commits to control.db. */
  dataVersion(): number {
    return this.db.pragma('data_version', { simple: true }) as number;
  }

  // --- projects

  /** Creates a project with its publishable and service keys; the keys are returned once. */
  createProject(name: string, opts: { sealKeys?: boolean } = {}): { project: Project; publishable: string; service: string } {
    const project: Project = { id: randomBase62(20).toLowerCase(), name, created_at: now() };
    return this.db.transaction(() => {
      this.db.prepare('INSERT INTO projects (id, name, created_at) VALUES (@id, @name, @created_at)').run(project);
      const publishable = this.#insertKey(project.id, 'publishable', 'publishable', [...PUBLISHABLE_SCOPES], opts.sealKeys);
      const service = this.#insertKey(project.id, 'service', 'service', [...SCOPES], opts.sealKeys);
      return { project, publishable: publishable.secret, service: service.secret };
    }).immediate();
  }

  listProjects(): Project[] {
    return this.db.prepare('SELECT id, name, created_at FROM projects ORDER BY created_at, id').all() as Project[];
  }

  getProject(id: string): Project | null {
    return (this.db.prepare('SELECT id, name, created_at FROM projects WHERE id = ?').get(id) as Project | undefined) ?? null;
  }

  /** Deletes a project and (by cascade) its keys; returns whether it existed. */
  deleteProject(id: string): boolean {
    return this.db.prepare('DELETE FROM projects WHERE id = ?').run(id).changes > 0;
  }

  // --- keys

  createKey(projectId: string, name: string, scopes: Scope[], service: boolean): { key: KeyRecord; secret: string } {
    const kind: KeyKind = 'custom';
    const { id, secret } = this.#insertKey(projectId, name, kind, scopes, false, service ? 'service_role' : 'anon');
    return { key: this.getKey(id)!, secret };
  }

  #insertKey(projectId: string, name: string, kind: KeyKind, scopes: Scope[], sealIt = false, role?: string): { id: string; secret: string } {
    const secret = KEY_PREFIX + randomBase62(32);
    const id = 'key_' + randomBase62(16);
    this.db
      .prepare(
        `INSERT INTO api_keys (id, project_id, name, kind, hash, hint, scopes, role, sealed, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        id,
        projectId,
        name,
        kind,
        sha256Hex(secret),
        secret.slice(0, KEY_PREFIX.length + 4),
        JSON.stringify(scopes),
        role ?? (kind === 'service' ? 'service_role' : 'anon'),
        sealIt ? this.#sealer.seal(projectId, 'keys', id, secret) : null,
        now(),
      );
    return { id, secret };
  }

  getKey(id: string): KeyRecord | null {
    const row = this.db.prepare('SELECT * FROM api_keys WHERE id = ?').get(id) as KeyRow | undefined;
    return row ? publicKey(toKey(row)) : null;
  }

  listKeys(projectId: string): KeyRecord[] {
    const rows = this.db.prepare('SELECT * FROM api_keys WHERE project_id = ? ORDER BY created_at, id').all(projectId) as KeyRow[];
    return rows.map((r) => publicKey(toKey(r)));
  }

  /** A live (not revoked) key by the hash of its secret. */
  findKeyByHash(hash: string): KeyWithHash | null {
    const row = this.db.prepare('SELECT * FROM api_keys WHERE hash = ? AND revoked_at IS NULL').get(hash) as KeyRow | undefined;
    return row ? toKey(row) : null;
  }

  /** Revokes a key; returns the record, or null when no such key. */
  revokeKey(id: string): KeyRecord | null {
    this.db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(now(), id);
    return this.getKey(id);
  }

  /** Keys revoked at or after `at` (every revoked key when null), oldest revocation first. */
  keysRevokedSince(at: string | null): Array<{ id: string; project_id: string; revoked_at: string }> {
    return this.db
      .prepare('SELECT id, project_id, revoked_at FROM api_keys WHERE revoked_at IS NOT NULL AND revoked_at >= ? ORDER BY revoked_at, id')
      .all(at ?? '') as Array<{ id: string; project_id: string; revoked_at: string }>;
  }

  /** The time of the newest key revocation, null when none. */
  lastKeyRevocation(): string | null {
    return (this.db.prepare('SELECT max(revoked_at) FROM api_keys').pluck().get() as string | null) ?? null;
  }

  /**
   * The plaintext of the sealed (bootstrap) keys of a project (sealed for the project, purpose
   * `keys`, under the key's id). A copy in an older format is resealed in its row.
   */
  sealedKeys(projectId: string): { publishable: string | null; service: string | null } {
    const rows = this.db
      .prepare("SELECT id, kind, sealed FROM api_keys WHERE project_id = ? AND sealed IS NOT NULL AND revoked_at IS NULL AND kind IN ('publishable','service')")
      .all(projectId) as { id: string; kind: 'publishable' | 'service'; sealed: string }[];
    const out = { publishable: null as string | null, service: null as string | null };
    const reseal = this.db.prepare('UPDATE api_keys SET sealed = ? WHERE id = ? AND sealed = ?');
    for (const r of rows) out[r.kind] = this.#sealer.open(projectId, 'keys', r.id, r.sealed, (current) => reseal.run(current, r.id, r.sealed));
    return out;
  }

  touchKeys(ids: Iterable<string>, at: string): void {
    const stmt = this.db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?');
    this.db.transaction(() => {
      for (const id of ids) stmt.run(at, id);
    })();
  }

  // --- operators

  createOperator(email: string, passwordHash: string | null): OperatorRecord {
    const op: OperatorRecord = { id: 'op_' + randomBase62(16), email, password_hash: passwordHash, created_at: now() };
    this.db.prepare('INSERT INTO operators (id, email, password_hash, created_at) VALUES (@id, @email, @password_hash, @created_at)').run(op);
    return op;
  }

  findOperator(email: string): OperatorRecord | null {
    return (this.db.prepare('SELECT * FROM operators WHERE email = ?').get(email) as OperatorRecord | undefined) ?? null;
  }

  /** Creates an operator session; returns its `lcd_` token once. */
  createOperatorSession(operatorId: string, ttlMs: number): { token: string; expires_at: string } {
    const token = 'lcd_' + randomBase62(32);
    const expires_at = new Date(Date.now() + ttlMs).toISOString();
    this.db
      .prepare('INSERT INTO operator_sessions (id, operator_id, hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?)')
      .run('ops_' + randomBase62(16), operatorId, sha256Hex(token), now(), expires_at);
    return { token, expires_at };
  }

  findOperatorSession(hash: string): OperatorSession | null {
    const row = this.db
      .prepare(
        `SELECT s.id, s.operator_id, o.email, s.hash, s.expires_at, s.revoked_at
         FROM operator_sessions s JOIN operators o ON o.id = s.operator_id
         WHERE s.hash = ? AND s.revoked_at IS NULL`,
      )
      .get(hash) as OperatorSession | undefined;
    return row ?? null;
  }

  revokeOperatorSession(hash: string): void {
    this.db.prepare('UPDATE operator_sessions SET revoked_at = ? WHERE hash = ?').run(now(), hash);
  }

  // --- settings

  getSetting(key: string): string | null {
    return (this.db.prepare('SELECT value FROM settings WHERE key = ?').get(key) as { value: string } | undefined)?.value ?? null;
  }

  setSetting(key: string, value: string): void {
    this.db.prepare('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value').run(key, value);
  }

  close(): void {
    this.db.close();
  }
}

