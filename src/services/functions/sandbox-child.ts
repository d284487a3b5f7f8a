import { EdgeError } from '../../core/errors.js';
import { Gate } from './gate.js';
import { Sandbox, type CallHost } from './sandbox.js';
import { errorFromWire, errorToWire, Outbox, type SecretWire, type ToChild, type ToParent } from './sandbox-wire.js';

/**
 * The sandbox process (docs/api.md "Sandbox"): the isolates of every function run here, in a
 * child of the server started by sandbox-process.ts, never in the server itself. V8 ends a
 * process outright when an isolate runs out of memory in some ways isolated-vm cannot stop
 * (a large object or dictionary growing past the limit: `const o = {}; for (;;) o['k' + i++] = 1`);
 * here that ends this process, and the server answers the calls that were in it and starts
 * another. Bundled by build/build.mjs as build/chunks/functions-sandbox.mjs; run from source,
 * sandbox-process.ts bundles it with esbuild.
 *
 * Everything a call needs crosses as data: its arguments, its caller, the values of the secrets
 * it may read, and each `ctx` operation goes to the server and its answer comes back.
 */
const send = process.send?.bind(process);
if (send === undefined) throw new Error('functions-sandbox: run by the server only (an IPC channel is needed)');

const opts = JSON.parse(process.argv[2] ?? '{}') as { maxIsolates?: number; idleMs?: number; concurrency?: number };
const sandbox = new Sandbox({ maxIsolates: opts.maxIsolates ?? 64, idleMs: opts.idleMs ?? 300_000 });
// note: a project's calls take turns here, where they run: the server sends each call at once
// (it bounds how many wait, functions.ts), so the next call starts as one ends, with no round
// trip to the server between them.
const gate = new Gate(opts.concurrency ?? 4, Number.POSITIVE_INFINITY);
const codes = new Map<string, string>();
const ops = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
let opSeq = 0;
const out = new Outbox<ToParent>((batch) => send(batch));

function host(m: Extract<ToChild, { t: 'run' }>, left: () => number): CallHost {
  return {
    secret(name) {
      if (!Object.hasOwn(m.secrets, name)) throw new EdgeError('forbidden', `the secret "${name.slice(0, 128)}" is not listed in the function's "secrets" option`);
      const v: SecretWire = m.secrets[name]!;
      if (v !== null && typeof v === 'object') throw errorFromWire(v.error);
      return v;
    },
    op(op, payload) {
      return new Promise((resolve, reject) => {
        const n = ++opSeq;
        ops.set(n, { resolve, reject });
        out.push({ t: 'op', id: m.id, n, op, payload, left: left() });
      });
    },
  };
}

async function run(m: Extract<ToChild, { t: 'run' }>): Promise<void> {
  if (m.code !== undefined) codes.set(m.key, m.code);
  const release = gate.tryEnter(m.project) ?? (await gate.enter(m.project));
  const t0 = performance.now();
  const ms = (): number => Math.round((performance.now() - t0) * 100) / 100;
  const spec = {
    key: m.key,
    code: (): string => {
      const code = codes.get(m.key);
      if (code === undefined) throw new EdgeError('not_found', 'the function was deleted');
      return code;
    },
    memoryMb: m.memoryMb,
    timeoutMs: m.timeoutMs,
  };
  const left = (): number => Math.max(1, Math.floor(t0 + m.timeoutMs - performance.now()));
  try {
    const r = await sandbox.run(spec, m.args, m.user, host(m, left));
    out.push({ t: 'done', id: m.id, json: r.json, logs: r.logs, ms: ms() });
  } catch (err) {
    const logs = err instanceof EdgeError && Array.isArray(err.beside?.logs) ? (err.beside.logs as []) : [];
    out.push({ t: 'fail', id: m.id, error: errorToWire(err), logs, ms: ms() });
  } finally {
    release();
  }
}

process.on('message', (batch: ToChild[]) => {
  for (const m of batch) {
    switch (m.t) {
      case 'run':
        void run(m);
        break;
      case 'check':
        sandbox.check(m.code).then(
          () => out.push({ t: 'checked', id: m.id }),
          (err: unknown) => out.push({ t: 'checked', id: m.id, error: errorToWire(err) }),
        );
        break;
      case 'opres': {
        const p = ops.get(m.n);
        if (p === undefined) break;
        ops.delete(m.n);
        if (m.ok) p.resolve(m.value);
        else p.reject(errorFromWire(m.error));
        break;
      }
      case 'ping':
        out.push({ t: 'pong' });
        break;
      case 'drop': {
        const keys = new Set(m.keys);
        for (const k of keys) codes.delete(k);
        sandbox.drop((k) => keys.has(k));
        break;
      }
    }
  }
});

// note: the server is gone (it closed the channel, exited or was killed): so is this process.
process.on('disconnect', () => process.exit(0));
