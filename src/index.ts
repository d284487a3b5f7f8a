// The package's programmatic API: `import { startEdge } from 'platform-edge'`.
// build/build.mjs bundles this entry into build/index.mjs and emits build/index.d.ts from
// it, so every type a caller sees is declared in this file (no import may leak into the
// declarations: the build fails if one does).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bootstrap } from './bootstrap.js';
import { loadConfig, type Config } from './config.js';
import { createServer, type EdgeServer } from './server.js';

export interface StartEdgeOptions {
  /**
   * Serve from a fresh folder under the system temporary directory, deleted by `close()`
   * (and when the process exits). Default: true unless `dataDir` is given.
   */
  ephemeral?: boolean;
  /** Port to listen on; default 0, a free one (`url` shows it). */
  port?: number;
  /** Address to bind; default `127.0.0.1`. */
  host?: string;
  /** A persistent data folder (not with `ephemeral: true`). */
  dataDir?: string;
  /** HTTP backend; default `auto`: native uWebSockets.js when its binary loads, else `node:http`. */
  http?: 'uws' | 'node' | 'auto';
  /** The address clients use when a proxy fronts the server; `url` shows it. */
  publicUrl?: string;
  /** `full` fsyncs every commit; default `normal`. */
  durability?: 'normal' | 'full';
  /** The auth endpoints' rate limits; default on, off when ephemeral (as `serve --ephemeral`). */
  rateLimit?: boolean;
  /**
   * The environment the other settings are read from (`PLATFORM_EDGE_*`, docs/operations.md);
   * default `process.env`. Options given here win over it.
   */
  env?: Record<string, string | undefined>;
  /** Receives the server's error messages (one line each); default: written to stderr. */
  log?: (message: string) => void;
}

export interface Edge {
  /** Base URL, e.g. `http://127.0.0.1:41873` (or `publicUrl`). */
  readonly url: string;
  /** The port it listens on. */
  readonly port: number;
  /** The HTTP backend in use. */
  readonly http: 'uws' | 'node';
  /** The data folder (a temporary one when ephemeral). */
  readonly dataDir: string;
  /** The default project's id. */
  readonly projectId: string;
  /** The default project's API keys (send one in `X-Service-Key`). */
  readonly keys: { readonly publishable: string; readonly service: string };
  /** A new operator session of `admin@localhost` (Authorization: Bearer, with X-Service-Project). */
  readonly operatorToken: string;
  /**
   * Stops accepting, lets requests in flight finish (up to 5 s), closes every database and
   * deletes an ephemeral folder. Calling it again returns the same promise.
   */
  close(): Promise<void>;
}

/**
 * Starts a server in this process, with the project `default` (created on a new data
 * folder), and resolves once it listens. It installs no signal handlers: the caller stops it
 * with `close()`.
 */
export async function startEdge(options: StartEdgeOptions = {}): Promise<Edge> {
  if (options.ephemeral === true && options.dataDir !== undefined) {
    throw new TypeError('startEdge: give either ephemeral: true or dataDir, not both');
  }
  const env = options.env ?? process.env;
  const ephemeral = options.ephemeral ?? options.dataDir === undefined;
  // note: as `serve --ephemeral`: a test suite signs in many times from one address.
  const rateLimit = options.rateLimit ?? (ephemeral && (env.PLATFORM_EDGE_RATE_LIMIT ?? '') === '' ? false : undefined);
  const log = options.log ?? ((line: string) => void process.stderr.write(`platform-edge: ${line}\n`));
  const dataDir = ephemeral ? mkdtempSync(join(tmpdir(), 'platform-edge-')) : options.dataDir;
  if (ephemeral) removeAtExit(dataDir!);
  const removeDir = (): void => {
    if (!ephemeral) return;
    rmSync(dataDir!, { recursive: true, force: true });
    atExit.delete(dataDir!);
  };
  let config: Config;
  let server: EdgeServer;
  try {
    config = loadConfig(
      {
        port: options.port ?? 0,
        host: options.host,
        dataDir,
        publicUrl: options.publicUrl,
        durability: options.durability,
        http: options.http,
        ephemeral,
        rateLimit: { enabled: rateLimit },
      },
      env,
    );
    server = createServer(config, (msg, err) => log(`${msg}${err instanceof Error ? `: ${err.stack ?? err.message}` : ''}`));
  } catch (err) {
    removeDir();
    throw err;
  }
  let listening: { url: string; port: number; backend: 'uws' | 'node' };
  let boot: Awaited<ReturnType<typeof bootstrap>>;
  try {
    boot = await bootstrap(server);
    if (boot.keys.publishable === null || boot.keys.service === null) {
      throw new Error(`startEdge: a key of the default project ${boot.projectId} in ${config.dataDir} was revoked; use a fresh data folder`);
    }
    listening = await server.listen();
  } catch (err) {
    await server.close().catch(() => {});
    removeDir();
    throw err;
  }
  let closing: Promise<void> | null = null;
  return Object.freeze({
    url: config.publicUrl ?? listening.url,
    port: listening.port,
    http: listening.backend,
    dataDir: config.dataDir,
    projectId: boot.projectId,
    keys: Object.freeze({ publishable: boot.keys.publishable, service: boot.keys.service }),
    operatorToken: boot.operatorToken,
    close(): Promise<void> {
      closing ??= server.close().finally(removeDir);
      return closing;
    },
  });
}

/** Ephemeral folders of servers not closed yet; a process that ends without close() (an uncaught error, process.exit) still removes them. */
const atExit = new Set<string>();
let exitHooked = false;

function removeAtExit(dir: string): void {
  if (!exitHooked) {
    exitHooked = true;
    process.once('exit', () => {
      for (const d of atExit) rmSync(d, { recursive: true, force: true });
    });
  }
  atExit.add(dir);
}
