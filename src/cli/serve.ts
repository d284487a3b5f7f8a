import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type Config } from '../config.js';
import { createServer, type EdgeServer } from '../server.js';
import { UsageError, noExtra, parse, portFlag, str, type Io } from './args.js';

export const SERVE_HELP = `Usage: platform-edge serve [options]

Serves every service of every project in the data folder. On a folder with no project it
creates project "default" with a publishable and a service key, and prints them.

Options:
  --port N             port (default 8787; 0 picks a free one)
  --host H             address to bind (default 127.0.0.1)
  --data-dir DIR       data folder (default ./.platform-edge, env PLATFORM_EDGE_DATA)
  --public-url URL     the address clients use, when behind a proxy
  --durability MODE    normal (default) or full: fsync every commit
  --ephemeral          use a fresh temporary data folder, deleted on exit (for CI)
  --rate-limit on|off  auth rate limits (default on; off with --ephemeral unless this flag
                       or PLATFORM_EDGE_RATE_LIMIT is given)
  --headers-timeout-ms N      time to send a request's headers (default 10000; node:http)
  --request-timeout-ms N      time to send a whole request (default 30000; 0: none)
  --keep-alive-timeout-ms N   idle keep-alive connections close after it (default 10000; node:http)
  --max-connections N         open connections at most (default 10000, 0: no cap; node:http)
  --max-connections-per-ip N  per client address (default 4096, 0: no cap; node:http)
  --json               print one JSON line {url, project_id, keys, operator_token} once listening
  -h, --help           this help

Environment: PLATFORM_EDGE_HTTP=uws|node forces an HTTP backend; PLATFORM_EDGE_MASTER_KEY
sets the master key (else <data-dir>/master.key is created).`;

const DEFAULT_OPERATOR = 'admin@localhost';

export async function serveCommand(argv: string[], io: Io): Promise<number> {
  const { values, positionals } = parse(argv, {
    port: { type: 'string' },
    host: { type: 'string' },
    'public-url': { type: 'string' },
    durability: { type: 'string' },
    ephemeral: { type: 'boolean' },
    'rate-limit': { type: 'string' },
    'headers-timeout-ms': { type: 'string' },
    'request-timeout-ms': { type: 'string' },
    'keep-alive-timeout-ms': { type: 'string' },
    'max-connections': { type: 'string' },
    'max-connections-per-ip': { type: 'string' },
  });
  if (values.help) {
    io.out(SERVE_HELP);
    return 0;
  }
  noExtra(positionals, 0, SERVE_HELP);
  const publicUrl = publicUrlFlag(str(values['public-url']));
  const durability = str(values.durability);
  if (durability !== undefined && durability !== 'normal' && durability !== 'full') {
    throw new UsageError(`--durability must be normal or full, got "${durability}"`);
  }
  const ephemeral = values.ephemeral === true;
  const rateLimitFlag = str(values['rate-limit']);
  if (rateLimitFlag !== undefined && rateLimitFlag !== 'on' && rateLimitFlag !== 'off') {
    throw new UsageError(`--rate-limit must be on or off, got "${rateLimitFlag}"`);
  }
  // note: CI suites hammer auth from one address, so an ephemeral server has no limits unless asked.
  const rateLimitEnabled =
    rateLimitFlag !== undefined
      ? rateLimitFlag === 'on'
      : ephemeral && (io.env.PLATFORM_EDGE_RATE_LIMIT ?? '') === ''
        ? false
        : undefined;
  const port = portFlag(values.port);
  const ephemeralDir = ephemeral ? mkdtempSync(join(tmpdir(), 'platform-edge-')) : null;
  // note: SIGINT/SIGTERM are caught from here on, so a signal during startup still stops cleanly (and removes an ephemeral folder).
  const stopping = stopSignal(io, () => {
    if (ephemeralDir) rmSync(ephemeralDir, { recursive: true, force: true });
  });
  let config: Config;
  let server: EdgeServer;
  try {
    config = loadConfig(
      {
        port,
        host: str(values.host),
        dataDir: ephemeralDir ?? str(values['data-dir']),
        publicUrl: publicUrl ?? undefined,
        durability: durability as 'normal' | 'full' | undefined,
        ephemeral,
        rateLimit: { enabled: rateLimitEnabled },
        headersTimeoutMs: countFlag(values, 'headers-timeout-ms'),
        requestTimeoutMs: countFlag(values, 'request-timeout-ms'),
        keepAliveTimeoutMs: countFlag(values, 'keep-alive-timeout-ms'),
        maxConnections: countFlag(values, 'max-connections'),
        maxConnectionsPerIp: countFlag(values, 'max-connections-per-ip'),
      },
      io.env,
    );
    server = createServer(config, (msg, err) => io.err(`platform-edge: ${msg}${err instanceof Error ? `: ${err.stack ?? err.message}` : ''}`));
  } catch (err) {
    stopping.dispose();
    if (ephemeralDir) rmSync(ephemeralDir, { recursive: true, force: true });
    throw err;
  }
  try {
    const boot = await bootstrap(server);
    const { url, backend } = await server.listen();
    const shown = { url: config.publicUrl ?? url, project_id: boot.projectId, keys: boot.keys, operator_token: boot.operatorToken };
    if (values.json) {
      io.err(`platform-edge: http backend ${backend}`);
      io.out(JSON.stringify(shown));
    } else {
      io.out(banner(config.version, backend, config.dataDir, ephemeral, shown, boot.projectName));
    }
  } catch (err) {
    await server.close().catch(() => {});
    stopping.dispose();
    throw err;
  }
  await stopping.signalled;
  await server.close();
  stopping.dispose();
  io.exit?.(0);
  return 0;
}

