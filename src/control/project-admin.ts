import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config.js';
import { SCOPES, type Scope } from '../core/auth-context.js';
import { invalidField, notFound } from '../core/errors.js';
import type { EventBus } from '../events/bus.js';
import type { ProjectRegistry } from '../project/registry.js';
import type { ControlStore, KeyRecord, Project } from './control-store.js';
import type { CredentialCache } from './keys.js';

const NAME = /^[A-Za-z0-9][A-Za-z0-9 _.-]{0,62}$/;

/**
 * Project and key administration shared by the CLI and the server: keeps control.db,
 * the project folders, the open-database registry and the credential cache in step.
 * The registry, cache and bus are absent when the CLI runs without a server.
 */
export class ProjectAdmin {
  readonly #config: Config;
  readonly #store: ControlStore;
  readonly #registry: ProjectRegistry | null;
  readonly #credentials: CredentialCache | null;
  readonly #bus: EventBus | null;
  /** The newest key revocation this process has announced, and the keys revoked at that instant. */
  #revokedAt: string | null = null;
  readonly #revokedIds = new Set<string>();

  constructor(config: Config, store: ControlStore, registry: ProjectRegistry | null, credentials: CredentialCache | null, bus: EventBus | null) {
    this.#config = config;
    this.#store = store;
    this.#registry = registry;
    this.#credentials = credentials;
    this.#bus = bus;
    // note: revocations before this server started are not news; only later ones are announced.
    if (bus) {
      this.#revokedAt = store.lastKeyRevocation();
      for (const k of store.keysRevokedSince(this.#revokedAt)) this.#revokedIds.add(k.id);
    }
  }

  #dir(id: string): string {
    return join(this.#config.dataDir, 'projects', id);
  }

  create(name: string, opts: { sealKeys?: boolean } = {}): { project: Project; publishable: string; service: string } {
    if (!NAME.test(name)) throw invalidField('name', 'must be 1-63 letters, digits, spaces, dots, dashes or underscores');
    const created = this.#store.createProject(name, opts);
    mkdirSync(join(this.#dir(created.project.id), 'objects'), { recursive: true });
    this.#credentials?.invalidate();
    return created;
  }

  list(): Project[] {
    return this.#store.listProjects();
  }

  exists(id: string): boolean {
    return id !== '' && this.#store.getProject(id) !== null;
  }

  delete(id: string): void {
    if (!this.#store.deleteProject(id)) throw notFound('project', id);
    this.#afterDelete(id);
  }

  #afterDelete(id: string): void {
    this.#credentials?.invalidate();
    this.#registry?.forget(id);
    this.#bus?.emit('project.deleted', { projectId: id, at: new Date().toISOString() });
    rmSync(this.#dir(id), { recursive: true, force: true });
  }

  /**
   * After another process (the CLI) changed control.db: announces keys it revoked
   * (`key.revoked`) and forgets open projects it deleted.
   */
  reconcile(): void {
    if (this.#bus) {
      for (const k of this.#store.keysRevokedSince(this.#revokedAt)) {
        if (!this.#noteRevoked(k.revoked_at, k.id)) continue;
        this.#bus.emit('key.revoked', { projectId: k.project_id, at: k.revoked_at, keyId: k.id });
      }
    }
    if (!this.#registry) return;
    for (const id of this.#registry.openIds()) {
      if (!this.#store.getProject(id)) {
        this.#registry.forget(id);
        this.#bus?.emit('project.deleted', { projectId: id, at: new Date().toISOString() });
      }
    }
  }

  createKey(projectId: string, name: string, scopes: string[], service: boolean): { key: KeyRecord; secret: string } {
    if (!this.exists(projectId)) throw notFound('project', projectId);
    const bad = scopes.find((s) => !(SCOPES as readonly string[]).includes(s));
    if (bad !== undefined) throw invalidField('scopes', `unknown scope "${bad}" (known: ${SCOPES.join(', ')})`);
    if (scopes.length === 0 && !service) throw invalidField('scopes', 'at least one scope is required');
    const finalScopes = (service ? [...SCOPES] : [...new Set(scopes)]) as Scope[];
    const created = this.#store.createKey(projectId, name, finalScopes, service);
    this.#credentials?.invalidate();
    return created;
  }

  listKeys(projectId: string): KeyRecord[] {
    if (!this.exists(projectId)) throw notFound('project', projectId);
    return this.#store.listKeys(projectId);
  }

  revokeKey(keyId: string): KeyRecord {
    const key = this.#store.revokeKey(keyId);
    if (!key) throw notFound('key', keyId);
    this.#credentials?.invalidate();
    if (key.revoked_at !== null && this.#noteRevoked(key.revoked_at, keyId)) {
      this.#bus?.emit('key.revoked', { projectId: key.project_id, at: key.revoked_at, keyId });
    }
    return key;
  }

  /** Records an announced revocation; false when it was announced already. */
  #noteRevoked(at: string, keyId: string): boolean {
    if (this.#revokedAt !== null && at < this.#revokedAt) return false;
    if (at !== this.#revokedAt) {
      this.#revokedAt = at;
      this.#revokedIds.clear();
    }
    if (this.#revokedIds.has(keyId)) return false;
    this.#revokedIds.add(keyId);
    return true;
  }
}
