import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { loadConfig, type ConfigOverrides } from '../../src/config.js';
import type { Scope } from '../../src/core/auth-context.js';
import { createServer, type EdgeServer } from '../../src/server.js';

export type { ConfigOverrides };

export interface TestServer {
  url: string;
  backend: 'uws' | 'node';
  projectId: string;
  keys: { publishable: string; service: string };
  operatorToken: string;
  dataDir: string;
  /**
   * The server object. Only the helpers use it (test files in test/api/ and test/abuse/ are
   * black-box: they use the methods below, docs/architecture.md "Tests").
   */
  server: EdgeServer;
  /** fetch relative to the server, with the publishable key unless headers say otherwise. */
  req(path: string, init?: RequestInit & { key?: string | null }): Promise<Response>;
  /** Another project with its two keys (as `platform-edge project create` makes it; no operator HTTP endpoint does). */
  createProject(name: string): CreatedProject;
  /** Deletes a project (as `platform-edge project delete`). */
  deleteProject(id: string): void;
  /** A secret key with these scopes on the test project (or `projectId`), as `platform-edge key create`. */
  createKey(scopes: readonly Scope[], opts?: { name?: string; projectId?: string }): { id: string; secret: string };
  /** Revokes a key by id (as `platform-edge key revoke`). */
  revokeKey(id: string): void;
  /**
   * Reads the test project's database as a user can: a copy downloaded through
   * `GET /_admin/backup` (service key), opened read-only, handed to `read`, then deleted.
   */
  readBackup<T>(read: (db: Database.Database) => T): Promise<T>;
  close(): Promise<void>;
}

export interface CreatedProject {
  id: string;
  publishable: string;
  service: string;
}


/**
 * Starts a real server (the backend named by PLATFORM_EDGE_HTTP) on port 0 with a
 * temporary data folder, one project and one operator session.
 */
export async function startTestServer(overrides: ConfigOverrides = {}, opts: { log?: (msg: string, err?: unknown) => void } = {}): Promise<TestServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'pe-test-'));
  // note: auth rate limits are off unless a test turns them on (as serve --ephemeral does).
  const config = loadConfig({ port: 0, host: '127.0.0.1', dataDir, controlPollMs: 100, rateLimit: { enabled: false }, ...overrides }, process.env);
  const server = opts.log ? createServer(config, opts.log) : createServer(config);
  const { project, publishable, service } = server.projects.create('test');
  await server.operators.create('ops@example.com', null);
  const operatorToken = server.operators.issue('ops@example.com').token;
  const { url, backend } = await server.listen();
  const keys = { publishable, service };
  return {
    url,
    backend,
    projectId: project.id,
    keys,
    operatorToken,
    dataDir,
    server,
    req(path, init = {}) {
      const { key = publishable, ...rest } = init;
      const headers = new Headers(rest.headers);
      if (key !== null && !headers.has('x-service-key')) headers.set('x-service-key', key);
      return fetch(url + path, { ...rest, headers });
    },
    createProject(name) {
      const p = server.projects.create(name);
      return { id: p.project.id, publishable: p.publishable, service: p.service };
    },
    deleteProject(id) {
      server.projects.delete(id);
    },
    createKey(scopes, opts = {}) {
      const { key, secret } = server.projects.createKey(opts.projectId ?? project.id, opts.name ?? 'test', [...scopes], false);
      return { id: key.id, secret };
    },
    revokeKey(id) {
      server.projects.revokeKey(id);
    },
    async readBackup(read) {
      const res = await fetch(`${url}/_admin/backup`, { headers: { 'x-service-key': service } });
      if (res.status !== 200) throw new Error(`GET /_admin/backup answered ${res.status}`);
      const file = join(tmpdir(), `pe-test-backup-${Math.random().toString(36).slice(2)}.db`);
      writeFileSync(file, Buffer.from(await res.arrayBuffer()));
      const db = new Database(file, { readonly: true, fileMustExist: true });
      try {
        return read(db);
      } finally {
        db.close();
        // note: opening a WAL-mode copy makes its -shm and -wal files beside it (they were left in the temporary directory).
        for (const f of [file, `${file}-shm`, `${file}-wal`]) rmSync(f, { force: true });
      }
    },
    async close() {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The parsed error envelope of a response, asserting its shape. */
export async function errorOf(res: Response): Promise<{ code: string; message: string; details?: Record<string, unknown> }> {
  const body = (await res.json()) as { error?: { code: string; message: string } };
  if (!body.error || typeof body.error.code !== 'string' || typeof body.error.message !== 'string') {
    throw new Error(`not an error envelope: ${JSON.stringify(body)}`);
  }
  return body.error;
}

/**
 * Serves a stopped test server's data folder again (a restart, e.g. after a project file was
 * changed as an older version left it). The caller closes it; the folder is left in place.
 */
export async function serveAgain(dataDir: string): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer(loadConfig({ port: 0, host: '127.0.0.1', dataDir, controlPollMs: 100, rateLimit: { enabled: false } }, process.env));
  const { url } = await server.listen();
  return { url, close: () => server.close() };
}
