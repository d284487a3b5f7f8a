import { EdgeError, normalize, type ErrorCode } from '../../core/errors.js';

// note: what the server and the sandbox process share lives here, not in sandbox.ts: the server
// never loads isolated-vm (only the sandbox process needs it, and `--no-node-snapshot` with it).
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export interface LogLine {
  level: LogLevel;
  message: string;
  at: string;
}

/** Lines and bytes of logs one call keeps; past them a last line says how many were dropped. */
export const MAX_LOG_LINES = 100;
export const MAX_LOG_BYTES = 64 * 1024;
/** The largest result, bytes of JSON. */
export const MAX_RESULT_BYTES = 1024 * 1024;
/** The deploy check's isolate, MB (sandbox-process.ts names it when a check ends the process). */
export const CHECK_MEMORY_MB = 32;

export interface CallSpec {
  /** The warm-cache key: project and version id. */
  key: string;
  /** The module's code; called at a cold start only (a warm isolate already holds it). */
  code: () => string;
  memoryMb: number;
  timeoutMs: number;
}

/**
 * The messages between the server and its sandbox process (sandbox-process.ts, sandbox-child.ts).
 * Each side sends arrays of them: the messages of one turn of the event loop go in one IPC
 * write (as the calls of one turn enter an isolate in one batch, sandbox.ts).
 */
export interface ErrorWire {
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
  headers?: Record<string, string>;
}

/** A secret the function may read: its value, `null` when unset, or the error reading it gave. */
export type SecretWire = string | null | { error: ErrorWire };

export type ToChild =
  /** A call; `code` is sent with the first call of a key (the child keeps it until `drop`). */
  | { t: 'run'; id: number; project: string; key: string; code?: string; memoryMb: number; timeoutMs: number; args: string; user: string; secrets: Record<string, SecretWire> }
  | { t: 'check'; id: number; code: string }
  /** The answer to a `ctx` operation (`op`). */
  | { t: 'opres'; n: number; ok: true; value: unknown }
  | { t: 'opres'; n: number; ok: false; error: ErrorWire }
  | { t: 'drop'; keys: string[] }
  | { t: 'ping' };

export type ToParent =
  | { t: 'pong' }
  /** A `ctx` operation of call `id`, with the call's time left (ms). */
  | { t: 'op'; id: number; n: number; op: string; payload: unknown; left: number }
  /** A call's end; `ms` its time from its turn in the process. */
  | { t: 'done'; id: number; json: string; logs: LogLine[]; ms: number }
  | { t: 'fail'; id: number; error: ErrorWire; logs: LogLine[]; ms: number }
  | { t: 'checked'; id: number; error?: ErrorWire };

/** An error as it crosses: an unexpected one is `internal` with no detail (never a stack). */
export function errorToWire(err: unknown): ErrorWire {
  const e = normalize(err);
  if (e.code === 'internal') return { code: 'internal', message: 'internal error' };
  const out: ErrorWire = { code: e.code, message: e.message };
  if (e.details !== undefined) out.details = e.details;
  if (e.headers !== undefined) out.headers = e.headers;
  return out;
}

export const errorFromWire = (w: ErrorWire, beside?: Record<string, unknown>): EdgeError =>
  new EdgeError(w.code, w.message, { details: w.details, headers: w.headers, beside });

/** Collects the messages of one turn and sends them as one array. */
export class Outbox<M> {
  #queue: M[] = [];
  #scheduled = false;
  readonly #send: (batch: M[]) => void;

  constructor(send: (batch: M[]) => void) {
    this.#send = send;
  }

  push(m: M): void {
    this.#queue.push(m);
    if (this.#scheduled) return;
    this.#scheduled = true;
    // note: as sandbox.ts #schedule: a tick gathers what this turn adds; setImmediate backs it
    // up where no tick runs (uWS's handlers are not callbacks Node made).
    process.nextTick(this.#flushFn);
    setImmediate(this.#flushFn);
  }

  readonly #flushFn = (): void => this.flush();

  flush(): void {
    if (!this.#scheduled) return;
    this.#scheduled = false;
    if (this.#queue.length === 0) return;
    const batch = this.#queue;
    this.#queue = [];
    this.#send(batch);
  }

  /** Drops what is waiting (the process it was for is gone). */
  clear(): void {
    this.#queue = [];
  }
}
