#!/usr/bin/env node
// Thin entry: runs the bundled CLI (built by `npm run build`, which `npm install` runs).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { isatty } from 'node:tty';
import { fileURLToPath } from 'node:url';

// note: isolated-vm (functions) on Node >= 20 needs V8 started with `--no-node-snapshot`
// (DESIGN.md §10). Without it, this entry runs itself again under a child Node with the
// flag: stdio is shared, signals are passed on, and the child's exit code (or the signal that
// ended it) becomes ours. The child dies at once (SIGKILL, as its parent did) when this
// process is gone, so `kill -9` of this pid still ends the server abruptly.
const FLAG = '--no-node-snapshot';
const PARENT = 'PLATFORM_EDGE_REEXEC_PARENT';
const hasFlag = process.execArgv.includes(FLAG) || (process.env.NODE_OPTIONS ?? '').split(/\s+/).includes(FLAG);

if (!hasFlag && process.env[PARENT] === undefined) {
  const child = spawn(process.execPath, [FLAG, ...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, [PARENT]: String(process.pid) },
  });
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
  const parent = Number(process.env[PARENT]);
  if (process.env[PARENT] !== undefined) {
    delete process.env[PARENT];
    const watch = setInterval(() => {
      if (process.ppid !== parent) process.kill(process.pid, 'SIGKILL');
    }, 100);
    watch.unref();
  }
  const bundle = new URL('../build/platform-edge.mjs', import.meta.url);
  if (!existsSync(bundle)) {
    process.stderr.write('platform-edge: build/platform-edge.mjs is missing; run `npm run build` first.\n');
    process.exit(1);
  }
  const { main } = await import(bundle.href);
  process.exitCode = await main(process.argv.slice(2));
}
