import ivm from 'isolated-vm';
import { EdgeError, normalize } from '../../core/errors.js';
import { BRIDGE_SOURCE } from './bridge.js';
import { CHECK_MEMORY_MB, MAX_LOG_BYTES, MAX_LOG_LINES, MAX_RESULT_BYTES, type CallSpec, type LogLevel, type LogLine } from './sandbox-wire.js';

/**
 * The isolated-vm sandbox of the functions service (docs/api.md "Sandbox").
 *
 * - One isolate per (project, version), warm in an LRU (`maxIsolates`, idle `idleMs`): module
 *   state may persist across warm calls of one version, never across versions or projects.
 * - Only the async `apply`/`evaluate` forms: the event loop never waits for user code (it runs
 *   on isolated-vm's threads).
 * - Batches: the calls waiting for one warm isolate enter it together, at most MAX_BATCH per
 *   entry (bridge.ts `batch`): one host→isolate crossing and one answer for all of them, each
 *   call keeping its own `ctx`, logs, outcome and deadline. A call whose outcome the host has
 *   not heard of when the isolate dies (a timeout, out of memory) and that touched nothing of
 *   the host (no log, `ctx` operation or secret) had no effect outside the dead isolate: when
 *   other calls were in it too, so that its share of the blame is unknown, it runs again, alone,
 *   on a fresh isolate (at most MAX_RERUNS times, then 503). A call alone in its isolate gets
 *   the error it caused.
 * - Time: each entry's own `timeout`, plus a host timer that disposes the isolate when async work
 *   outlives the call's limit (a promise that never settles, a microtask loop). One timer per
 *   warm isolate, armed for its earliest deadline, not one per call (a version's calls share
 *   their limit, so deadlines come in start order).
 * - Memory: `memoryLimit`; an isolate that passes it is disposed by isolated-vm.
 * - What crosses: strings and numbers, copied, through four `ivm.Callback`s (bridge.ts).
 */

/** Time a module's top level may take at deploy (the compile check) and at a cold start, ms. */
const EVALUATE_MS = 1000;
/** Calls per entry into an isolate. */
const MAX_BATCH = 16;
/** Times a call may be run again after an isolate died under it and others (then 503). */
const MAX_RERUNS = 3;

/** What one call offers its `ctx` (the service implements it per caller). */
export interface CallHost {
  /** An async operation (`db.*`, `fetch`) with a JSON payload; resolves to a JSON value. */
  op(op: string, payload: unknown): Promise<unknown>;
  /** `ctx.secrets.get(name)`; throws an EdgeError for a name the function may not read. */
  secret(name: string): string | null;
}


/** What a call is answered with: its outcome (`R…`/`E…`), its error, or "run it again". */
type Outcome = string | EdgeError | typeof RERUN;
const RERUN = Symbol('rerun');

interface Call {
  readonly host: CallHost;
  readonly spec: CallSpec;
  readonly argsJson: string;
  readonly userJson: string;
  readonly logs: LogLine[];
  bytes: number;
  dropped: number;
  /** Its id in the isolate it was last sent to (0 before it is sent). */
  id: number;
  settled: boolean;
  timedOut: boolean;
  /** It logged, began a `ctx` operation or read a secret: it has started, for the host too. */
  touched: boolean;
  /** Runs after an isolate died under it: sent alone. */
  solo: boolean;
  reruns: number;
  /** performance.now() past which the call is killed (set when it is sent). */
  deadline: number;
  settle: (o: Outcome) => void;
}

interface Warm {
  readonly key: string;
  readonly isolate: ivm.Isolate;
  /** Calls sent into the isolate and not yet answered, by id. */
  readonly calls: Map<number, Call>;
  /** Calls waiting to be sent. */
  readonly queue: Call[];
  batch: ivm.Reference | null;
  deliver: ivm.Reference | null;
  /** Calls queued or sent and not yet answered. */
  active: number;
  lastUsed: number;
  /** Set when this host disposed it (a timeout), so sibling calls answer accordingly. */
  killedBy: 'timeout' | null;
  /** Set once its death has been handled. */
  dead: boolean;
  /** An entry is on its way in (the next waits for its answer); a flush is scheduled. */
  entering: boolean;
  scheduled: boolean;
  /** The deadline timer, armed while calls run. */
  timer: NodeJS.Timeout | null;
  /** The options of each `batch` apply (a version's calls share their limit). */
  readonly applyOptions: { timeout: number };
}

