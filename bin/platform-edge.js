#!/usr/bin/env -S node --no-node-snapshot
// Thin entry: runs the bundled CLI (built by `npm run build`, which `npm install` runs).
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { isatty } from 'node:tty';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { Script } from 'node:vm';

// note: isolated-vm (functions) on Node >= 20 needs V8 started with `--no-node-snapshot`
// (DESIGN.md §10). Run as a program (`npx platform-edge`, `./bin/platform-edge.js`: the line
// above, `env -S`), Node starts with the flag and nothing more happens. Run as
// `node bin/platform-edge.js` (no flag), this entry runs itself again under a child Node with the
// flag: stdio is shared, signals are passed on, and the child's exit code (or the signal that
// ended it) becomes ours. A link (fd 3) tells the child how this entry ended:
// - killed (`kill -9`): the link closes unannounced and the child kills itself (SIGKILL), so
//   the server still ends abruptly, as it did when it was this process;
// - its own parent died: this entry says so on the link and exits; the child's parent then
//   changes, which `serve` already follows (ephemeral, or started by npm) as it did before.
const FLAG = '--no-node-snapshot';
const LINKED = 'PLATFORM_EDGE_REEXEC_LINK';
const PARENT_GONE = 'parent-exited\n';
const hasFlag = process.execArgv.includes(FLAG) || (process.env.NODE_OPTIONS ?? '').split(/\s+/).includes(FLAG);

// note: only `serve` runs functions; the other commands (project, key, operator, help) start once.
if (!hasFlag && process.env[LINKED] === undefined && process.argv[2] === 'serve') {
  // note: imported here, not above: a server started with the flag never loads child_process (~13 ms).
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, [FLAG, ...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: ['inherit', 'inherit', 'inherit', 'pipe'],
    env: { ...process.env, [LINKED]: '3' },
  });
  const link = child.stdio[3];
  link.on('error', () => {});
  const parent = process.ppid;
  const watch = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(watch);
    link.end(PARENT_GONE, () => process.exit(0));
  }, 200);
  watch.unref();
  const forward = (sig) => {
    // note: Ctrl-C at a terminal already reaches the child (same foreground process group);
    // passing it on too would count as a second Ctrl-C, which forces the exit.
    if (sig === 'SIGINT' && isatty(0)) return;
    if (child.exitCode === null && child.signalCode === null) child.kill(sig);
  };
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR2'];
  for (const sig of signals) process.on(sig, forward);
  child.on('error', (err) => {
    process.stderr.write(`platform-edge: cannot start node ${FLAG}: ${err.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    if (signal !== null) {
      for (const sig of signals) process.off(sig, forward);
      process.kill(process.pid, signal);
      return;
    }
    process.exit(code ?? 1);
  });
} else {
  if (process.env[LINKED] !== undefined) {
    delete process.env[LINKED];
    const link = new Socket({ fd: 3, readable: true, writable: false });
    let told = '';
    link.setEncoding('utf8');
    link.on('data', (d) => (told += d));
    link.on('error', () => {});
    link.on('close', () => {
      if (told !== PARENT_GONE) process.kill(process.pid, 'SIGKILL');
    });
    link.unref();
  }
  const { main } = loadBundle();
  process.exitCode = await main(process.argv.slice(2));
}

/**
 * Runs build/platform-edge.cjs (the bundled CLI) through V8's code cache: the first `serve`
 * compiles it and, 2 s after it started, writes the compiled code
 * beside it (build/platform-edge.cjs.<digest>.cache, by write-then-rename, so concurrent starts never
 * read half a file); later starts hand it back to V8, which checks it against the source, its
 * own version and flags and falls back to compiling (and rewrites it) on any mismatch. A
 * folder we cannot write (a read-only install) only means no cache. About 40–50 ms of the time
 * to ready (docs/benchmarks.md "Startup").
 */
function loadBundle() {
  const file = fileURLToPath(new URL('../build/platform-edge.cjs', import.meta.url));
  if (!existsSync(file)) {
    process.stderr.write('platform-edge: build/platform-edge.cjs is missing; run `npm run build` first.\n');
    process.exit(1);
  }
  // note: set before compiling: V8 keys cached code by its flags, and the SQL parser
  // (src/sql/pg/parse.ts) sets this one when it loads; set later it would void the cache every time.
  setFlagsFromString('--liftoff-only');
  const source = readFileSync(file);
  // note: V8 checks cached code against the source's length only; the digest in the name ties
  // the cache to these very bytes, so a rebuild never runs an older build's code.
  const digest = createHash('sha256').update(source).digest('hex').slice(0, 16);
  const cacheFile = `${file}.${digest}.cache`;
  let cached;
  try {
    cached = readFileSync(cacheFile);
  } catch {
    cached = undefined;
  }
  const script = new Script(`(function (exports, require, module, __filename, __dirname) {${source.toString('utf8')}\n})`, {
    filename: file,
    cachedData: cached,
  });
  const module = { exports: {} };
  script.runInThisContext()(module.exports, createRequire(file), module, file, dirname(file));
  // note: only `serve` writes it (where time to ready counts), once it is up, so the functions its start ran are in it.
  if (process.argv[2] === 'serve' && (cached === undefined || script.cachedDataRejected === true)) {
    const save = () => {
      const tmp = `${cacheFile}.${process.pid}.tmp`;
      try {
        writeFileSync(tmp, script.createCachedData());
        renameSync(tmp, cacheFile);
        // note: older builds' caches go.
        for (const f of readdirSync(dirname(file))) {
          if (/^platform-edge\.cjs\.[0-9a-f]{16}\.cache$/.test(f) && join(dirname(file), f) !== cacheFile) rmSync(join(dirname(file), f), { force: true });
        }
      } catch {
        rmSync(tmp, { force: true });
      }
    };
    setTimeout(save, 2000).unref();
  }
  return module.exports;
}
