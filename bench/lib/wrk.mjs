// Running wrk against 127.0.0.1 and parsing its report.
import { execFile, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const DEFAULTS = {
  threads: 1,
  connections: 50,
  duration: process.env.BENCH_DURATION || '10s',
  warmup: process.env.BENCH_WARMUP || '2s',
};

const LUA_DIR = fileURLToPath(new URL('../lua/', import.meta.url));
/** Path of a script in bench/lua/. */
export const luaScript = (name) => `${LUA_DIR}${name}`;

/** wrk's version string, or null when wrk is not installed. */
export function wrkVersion() {
  const r = spawnSync('wrk', ['-v'], { encoding: 'utf8' });
  if (r.error) return null;
  const m = /wrk\s+(\S+)/.exec(`${r.stdout}${r.stderr}`);
  return m ? m[1] : 'unknown';
}

/** Exits with a clear message when wrk is missing. */
export function requireWrk() {
  const v = wrkVersion();
  if (v === null) {
    process.stderr.write(
      'bench: wrk is not installed (or not on PATH).\n' +
        '  Install it with: apt-get update && apt-get install -y wrk   (Debian package "wrk")\n' +
        '  autocannon is not a substitute: it saturates near 100k req/s and cannot measure uWS.\n',
    );
    process.exit(2);
  }
  return v;
}

/** Duration string ("10s", "1m", "500ms") → seconds. */
export function seconds(d) {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(String(d).trim());
  if (!m) throw new Error(`bad duration "${d}" (use e.g. 5s, 1m)`);
  const n = Number(m[1]);
  return { ms: n / 1000, s: n, m: n * 60, h: n * 3600, undefined: n }[m[2]];
}

const UNIT_MS = { us: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

function latencyMs(text) {
  const m = /^([\d.]+)(us|ms|s|m|h)$/.exec(text);
  return m ? Number(m[1]) * UNIT_MS[m[2]] : NaN;
}

/** Parses wrk --latency output. */
export function parseWrk(out) {
  const num = (re) => {
    const m = re.exec(out);
    return m ? Number(m[1]) : 0;
  };
  const pct = (p) => {
    const m = new RegExp(`^\\s*${p}%\\s+(\\S+)`, 'm').exec(out);
    return m ? latencyMs(m[1]) : NaN;
  };
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const reqs = /(\d+) requests in ([\d.]+)(\w+)/.exec(out);
  return {
    rps: num(/^Requests\/sec:\s+([\d.]+)/m),
    p50: pct(50),
    p75: pct(75),
    p90: pct(90),
    p99: pct(99),
    requests: reqs ? Number(reqs[1]) : 0,
    non2xx: num(/Non-2xx or 3xx responses:\s+(\d+)/),
    socketErrors: sock ? sock.slice(1).reduce((a, b) => a + Number(b), 0) : 0,
  };
}

/**
 * Runs wrk once. `url` must be on 127.0.0.1. Options: path, headers ({name: value}),
 * method, body (sent via bench/lua/request.lua), script (a custom Lua file; overrides
 * method/body), duration, threads, connections.
 */
export function runWrk(url, opts = {}) {
  const base = new URL(url);
  if (base.hostname !== '127.0.0.1') throw new Error(`wrk target must be 127.0.0.1, got ${base.hostname}`);
  const target = new URL(opts.path ?? '/', base).href;
  const duration = opts.duration ?? DEFAULTS.duration;
  const args = [
    `-t${opts.threads ?? DEFAULTS.threads}`,
    `-c${opts.connections ?? DEFAULTS.connections}`,
    `-d${duration}`,
    '--latency',
    '--timeout',
    '5s',
  ];
  for (const [k, v] of Object.entries(opts.headers ?? {})) args.push('-H', `${k}: ${v}`);
  const env = { ...process.env };
  if (opts.script) args.push('-s', opts.script);
  else if (opts.method || opts.body) {
    args.push('-s', luaScript('request.lua'));
    env.WRK_METHOD = opts.method ?? 'GET';
    if (opts.body !== undefined) env.WRK_BODY = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
  }
  args.push(target);
  const limitMs = (seconds(duration) + 30) * 1000;
  return new Promise((resolve, reject) => {
    execFile('wrk', args, { env, timeout: limitMs, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`wrk failed: ${err.message}\n${stderr}`));
      const r = parseWrk(stdout);
      if (!r.rps) return reject(new Error(`could not parse wrk output:\n${stdout}\n${stderr}`));
      resolve({ ...r, command: `wrk ${args.map((a) => (/\s/.test(a) ? `'${a}'` : a)).join(' ')}`, raw: stdout });
    });
  });
}