export class Sandbox {
  readonly #warm = new Map<string, Promise<Warm>>();
  /** The isolate each settled promise of `#warm` gave: a warm call then waits on nothing. */
  readonly #settled = new WeakMap<Promise<Warm>, Warm>();
  readonly #maxIsolates: number;
  readonly #idleMs: number;
  readonly #sweep: NodeJS.Timeout;
  #callSeq = 0;
  #opSeq = 0;
  #coldStarts = 0;

  constructor(opts: { maxIsolates: number; idleMs: number }) {
    this.#maxIsolates = opts.maxIsolates;
    this.#idleMs = opts.idleMs;
    this.#sweep = setInterval(() => this.#dropIdle(), Math.max(1000, Math.min(opts.idleMs, 60_000)));
    this.#sweep.unref();
  }

  get warmCount(): number {
    return this.#warm.size;
  }

  get coldStarts(): number {
    return this.#coldStarts;
  }

  /**
   * The deploy-time check in a scratch isolate: the module compiles, imports nothing, its top
   * level finishes within a second, and it exports a default function or `handler`. Throws 400
   * `invalid_source` (with `details.line` and `details.column` for a syntax error).
   */
  async check(code: string): Promise<void> {
    const isolate = new ivm.Isolate({ memoryLimit: CHECK_MEMORY_MB });
    try {
      const context = await isolate.createContext();
      await context.eval('delete globalThis.WebAssembly', { timeout: EVALUATE_MS });
      await this.#load(isolate, context, code, true);
    } finally {
      if (!isolate.isDisposed) isolate.dispose();
    }
  }

  /**
   * Runs one call: the handler with `argsJson` and a `ctx` for `userJson` and `host`. Resolves
   * to the result's JSON text and the call's logs; rejects with an EdgeError
   * (`function_error`, `function_timeout`, `function_out_of_memory`) whose `beside.logs` holds the logs.
   */
  async run(spec: CallSpec, argsJson: string, userJson: string, host: CallHost): Promise<{ json: string; logs: LogLine[] }> {
    const call: Call = {
      host,
      spec,
      argsJson,
      userJson,
      logs: [],
      bytes: 0,
      dropped: 0,
      id: 0,
      settled: false,
      timedOut: false,
      touched: false,
      solo: false,
      reruns: 0,
      deadline: 0,
      settle: () => {},
    };
    for (;;) {
      let warm: Warm;
      try {
        const got = this.#get(spec);
        warm = got instanceof Promise ? await got : got;
      } catch (err) {
        throw this.#failure(err, call, null);
      }
      const out = await new Promise<Outcome>((resolve) => {
        // note: an isolate that died while this call waited for its cold start: take a fresh one.
        if (warm.dead) return resolve(RERUN);
        call.settle = resolve;
        call.settled = false;
        warm.active++;
        warm.queue.push(call);
        this.#schedule(warm);
      });
      if (out === RERUN) {
        if (++call.reruns > MAX_RERUNS) {
          throw new EdgeError('unavailable', 'the function was reset by other calls of it several times; retry', { headers: { 'retry-after': '1' }, beside: { logs: finish(call) } });
        }
        continue;
      }
      if (out instanceof EdgeError) throw out;
      try {
        if (out[0] === 'E') throw new EdgeError('function_error', out.slice(1, 4097) || 'the function failed');
        if (out[0] !== 'R') throw new EdgeError('function_error', 'the function returned no result');
        const json = out.slice(1);
        if (json.length > MAX_RESULT_BYTES / 3 && Buffer.byteLength(json) > MAX_RESULT_BYTES) throw new EdgeError('function_error', `the result is over ${MAX_RESULT_BYTES} bytes of JSON`);
        return { json, logs: finish(call) };
      } catch (err) {
        throw this.#failure(err, call, warm);
      }
    }
  }

