import { fork, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EdgeError, normalize } from '../../core/errors.js';
import { entryScript } from '../../paths.js';
import { CHECK_MEMORY_MB, errorFromWire, errorToWire, Outbox, type CallSpec, type LogLine, type SecretWire, type ToChild, type ToParent } from './sandbox-wire.js';

/**
 * The server's side of the sandbox process (docs/api.md "Sandbox"). User code never runs in the
 * server: sandbox-child.ts runs the isolates in a child process, and this class sends it each
 * call and carries its `ctx` operations back to the server's services.
 *
 * Why a process: V8 ends the process outright (SIGABRT, no exception) when an isolate runs out
 * of memory in ways isolated-vm cannot stop, such as a plain object or a Map grown in a loop
 * (V8's fatal `CALL_AND_RETRY_LAST`). In the server that would end every project's
 * requests at once; here it ends the sandbox process, and:
 * - each call that had started in it is answered: alone there, it is the one that ended it, 500
 *   `function_out_of_memory`; with others, 503 `unavailable` (`Retry-After: 1`), as nobody knows
 *   which call it was; calls still waiting there for their project's turn are sent again;
 * - the functions (versions) that had started calls in it become **suspects**: their calls run in
 *   a second process, the quarantine, **one at a time**, so that another end there names its
 *   cause exactly. A suspect that completes `CLEARED_AFTER` calls there in a row goes back; one
 *   that ended a process alone stays (a new version is a new function);
 * - the next call starts a new process (the warm isolates of the old one are gone: cold starts).
 * The process starts with the first call or deploy, not with the server, and ends with it (it
 * exits when its IPC channel closes, so `kill -9` of the server ends it too).
 */
export interface HostSide {
  /** A `ctx` operation (`db.*`, `fetch`), run in the server as the caller, with `leftMs` of the call's time left; a JSON value. */
  op(op: string, payload: unknown, leftMs: number): Promise<unknown>;
  /** The secrets the function may read, by name (read when the call starts). */
  secrets(): Record<string, SecretWire>;
}

type Logger = (msg: string, err?: unknown) => void;

/** Calls a suspect completes in the quarantine, in a row, before it goes back. */
const CLEARED_AFTER = 20;
/** Code of at most this many versions is kept in a sandbox process (the least recently used goes). */
const KNOWN_KEYS = 1024;
const MAX_SUSPECTS = 4096;
/** While calls are in it, the process answers a ping each PING_MS; silent for DEAD_MS, it is killed. */
const PING_MS = 2000;
const DEAD_MS = 15_000;

/** What a call or check is answered with: the result's JSON, its logs, its time in the sandbox (ms). */
export interface Answer {
  json: string;
  logs: LogLine[];
  ms: number;
}

/** A call or a deploy check, from its submission to its answer (sent again if it waited in a process that ended). */
interface Job {
  readonly kind: 'run' | 'check';
  readonly key: string;
  /** The project whose turn it takes in the sandbox process ('' for a check). */
  readonly project: string;
  readonly memoryMb: number;
  readonly host: HostSide | null;
  readonly send: (child: Child, id: number) => void;
  readonly resolve: (v: Answer) => void;
  readonly reject: (e: Error) => void;
  quarantined: boolean;
}

class Child {
  readonly pending = new Map<number, Job>();
  /** Keys whose code this process holds, least recently used first. */
  readonly known = new Map<string, true>();
  readonly out: Outbox<ToChild>;
  readonly proc: ChildProcess;
  dead = false;
  /** Killed by the server: it stopped answering pings. */
  unresponsive = false;
  lastPong = 0;
  ping: NodeJS.Timeout | null = null;

  constructor(proc: ChildProcess) {
    this.proc = proc;
    this.out = new Outbox<ToChild>((batch) => {
      if (this.dead || !proc.connected) return;
      proc.send(batch, (err) => {
        // note: the process went away between the check and the write: its exit answers the calls.
        if (err) proc.kill('SIGKILL');
      });
    });
  }
}

