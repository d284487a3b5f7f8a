import { fstatSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, publicUrl as checkPublicUrl, type Config } from '../config.js';
import { bootstrap, type Boot } from '../bootstrap.js';
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
  --ephemeral          use a fresh temporary data folder, deleted on exit (for CI); also
                       stops when its parent process dies or its stdin (a pipe) closes
  --rate-limit on|off  auth rate limits (default on; off with --ephemeral unless this flag
                       or PLATFORM_EDGE_RATE_LIMIT is given)
  --headers-timeout-ms N      time to send a request's headers (default 10000; node:http)
  --request-timeout-ms N      time to send a whole request (default 30000; 0: none)
  --keep-alive-timeout-ms N   idle keep-alive connections close after it (default 10000; node:http)
  --max-connections N         open connections at most (default 10000, 0: no cap; node:http)
  --max-connections-per-ip N  per client address (default 4096, 0: no cap; node:http)
  --storage-quota BYTES       bytes of objects each project may store (default 0: no quota)
  --json               print one JSON line {url, project_id, keys, operator_token} once listening
  -h, --help           this help

Environment: PLATFORM_EDGE_HTTP=uws|node forces an HTTP backend; PLATFORM_EDGE_MASTER_KEY
sets the master key (else <data-dir>/master.key is created).`;

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
    'storage-quota': { type: 'string' },
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
  // note: a CI server must not outlive what started it (docs/operations.md, "Ephemeral mode").
  // Started by npm (`npx`, `npm start`), a signal to npm does not reach this process (npm runs
  // it under `sh -c`), so it follows its parent then too.
  const byNpm = (io.env.npm_lifecycle_event ?? '') !== '';
  const unwatch = ephemeral || byNpm ? watchParent(stopping.stop, ephemeral) : () => {};
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
        storageQuota: countFlag(values, 'storage-quota'),
      },
      io.env,
    );
    server = createServer(config, (msg, err) => io.err(`platform-edge: ${msg}${err instanceof Error ? `: ${err.stack ?? err.message}` : ''}`));
  } catch (err) {
    unwatch();
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
    unwatch();
    stopping.dispose();
    throw err;
  }
  await stopping.signalled;
  await server.close();
  unwatch();
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

/** Validates --public-url as config.ts does PLATFORM_EDGE_PUBLIC_URL; a bad value is a usage error. */
function publicUrlFlag(v: string | undefined): string | null {
  if (v === undefined) return null;
  try {
    return checkPublicUrl(v, '--public-url');
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/**
 * Resolves on the first SIGINT/SIGTERM (or `stop(reason)`). A second signal while shutting
 * down forces the exit (code 1), as users expect of a second Ctrl-C; `beforeForcedExit` still
 * removes an ephemeral folder.
 */
function stopSignal(io: Io, beforeForcedExit: () => void): { signalled: Promise<void>; stop(reason: string): void; dispose(): void } {
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
    stop: (reason) => {
      if (count > 0) return;
      count++;
      io.err(`platform-edge: ${reason}, shutting down`);
      resolve();
    },
    dispose: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/** How often an ephemeral server checks that its parent process still lives, ms. */
const PARENT_POLL_MS = 1000;

/**
 * Calls `stop` when the process that started this one dies (the parent process id changes:
 * an orphan is adopted by init or a subreaper) or, with `stdin` and when stdin is a pipe or a
 * socket, when it closes. Stdin that is a terminal, a file or /dev/null (a shell's `&` gives
 * that) is not watched. Returns the function that stops watching.
 */
function watchParent(stop: (reason: string) => void, stdin: boolean): () => void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid !== parent) stop('parent process exited');
  }, PARENT_POLL_MS);
  timer.unref();
  const stdinIsPipe = stdin && isPipe(0);
  const onEnd = (): void => stop('stdin closed');
  if (stdinIsPipe) {
    // note: what the parent writes is read and dropped; only the end matters.
    process.stdin.on('data', () => {});
    process.stdin.once('end', onEnd);
    process.stdin.once('error', onEnd);
    process.stdin.resume();
  }
  return () => {
    clearInterval(timer);
    if (stdinIsPipe) {
      process.stdin.off('end', onEnd);
      process.stdin.pause();
    }
  };
}

/** True when the file descriptor is a pipe or a socket (false when closed). */
function isPipe(fd: number): boolean {
  try {
    const st = fstatSync(fd);
    return st.isFIFO() || st.isSocket();
  } catch {
    return false;
  }
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
