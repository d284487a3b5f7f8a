import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type ConfigOverrides } from '../../src/config.js';
import { createServer, type EdgeServer } from '../../src/server.js';

export interface TestServer {
  url: string;
  backend: 'uws' | 'node';
  projectId: string;
  keys: { publishable: string; service: string };
  operatorToken: string;
  dataDir: string;
  server: EdgeServer;
  /** fetch relative to the server, with the publishable key unless headers say otherwise. */
  req(path: string, init?: RequestInit & { key?: string | null }): Promise<Response>;
  close(): Promise<void>;
}

/**
 * Starts a real server (the backend named by PLATFORM_EDGE_HTTP) on port 0 with a
 * temporary data folder, one project and one operator session.
 */
export async function startTestServer(overrides: ConfigOverrides = {}): Promise<TestServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'pe-test-'));
  // note: auth rate limits are off unless a test turns them on (as serve --ephemeral does).
  const config = loadConfig({ port: 0, host: '127.0.0.1', dataDir, controlPollMs: 100, rateLimit: { enabled: false }, ...overrides }, process.env);
  const server = createServer(config);
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