export class SandboxProcess {
  readonly #opts: { maxIsolates: number; idleMs: number; concurrency: number };
  readonly #log: Logger;
  #main: Child | null = null;
  #quarantine: Child | null = null;
  /** Suspect keys → calls completed in a row in the quarantine, or -1 for a proven cause. */
  readonly #suspects = new Map<string, number>();
  /** The quarantine's calls waiting for the one in it. */
  readonly #queue: Job[] = [];
  #seq = 0;
  #closed = false;

  /** `concurrency`: calls of one project that run at once in the process (docs/api.md "Sandbox"). */
  constructor(opts: { maxIsolates: number; idleMs: number; concurrency: number }, log: Logger) {
    this.#opts = opts;
    this.#log = log;
  }

  /** The deploy check (sandbox.ts `check`), in the sandbox process; 400 `invalid_source` when refused. */
  async check(code: string): Promise<void> {
    const key = `check:${createHash('sha256').update(code).digest('base64url')}`;
    await new Promise<Answer>((resolve, reject) =>
      this.#dispatch({ kind: 'check', key, project: '', memoryMb: CHECK_MEMORY_MB, host: null, send: (child, id) => child.out.push({ t: 'check', id, code }), resolve, reject, quarantined: false }),
    );
  }

  /**
   * One call (sandbox.ts `run`) of `project`, in the sandbox process: it waits there for one of the
   * project's `concurrency` turns, in order. `ms` is its time from that turn to its end.
   */
  run(project: string, spec: CallSpec, argsJson: string, userJson: string, host: HostSide): Promise<Answer> {
    const send = (child: Child, id: number): void => {
      let code: string | undefined;
      if (child.known.has(spec.key)) {
        child.known.delete(spec.key);
      } else {
        code = spec.code();
        if (child.known.size >= KNOWN_KEYS) {
          const [oldest] = child.known.keys();
          child.known.delete(oldest!);
          child.out.push({ t: 'drop', keys: [oldest!] });
        }
      }
      child.known.set(spec.key, true);
      const secrets = host.secrets();
      child.out.push({ t: 'run', id, project, key: spec.key, code, memoryMb: spec.memoryMb, timeoutMs: spec.timeoutMs, args: argsJson, user: userJson, secrets });
    };
    return new Promise((resolve, reject) => this.#dispatch({ kind: 'run', key: spec.key, project, memoryMb: spec.memoryMb, host, send, resolve, reject, quarantined: false }));
  }

  /** Forgets these keys' isolates and code (a deleted function, a deleted project). */
  drop(match: (key: string) => boolean): void {
    for (const child of [this.#main, this.#quarantine]) {
      if (child === null || child.dead) continue;
      const keys = [...child.known.keys()].filter(match);
      if (keys.length === 0) continue;
      for (const k of keys) child.known.delete(k);
      child.out.push({ t: 'drop', keys });
    }
    for (const k of [...this.#suspects.keys()]) if (match(k)) this.#suspects.delete(k);
  }

  close(): void {
    this.#closed = true;
    for (const job of this.#queue.splice(0)) job.reject(closing());
    for (const child of [this.#main, this.#quarantine]) {
      if (child === null || child.dead) continue;
      child.dead = true;
      if (child.ping !== null) clearInterval(child.ping);
      for (const job of child.pending.values()) job.reject(closing());
      child.pending.clear();
      child.out.clear();
      if (child.proc.connected) child.proc.disconnect();
      child.proc.kill('SIGKILL');
    }
    this.#main = this.#quarantine = null;
  }

  #dispatch(job: Job): void {
    if (this.#closed) return job.reject(closing());
    if (!this.#suspects.has(job.key)) return this.#send(job, false);
    // note: the quarantine runs one call at a time.
    this.#queue.push(job);
    this.#next();
  }

  #send(job: Job, quarantined: boolean): void {
    job.quarantined = quarantined;
    let child: Child;
    try {
      child = this.#child(quarantined);
    } catch (err) {
      return this.#finish(job, normalize(err));
    }
    const id = ++this.#seq;
    child.pending.set(id, job);
    if (child.ping === null) this.#watch(child);
    try {
      job.send(child, id);
    } catch (err) {
      // note: the version's code could not be read (deleted since): nothing was sent.
      child.pending.delete(id);
      this.#finish(job, normalize(err));
    }
  }

  #finish(job: Job, result: Answer | Error): void {
    if (result instanceof Error) job.reject(result);
    else {
      if (job.quarantined) this.#cleared(job.key);
      job.resolve(result);
    }
    if (job.quarantined) this.#next();
  }

  /** Starts the quarantine's next call when none is in it. */
  #next(): void {
    if (this.#quarantine !== null && this.#quarantine.pending.size > 0) return;
    const job = this.#queue.shift();
    if (job !== undefined) this.#send(job, true);
  }

  #cleared(key: string): void {
    const n = this.#suspects.get(key);
    if (n === undefined || n < 0) return;
    if (n + 1 >= CLEARED_AFTER) this.#suspects.delete(key);
    else this.#suspects.set(key, n + 1);
  }

  #suspect(key: string, proven: boolean): void {
    const n = this.#suspects.get(key);
    this.#suspects.delete(key);
    this.#suspects.set(key, proven || n === -1 ? -1 : 0);
    if (this.#suspects.size > MAX_SUSPECTS) {
      const [oldest] = this.#suspects.keys();
      this.#suspects.delete(oldest!);
    }
  }

  #child(quarantine: boolean): Child {
    const have = quarantine ? this.#quarantine : this.#main;
    if (have !== null && !have.dead) return have;
    const proc = fork(childScript(), [JSON.stringify(this.#opts)], {
      execArgv: ['--no-node-snapshot'],
      serialization: 'json',
      // note: stderr is read and dropped: V8's report of an abort is not a server log line.
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      // note: none of the server's environment: no Node options (a test runner's loaders), and no
      // setting or credential the server was given reaches the process that runs user code.
      env: {},
    });
    proc.stderr?.resume();
    const child = new Child(proc);
    proc.on('message', (batch: ToParent[]) => this.#receive(child, batch));
    proc.on('exit', (code, signal) => this.#exited(child, code, signal));
    proc.on('error', () => {});
    // note: an idle sandbox process keeps no server alive; a running call keeps its request's socket.
    proc.unref();
    proc.channel?.unref();
    if (quarantine) this.#quarantine = child;
    else this.#main = child;
    return child;
  }

  #watch(child: Child): void {
    child.lastPong = Date.now();
    child.ping = setInterval(() => {
      if (child.pending.size === 0) {
        clearInterval(child.ping!);
        child.ping = null;
        return;
      }
      if (Date.now() - child.lastPong > DEAD_MS) {
        child.unresponsive = true;
        child.proc.kill('SIGKILL');
        return;
      }
      child.out.push({ t: 'ping' });
    }, PING_MS).unref();
  }

  #receive(child: Child, batch: ToParent[]): void {
    for (const m of batch) {
      if (m.t === 'pong') {
        child.lastPong = Date.now();
        continue;
      }
      if (m.t === 'op') {
        this.#op(child, m);
        continue;
      }
      const job = child.pending.get(m.id);
      if (job === undefined) continue;
      child.pending.delete(m.id);
      if (m.t === 'done') this.#finish(job, { json: m.json, logs: m.logs, ms: m.ms });
      else if (m.t === 'fail') this.#finish(job, errorFromWire(m.error, { logs: m.logs }));
      else this.#finish(job, m.error === undefined ? { json: 'null', logs: [], ms: 0 } : errorFromWire(m.error));
    }
  }

  #op(child: Child, m: Extract<ToParent, { t: 'op' }>): void {
    const job = child.pending.get(m.id);
    const answer = (msg: ToChild): void => {
      if (!child.dead) child.out.push(msg);
    };
    if (job === undefined || job.host === null) {
      answer({ t: 'opres', n: m.n, ok: false, error: { code: 'function_error', message: 'this call has ended' } });
      return;
    }
    job.host.op(m.op, m.payload, m.left).then(
      (value) => answer({ t: 'opres', n: m.n, ok: true, value: value ?? null }),
      (err: unknown) => answer({ t: 'opres', n: m.n, ok: false, error: errorToWire(err) }),
    );
  }

  /** The process ended: its calls are answered or sent again (see the class's note), and the next call starts another. */
  #exited(child: Child, code: number | null, signal: NodeJS.Signals | null): void {
    const wasDead = child.dead;
    child.dead = true;
    if (child.ping !== null) clearInterval(child.ping);
    child.out.clear();
    if (this.#main === child) this.#main = null;
    const quarantine = this.#quarantine === child;
    if (quarantine) this.#quarantine = null;
    if (wasDead) return;
    const jobs = [...child.pending.values()];
    child.pending.clear();
    // note: the process runs `concurrency` calls of a project at once, the others wait there in
    // the order they were sent (the Map's order): those past a project's first `concurrency`
    // calls had not started, so they go again, unharmed.
    const running: Job[] = [];
    const waiting: Job[] = [];
    const seen = new Map<string, number>();
    for (const job of jobs) {
      const n = seen.get(job.project) ?? 0;
      seen.set(job.project, n + 1);
      if (job.kind === 'check' || n < this.#opts.concurrency) running.push(job);
      else waiting.push(job);
    }
    const why = child.unresponsive ? 'it stopped answering' : signal !== null ? `signal ${signal}` : `exit code ${code}`;
    this.#log(`functions: the sandbox process ended (${why}) with ${jobs.length} call(s) in it, ${running.length} of them started; the next call starts another`);
    // note: a call is blamed only when a signal ended the process (V8's abort, SIGABRT; a crash):
    // an exit with a code is the sandbox's own failure (it could not start, a fault in its code),
    // and a process killed for not answering says nothing of which call hung it.
    const blame = signal !== null && !child.unresponsive;
    const alone = blame && running.length === 1;
    if (blame) for (const job of running) this.#suspect(job.key, alone);
    for (const job of running) {
      if (alone && job.kind === 'run') {
        this.#finish(job, new EdgeError('function_out_of_memory', `the function used more than its memory limit of ${job.memoryMb} MB`, { beside: { logs: [] } }));
      } else if (alone) {
        this.#finish(job, new EdgeError('invalid_source', `the module's top level used more than ${CHECK_MEMORY_MB} MB of memory`));
      } else {
        const e = new EdgeError('unavailable', 'the function sandbox was restarted under this call (another call ended it); retry', {
          headers: { 'retry-after': '1' },
          beside: job.kind === 'run' ? { logs: [] } : undefined,
        });
        this.#finish(job, e);
      }
    }
    for (const job of waiting) this.#dispatch(job);
    if (quarantine) this.#next();
  }
}

const closing = (): EdgeError => new EdgeError('unavailable', 'the server is shutting down', { headers: { 'retry-after': '1' } });

let script: string | null = null;

/**
 * The sandbox process's script file: build/chunks/functions-sandbox.mjs, or, run from source
 * (src/paths.ts `entryScript`), sandbox-child.ts bundled once per process and written to the
 * temporary folder under a name taken from its content (a child process needs a file).
 */
function childScript(): string {
  if (script !== null) return script;
  const found = entryScript(import.meta.url, 'functions-sandbox', './sandbox-child.ts');
  if (found.file !== undefined) return (script = fileURLToPath(found.file));
  const file = join(tmpdir(), `platform-edge-sandbox-${createHash('sha256').update(found.code).digest('hex').slice(0, 16)}.cjs`);
  if (!existsSync(file)) {
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, found.code);
    renameSync(tmp, file);
  }
  return (script = file);
}
