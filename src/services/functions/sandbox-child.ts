import { EdgeError } from '../../core/errors.js';
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

const opts = JSON.parse(process.argv[2] ?? '{}') as { maxIsolates?: number; idleMs?: number };
const sandbox = new Sandbox({ maxIsolates: opts.maxIsolates ?? 64, idleMs: opts.idleMs ?? 300_000 });
const codes = new Map<string, string>();
const ops = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
let opSeq = 0;
const out = new Outbox<ToParent>((batch) => send(batch));

function host(m: Extract<ToChild, { t: 'run' }>): CallHost {
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
        out.push({ t: 'op', id: m.id, n, op, payload });
      });
    },
  };
}

function run(m: Extract<ToChild, { t: 'run' }>): void {
  if (m.code !== undefined) codes.set(m.key, m.code);
  const spec = {
    key: m.key,
    code: (): string => {
      const code = codes.get(m.key);
      if (code === undefined) throw new Error(`functions-sandbox: no code for ${m.key}`);
      return code;
    },
    memoryMb: m.memoryMb,
    timeoutMs: m.timeoutMs,
  };
  sandbox.run(spec, m.args, m.user, host(m)).then(
    (r) => out.push({ t: 'done', id: m.id, json: r.json, logs: r.logs }),
    (err: unknown) => {
      const logs = err instanceof EdgeError && Array.isArray(err.beside?.logs) ? (err.beside.logs as []) : [];
      out.push({ t: 'fail', id: m.id, error: errorToWire(err), logs });
    },
  );
}

process.on('message', (batch: ToChild[]) => {
  for (const m of batch) {
    switch (m.t) {
      case 'run':
        run(m);
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
