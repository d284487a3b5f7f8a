#!/usr/bin/env -S node --no-node-snapshot
// Thin entry: runs the bundled CLI (built by `npm run build`, which `npm install` runs).
import { existsSync } from 'node:fs';
import { Socket } from 'node:net';
import { isatty } from 'node:tty';
import { fileURLToPath } from 'node:url';

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
  const bundle = new URL('../build/platform-edge.mjs', import.meta.url);
  if (!existsSync(bundle)) {
    process.stderr.write('platform-edge: build/platform-edge.mjs is missing; run `npm run build` first.\n');
    process.exit(1);
  }
  const { main } = await import(bundle.href);
  process.exitCode = await main(process.argv.slice(2));
}