  #schedule(warm: Warm): void {
    if (warm.scheduled || warm.entering || warm.dead) return;
    warm.scheduled = true;
    // note: a tick gathers the calls that arrive with this one (a batch's answer settles its
    // calls, and the gate hands their slots to waiters, in microtasks, which all run before
    // it). Ticks run when Node ends a callback it made (isolated-vm's answers); uWS's handlers
    // are not such callbacks, so setImmediate backs it up: whichever comes first sends.
    process.nextTick(this.#flushFn, warm);
    setImmediate(this.#flushFn, warm);
  }

  readonly #flushFn = (warm: Warm): void => this.#flush(warm);

  /** Sends the waiting calls into the isolate: a solo call alone, else up to MAX_BATCH. */
  #flush(warm: Warm): void {
    if (!warm.scheduled) return;
    warm.scheduled = false;
    if (warm.entering || warm.dead || warm.queue.length === 0) return;
    const n = warm.queue[0]!.solo ? 1 : Math.min(MAX_BATCH, warm.queue.length);
    let end = 0;
    while (end < n && (end === 0 || !warm.queue[end]!.solo)) end++;
    const batch = warm.queue.splice(0, end);
    const now = performance.now();
    const args: (number | string)[] = [];
    for (const call of batch) {
      call.id = ++this.#callSeq;
      call.deadline = now + call.spec.timeoutMs;
      warm.calls.set(call.id, call);
      args.push(call.id, call.argsJson, call.userJson);
    }
    warm.entering = true;
    warm.timer ??= setTimeout(() => this.#expire(warm), batch[0]!.spec.timeoutMs).unref();
    // note: the arguments and the result are numbers and strings, primitives isolated-vm copies
    // without being told (anything else would throw, never cross as a reference).
    warm.batch!.apply(undefined, args, warm.applyOptions).then(
      (out: unknown) => this.#entered(warm, out),
      (err: unknown) => this.#died(warm, err),
    );
  }

  /** The batch's answer: `<id>:<length>:<outcome>` for each call that finished in it untouched. */
  #entered(warm: Warm, out: unknown): void {
    warm.entering = false;
    this.#outcomes(warm, out);
    if (warm.queue.length > 0) this.#schedule(warm);
  }