/** A non-negative integer flag, or undefined when not given. */
function countFlag(values: Record<string, unknown>, name: string): number | undefined {
  const v = values[name];
  if (v === undefined) return undefined;
  const n = Number(v);
  if (typeof v !== 'string' || v.trim() === '' || !Number.isInteger(n) || n < 0) throw new UsageError(`--${name} must be a non-negative integer, got "${String(v)}"`);
  return n;
}

/** Validates --public-url (an http(s) URL, shown without a trailing slash). */
function publicUrlFlag(v: string | undefined): string | null {
  if (v === undefined) return null;
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new UsageError(`--public-url must be an absolute http(s) URL, got "${v}"`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new UsageError(`--public-url must be an http(s) URL, got "${v}"`);
  return v.replace(/\/+$/, '');
}

/**
 * Resolves on the first SIGINT/SIGTERM. A second one while shutting down forces the exit
 * (code 1), as users expect of a second Ctrl-C; `beforeForcedExit` still removes an ephemeral folder.
 */
function stopSignal(io: Io, beforeForcedExit: () => void): { signalled: Promise<void>; dispose(): void } {
  let count = 0;
  let resolve!: () => void;
  const signalled = new Promise<void>((r) => (resolve = r));
  const onSignal = (sig: NodeJS.Signals): void => {
    count++;
    if (count === 1) {
      io.err(`platform-edge: ${sig}, shutting down`);
      return resolve();
    }
    io.err(`platform-edge: ${sig} again, exiting without waiting`);
    if (!io.exit) return;
    try {
      beforeForcedExit();
    } finally {
      io.exit(1);
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    signalled,
    dispose: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

interface Boot {
  projectId: string;
  projectName: string;
  keys: { publishable: string | null; service: string | null };
  operatorToken: string;
}

/** Creates the default project and operator on a new data folder; mints an operator session. */
async function bootstrap(server: EdgeServer): Promise<Boot> {
  const { control, projects, operators } = server;
  let projectId = control.getSetting('default_project');
  if (projectId === null || !projects.exists(projectId)) {
    const existing = projects.list();
    if (existing.length === 0) {
      projectId = projects.create('default', { sealKeys: true }).project.id;
    } else projectId = existing[0]!.id;
    control.setSetting('default_project', projectId);
  }
  if (!control.findOperator(DEFAULT_OPERATOR)) await operators.create(DEFAULT_OPERATOR, null);
  const project = control.getProject(projectId)!;
  return {
    projectId,
    projectName: project.name,
    keys: control.sealedKeys(projectId),
    operatorToken: operators.issue(DEFAULT_OPERATOR).token,
  };
}

function banner(version: string, backend: string, dataDir: string, ephemeral: boolean, s: { url: string; project_id: string; keys: Boot['keys']; operator_token: string }, name: string): string {
  return [
    `platform-edge ${version} serving on ${s.url} (http backend: ${backend})`,
    `data folder: ${dataDir}${ephemeral ? ' (ephemeral, deleted on exit)' : ''}`,
    '',
    `project ${name}: ${s.project_id}`,
    `  publishable key: ${s.keys.publishable ?? '(not available: create one with `platform-edge key create`)'}`,
    `  service key:     ${s.keys.service ?? '(not available)'}`,
    `operator token:    ${s.operator_token}`,
    '',
    `Try: curl ${s.url}/health`,
  ].join('\n');
}
