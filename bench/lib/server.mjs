// Starting benchmark server processes and waiting for their one JSON "ready" line.
//
// A server spec is a plain object: { id, label, cmd: [file, ...args], env?, cwd? }.
// The process must print a JSON object on one stdout line once it listens, with either
// `url` ("http://127.0.0.1:PORT") or `port`. The parsed object is returned as `info`
// (our CLI adds keys, project_id, operator_token), so scenarios can derive headers from it.
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The repository root (bench/lib/ → ../..). */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const live = new Set();
let hooked = false;

/** Kills every server this process started (on exit or Ctrl-C), so no load is left running. */
function hookExit() {
  if (hooked) return;
  hooked = true;
  const killAll = () => {
    for (const child of live) {
      try {
        child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  };
  process.on('exit', killAll);
  for (const sig of ['SIGINT', 'SIGTERM']) {
    process.on(sig, () => {
      killAll();
      process.exit(130);
    });
  }
}

/**
 * Spawns a server and resolves once its JSON line arrives.
 * Returns { spec, info, url, pid, readyMs, stop() }; readyMs is spawn → JSON line.
 */
export function startServer(spec, { timeoutMs = 15_000 } = {}) {
  hookExit();
  const [file, ...args] = spec.cmd;
  const t0 = process.hrtime.bigint();
  const child = spawn(file, args, {
    cwd: spec.cwd ?? ROOT,
    env: { ...process.env, ...spec.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  child.on('exit', () => live.delete(child));
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d) => {
    if (stderr.length < 8192) stderr += d;
  });
  return new Promise((resolve, reject) => {
    let buf = '';
    let settled = false;
    const fail = (msg) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new Error(`${spec.label ?? spec.id}: ${msg}${stderr ? `\n--- stderr ---\n${stderr.trim()}` : ''}`));
    };
    const timer = setTimeout(() => fail(`no JSON line within ${timeoutMs} ms`), timeoutMs);
    child.on('error', (err) => fail(`cannot spawn ${file}: ${err.message}`));
    child.on('exit', (code, sig) => fail(`exited (${code ?? sig}) before printing its JSON line`));
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d) => {
      if (settled) return;
      buf += d;
      for (let nl = buf.indexOf('\n'); nl !== -1; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line.startsWith('{')) continue;
        let info;
        try {
          info = JSON.parse(line);
        } catch {
          continue;
        }
        const readyMs = Number(process.hrtime.bigint() - t0) / 1e6;
        const url = info.url ?? (info.port !== undefined ? `http://127.0.0.1:${info.port}` : null);
        if (!url) return fail(`JSON line has neither url nor port: ${line}`);
        if (!/^http:\/\/127\.0\.0\.1:\d+$/.test(url)) return fail(`refusing a non-loopback url: ${url}`);
        settled = true;
        clearTimeout(timer);
        child.stdout.resume(); // keep draining so the child never blocks on a full pipe
        resolve({ spec, info, url, pid: child.pid, readyMs, stderr: () => stderr, stop: () => stopChild(child) });
        return;
      }
    });
  });
}

/** SIGTERM, then SIGKILL after a grace period; resolves once the process is gone. */
function stopChild(child, graceMs = 5_000) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/**
 * A process and its live descendants (from /proc/<pid>/task/<tid>/children): the server and the
 * functions' sandbox process it starts (docs/api.md "Sandbox") are measured together.
 */
function tree(pid) {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    let tids = [];
    try {
      tids = readdirSync(`/proc/${out[i]}/task`);
    } catch {
      continue;
    }
    for (const tid of tids) {
      try {
        const kids = readFileSync(`/proc/${out[i]}/task/${tid}/children`, 'utf8').trim();
        if (kids !== '') out.push(...kids.split(/\s+/).map(Number));
      } catch {
        // note: the thread ended between the two reads.
      }
    }
  }
  return out;
}

/** Resident set size of a process and its descendants in MB (VmRSS of /proc/<pid>/status), or null if unreadable. */
export function rssMb(pid) {
  let total = null;
  for (const p of tree(pid)) {
    try {
      const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${p}/status`, 'utf8'));
      if (m) total = (total ?? 0) + Number(m[1]) / 1024;
    } catch {
      // note: gone since it was listed.
    }
  }
  return total;
}

let clkTck = null;

/**
 * CPU time (user + system) a process and its live descendants have used so far, in ms (from
 * /proc/<pid>/stat), or null if unreadable. Per-request CPU cost is far less sensitive to a noisy,
 * shared machine than req/s: it does not count the time the process waits for a core.
 */
export function cpuMs(pid) {
  clkTck ??= Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
  let total = null;
  for (const p of tree(pid)) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // fields 14 and 15 of stat (utime, stime); f[0] is field 3
      total = (total ?? 0) + ((Number(f[11]) + Number(f[12])) * 1000) / clkTck;
    } catch {
      // note: gone since it was listed.
    }
  }
  return total;
}

/** Keeps one running instance per spec id for a whole section; stopAll() ends them. */
export class ServerPool {
  #running = new Map();

  get(spec) {
    let p = this.#running.get(spec.id);
    if (!p) {
      p = startServer(spec);
      this.#running.set(spec.id, p);
      p.catch(() => this.#running.delete(spec.id));
    }
    return p;
  }

  async stopAll() {
    const all = [...this.#running.values()];
    this.#running.clear();
    await Promise.all(all.map((p) => p.then((s) => s.stop(), () => {})));
  }
}

// The standard servers. Scenario files use these (or their own specs of the same shape).
const node = process.execPath;

export const servers = {
  /** Bare uWS hello (bench/bare-uws.mjs). */
  bareUws: { id: 'bare-uws', label: 'bare uWS hello', cmd: [node, 'bench/bare-uws.mjs', '0'] },
  /** Bare node:http hello (bench/bare-node.mjs). */
  bareNode: { id: 'bare-node', label: 'bare node:http hello', cmd: [node, 'bench/bare-node.mjs', '0'] },
  /**
   * Our server as a real CLI process on a fresh ephemeral data folder:
   * `node bin/platform-edge.js serve --ephemeral --port 0 --json`, PLATFORM_EDGE_HTTP=uws|node.
   * `extraEnv` lets a scenario file tune config through the environment; `nodeArgs` adds
   * node flags (e.g. --cpu-prof) — give such variants a distinct id; `cwd` runs another
   * checkout (its bin/ and build/), e.g. to compare a patched copy.
   */
  edge: (http = 'uws', { extraEnv = {}, nodeArgs = [], id, cwd } = {}) => ({
    id: id ?? `edge-${http}`,
    label: `platform-edge (${http})`,
    ...(cwd ? { cwd } : {}),
    // note: `pid` is the server itself; cpuMs and rssMb add its children (the functions' sandbox process).
    cmd: [node, ...nodeArgs, 'bin/platform-edge.js', 'serve', '--ephemeral', '--port', '0', '--json'],
    env: { PLATFORM_EDGE_HTTP: http, ...extraEnv },
  }),
};