  /** Settles the calls of `<id>:<length>:<outcome>`… (a batch's answer, or `hostDone`'s). */
  #outcomes(warm: Warm, out: unknown): void {
    if (typeof out === 'string') {
      for (let i = 0; i < out.length; ) {
        const a = out.indexOf(':', i);
        const b = out.indexOf(':', a + 1);
        if (a < 0 || b < 0) break;
        const id = Number(out.slice(i, a));
        const end = b + 1 + Number(out.slice(a + 1, b));
        const call = warm.calls.get(id);
        if (call !== undefined) this.#settle(warm, call, out.slice(b + 1, end));
        i = end;
      }
    }
  }

  #settle(warm: Warm, call: Call, o: Outcome): void {
    if (call.settled) return;
    call.settled = true;
    if (call.id !== 0 && warm.calls.get(call.id) === call) warm.calls.delete(call.id);
    warm.active--;
    warm.lastUsed = Date.now();
    call.settle(o);
  }

  /**
   * The isolate is gone (a timeout, out of memory) or an entry failed: every call in it or
   * waiting for it is answered. Waiting calls run again; a call that was alone gets the error
   * it caused; with others, one past its deadline times out, one that touched the host gets
   * 503 (its share is unknown), and one that did not runs again alone.
   */
  #died(warm: Warm, err: unknown): void {
    warm.entering = false;
    if (warm.dead) return;
    warm.dead = true;
    const message = err instanceof Error ? err.message : String(err);
    const timeout = /timed out/i.test(message) || warm.killedBy === 'timeout';
    this.#kill(warm, timeout ? 'timeout' : null);
    // note: a turn later, so outcomes already sent by calls of the failed entry arrive first.
    setImmediate(() => {
      for (const call of warm.queue.splice(0)) this.#settle(warm, call, RERUN);
      const running = [...warm.calls.values()];
      const now = performance.now();
      for (const call of running) {
        if (timeout && call.deadline - now <= 1) call.timedOut = true;
        if (running.length === 1) this.#settle(warm, call, this.#failure(err, call, warm));
        else if (!call.touched) {
          call.solo = true;
          this.#settle(warm, call, RERUN);
        } else if (call.timedOut) this.#settle(warm, call, this.#failure(err, call, warm));
        else this.#settle(warm, call, this.#failure(new EdgeError('unavailable', 'the function was reset by another call of it that failed; retry', { headers: { 'retry-after': '1' } }), call, warm));
      }
    });
  }

  /** Drops the warm isolates of these keys (a deleted function, a deleted project). */
  drop(match: (key: string) => boolean): void {
    for (const [key, p] of this.#warm) {
      if (!match(key)) continue;
      this.#warm.delete(key);
      void p.then((w) => this.#dispose(w), () => {});
    }
  }

  close(): void {
    clearInterval(this.#sweep);
    this.drop(() => true);
  }

  #failure(err: unknown, call: Call, warm: Warm | null): EdgeError {
    const spec = call.spec;
    const logs = finish(call);
    let e: EdgeError;
    const msg = err instanceof Error ? err.message : String(err);
    if (err instanceof EdgeError) e = err;
    else if (call.timedOut || /timed out/i.test(msg)) e = new EdgeError('function_timeout', `the function ran longer than its limit of ${spec.timeoutMs} ms`);
    else if (/memory limit/i.test(msg) || (warm?.isolate.isDisposed === true && warm.killedBy === null)) {
      e = new EdgeError('function_out_of_memory', `the function used more than its memory limit of ${spec.memoryMb} MB`);
    } else if (warm?.killedBy === 'timeout') e = new EdgeError('unavailable', 'the function was reset by another call of it that timed out; retry', { headers: { 'retry-after': '1' } });
    else e = new EdgeError('function_error', msg.slice(0, 4096) || 'the function failed');
    return new EdgeError(e.code, e.message, { headers: e.headers, details: e.details, beside: { logs }, cause: err });
  }

  /** Kills the isolate when a call is past its deadline; else waits for the earliest one. */
  #expire(warm: Warm): void {
    warm.timer = null;
    const now = performance.now();
    let next = Infinity;
    for (const call of warm.calls.values()) {
      // note: 1 ms of slack: the timer's clock and performance.now() round differently.
      if (call.deadline - now <= 1) {
        call.timedOut = true;
        warm.killedBy = 'timeout';
        this.#died(warm, new Error('timed out'));
        return;
      }
      if (call.deadline < next) next = call.deadline;
    }
    if (next !== Infinity) warm.timer = setTimeout(() => this.#expire(warm), Math.ceil(next - now)).unref();
  }

  #get(spec: CallSpec): Promise<Warm> | Warm {
    let p = this.#warm.get(spec.key);
    if (p !== undefined) {
      // note: Map order is the LRU order: a use moves the key to the end.
      this.#warm.delete(spec.key);
      this.#warm.set(spec.key, p);
      return this.#settled.get(p) ?? p;
    }
    const created = this.#create(spec);
    p = created;
    this.#warm.set(spec.key, created);
    created.then(
      (w) => this.#settled.set(created, w),
      () => {
        if (this.#warm.get(spec.key) === created) this.#warm.delete(spec.key);
      },
    );
    this.#trim();
    return p;
  }

  async #create(spec: CallSpec): Promise<Warm> {
    const code = spec.code();
    this.#coldStarts++;
    const isolate = new ivm.Isolate({ memoryLimit: spec.memoryMb });
    const warm: Warm = {
      key: spec.key,
      isolate,
      calls: new Map(),
      queue: [],
      batch: null,
      deliver: null,
      active: 0,
      lastUsed: Date.now(),
      killedBy: null,
      dead: false,
      entering: false,
      scheduled: false,
      timer: null,
      applyOptions: { timeout: spec.timeoutMs },
    };
    try {
      const context = await isolate.createContext();
      const bridge = await isolate.compileScript(BRIDGE_SOURCE, { filename: 'platform-edge:bridge' });
      const setup = (await bridge.run(context, { reference: true, timeout: EVALUATE_MS })) as ivm.Reference;
      const handler = await this.#load(isolate, context, code, false);
      const log = new ivm.Callback((id: unknown, level: unknown, message: unknown) => this.#log(warm, id, level, message));
      const start = new ivm.Callback((id: unknown, op: unknown, payload: unknown) => this.#start(warm, id, op, payload));
      const secret = new ivm.Callback((id: unknown, name: unknown) => this.#secret(warm, id, name));
      // note: ignored: the isolate goes on without waiting for the host to take the outcome.
      const done = new ivm.Callback((outcomes: unknown) => this.#outcomes(warm, outcomes), { ignored: true });
      const pair = (await setup.apply(undefined, [log, start, secret, done, handler!.derefInto()], { result: { reference: true }, timeout: EVALUATE_MS })) as ivm.Reference;
      warm.batch = (await pair.get(0, { reference: true })) as ivm.Reference;
      warm.deliver = (await pair.get(1, { reference: true })) as ivm.Reference;
      return warm;
    } catch (err) {
      if (!isolate.isDisposed) isolate.dispose();
      throw err;
    }
  }

  /** Compiles, links (refusing every import) and evaluates the module; the handler's Reference. */
  async #load(isolate: ivm.Isolate, context: ivm.Context, code: string, check: boolean): Promise<ivm.Reference | null> {
    let mod: ivm.Module;
    try {
      mod = await isolate.compileModule(code, { filename: 'function.js' });
    } catch (err) {
      throw sourceError(err);
    }
    const imports = mod.dependencySpecifiers;
    if (imports.length > 0) throw new EdgeError('invalid_source', `import is not allowed (the module imports "${imports[0]!.slice(0, 200)}")`);
    await mod.instantiate(context, () => {
      throw new Error('import is not allowed');
    });
    try {
      await mod.evaluate({ timeout: EVALUATE_MS });
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err);
      if (!check) throw err;
      throw new EdgeError('invalid_source', /timed out/i.test(msg) ? `the module's top level ran longer than ${EVALUATE_MS} ms` : `the module's top level threw: ${msg.slice(0, 1000)}`);
    }
    for (const name of ['default', 'handler']) {
      const ref = (await mod.namespace.get(name, { reference: true })) as ivm.Reference;
      if (ref.typeof === 'function') return ref;
    }
    throw new EdgeError('invalid_source', 'the module must export a default function or a function named "handler"');
  }

  #call(warm: Warm, id: unknown): Call | null {
    const call = typeof id === 'number' ? warm.calls.get(id) : undefined;
    if (call === undefined || call.settled) return null;
    call.touched = true;
    return call;
  }

  #log(warm: Warm, id: unknown, level: unknown, message: unknown): void {
    const call = this.#call(warm, id);
    if (call === null) return;
    const text = typeof message === 'string' ? message : '';
    const size = Buffer.byteLength(text);
    if (call.logs.length >= MAX_LOG_LINES - 1 || call.bytes + size > MAX_LOG_BYTES) {
      call.dropped++;
      return;
    }
    call.bytes += size;
    call.logs.push({ level: LEVELS.has(level as LogLevel) ? (level as LogLevel) : 'info', message: text, at: new Date().toISOString() });
  }

  #start(warm: Warm, id: unknown, op: unknown, payload: unknown): number {
    const n = ++this.#opSeq;
    const call = this.#call(warm, id);
    const run = async (): Promise<unknown> => {
      if (call === null) throw new EdgeError('function_error', 'this call has ended');
      if (typeof op !== 'string' || typeof payload !== 'string') throw new EdgeError('invalid_request', 'bad operation');
      return call.host.op(op, JSON.parse(payload) as unknown);
    };
    void run()
      .then(
        (v): [boolean, string] => [true, JSON.stringify(v ?? null)],
        (err: unknown): [boolean, string] => {
          const e = normalize(err);
          const message = e.code === 'internal' ? 'internal error' : e.message;
          return [false, JSON.stringify({ code: e.code, status: e.status, message })];
        },
      )
      .then(([ok, json]) => {
        if (call === null || call.settled || warm.dead) return;
        // note: its continuation runs in this entry: a timeout or out of memory there is the isolate's death.
        return warm.deliver!.apply(undefined, [n, ok, json], { arguments: { copy: true }, timeout: Math.max(1, Math.ceil(call.deadline - performance.now())) }).catch((err: unknown) => this.#died(warm, err));
      })
      .catch(() => {});
    return n;
  }

  #secret(warm: Warm, id: unknown, name: unknown): string | null {
    const call = this.#call(warm, id);
    if (call === null) throw new Error('this call has ended');
    try {
      return call.host.secret(String(name));
    } catch (err) {
      // note: the isolate sees the message only (an Error copied across).
      throw new Error(err instanceof EdgeError ? err.message : 'internal error');
    }
  }

  #kill(warm: Warm, why: 'timeout' | null): void {
    warm.killedBy ??= why;
    const p = this.#warm.get(warm.key);
    if (p !== undefined && this.#settled.get(p) === warm) this.#warm.delete(warm.key);
    else
      void p?.then((w) => {
        if (w === warm) this.#warm.delete(warm.key);
      });
    this.#dispose(warm);
  }

  #dispose(warm: Warm): void {
    if (warm.timer !== null) {
      clearTimeout(warm.timer);
      warm.timer = null;
    }
    if (!warm.isolate.isDisposed) {
      try {
        warm.isolate.dispose();
      } catch {
        // note: already disposed by isolated-vm (memory limit).
      }
    }
  }

  /** Disposes the least recently used idle isolates past the cap. */
  #trim(): void {
    if (this.#warm.size <= this.#maxIsolates) return;
    let excess = this.#warm.size - this.#maxIsolates;
    for (const [key, p] of this.#warm) {
      if (excess <= 0) break;
      excess--;
      this.#warm.delete(key);
      // note: a call still running keeps its isolate until it ends; then nothing references it.
      void p.then((w) => this.#disposeWhenIdle(w), () => {});
    }
  }

  #disposeWhenIdle(w: Warm): void {
    if (w.active === 0) return this.#dispose(w);
    const t = setInterval(() => {
      if (w.active > 0) return;
      clearInterval(t);
      this.#dispose(w);
    }, 100);
  }

  #dropIdle(): void {
    const now = Date.now();
    for (const [key, p] of this.#warm) {
      void p.then(
        (w) => {
          if (w.active === 0 && now - w.lastUsed >= this.#idleMs && this.#warm.get(key) === p) {
            this.#warm.delete(key);
            this.#dispose(w);
          }
        },
        () => {},
      );
    }
  }
}

const LEVELS = new Set<LogLevel>(['debug', 'info', 'warn', 'error']);

function finish(call: Call): LogLine[] {
  if (call.dropped > 0) {
    call.logs.push({ level: 'warn', message: `${call.dropped} more log lines dropped (at most ${MAX_LOG_LINES} lines and ${MAX_LOG_BYTES} bytes)`, at: new Date().toISOString() });
    call.dropped = 0;
  }
  return call.logs;
}

/** A compile error as 400 `invalid_source`, with the line and column V8 reports. */
function sourceError(err: unknown): EdgeError {
  const msg = err instanceof Error ? err.message : String(err);
  const m = /^(.*?)\s*\[function\.js:(\d+):(\d+)\]$/s.exec(msg);
  if (m === null) return new EdgeError('invalid_source', msg.slice(0, 1000));
  const line = Number(m[2]);
  const column = Number(m[3]);
  return new EdgeError('invalid_source', `${m[1]} (line ${line}, column ${column})`, { details: { line, column } });
}
