import { Worker } from 'node:worker_threads';
import { EdgeError } from '../../core/errors.js';
import { FairQueue } from './fair-queue.js';
import { workerScript } from './script.js';
import type { WorkerChange, WorkerJob, WorkerReply, WorkerResult } from './worker-main.js';

/**
 * A small pool of worker threads that run caller-supplied SQL with their own
 * better-sqlite3 connections (docs/sql.md "How it works": better-sqlite3 blocks the calling thread
 * and cannot be interrupted). A statement past its time limit ends itself through
 * `pe_tick()` in every emitted WHERE; a worker that still does not answer shortly
 * after is terminated and replaced. Meanwhile the main thread keeps serving.
 *
 * Jobs are admitted per project (FairQueue): at most `perProject` running and
 * `queuePerProject` waiting, started fewest-running-first, and each carries its
 * request's deadline — time spent waiting counts against it (docs/api.md "Raw SQL").
 */
export interface PoolOptions {
  size: number;
  /** Jobs one project may run at once. */
  perProject: number;
  /** Jobs one project may have waiting; beyond: 429 `rate_limited`. */
  queuePerProject: number;
  /** SQLite `synchronous` of the worker connections (the file's durability setting). */
  synchronous: 'NORMAL' | 'FULL';
  /** Connections each worker keeps open (LRU by project file). */
  maxConnections?: number;
  /** Each project file's size cap, bytes (Config.maxProjectDbBytes); 0 or absent: none. */
  maxDbBytes?: number;
}

interface Slot {
  worker: Worker;
  busy: Pending | null;
}

/**
 * What a job is charged to: its project, and its request's time limit (one budget per
 * HTTP request; a JSON-RPC batch shares it between its calls).
 */
export interface Admission {
  tenant: string;
  /** `Date.now()` by which the request's SQL must have ended. */
  deadline: number;
  /** The whole budget, ms (for the messages). */
  limitMs: number;
  /** About how many bytes of JSON results the request may still receive (each result uses some up). */
  bytesLeft: number;
}

/** The time and result-size budget of one request, starting now. */
export const budget = (tenant: string, limitMs: number, maxBytes: number): Admission => ({ tenant, deadline: Date.now() + limitMs, limitMs, bytesLeft: maxBytes });

type Job = Omit<WorkerJob, 'timeoutMs' | 'maxBytes'> | { id: number; parse: string; maxMs: number };

interface Pending {
  job: Job;
  at: Admission;
  /** The time limit it started with (set at dispatch). */
  timeoutMs: number;
  resolve: (r: never) => void;
  reject: (e: unknown) => void;
  /** While queued: its deadline; while running: its time limit plus grace. */
  timer: NodeJS.Timeout | null;
}

const GRACE_MS = 1000;
/** What a 429 from a full project queue asks the client to wait, seconds. */
const RETRY_AFTER_S = 1;

export class SqlPool {
  readonly #opts: PoolOptions;
  readonly #slots: Slot[] = [];
  readonly #queue: FairQueue<Pending>;
  #nextId = 1;
  #closed = false;

  constructor(opts: PoolOptions) {
    this.#opts = opts;
    this.#queue = new FairQueue(opts.perProject, opts.queuePerProject);
  }

  /**
   * Runs one job within its request's budget: rejects with 400 `statement_timeout` when
   * the budget ends first, 429 `rate_limited` when the project's queue is full.
   */
  run(job: Omit<WorkerJob, 'id' | 'timeoutMs' | 'maxBytes'>, at: Admission): Promise<{ results: WorkerResult[]; changes: WorkerChange[] }> {
    return this.#admit({ ...job, id: this.#nextId++ }, at);
  }

  /** Parses PostgreSQL with libpg-query in a worker (at most `maxMs`): its raw result as JSON text; a syntax error rejects with `{ message, cursor }` (parse.ts RawSyntaxError). */
  parse(sql: string, at: Admission, maxMs: number): Promise<unknown> {
    return this.#admit({ id: this.#nextId++, parse: sql, maxMs }, at);
  }

  #admit<R>(job: Job, at: Admission): Promise<R> {
    if (this.#closed) return Promise.reject(new EdgeError('unavailable', 'the server is shutting down'));
    if (at.deadline <= Date.now()) return Promise.reject(budgetSpent(at.limitMs));
    return new Promise<R>((resolve, reject) => {
      const p: Pending = { job, at, timeoutMs: 0, resolve: resolve as (r: never) => void, reject, timer: null };
      if (!this.#queue.push(at.tenant, p)) {
        reject(
          new EdgeError('rate_limited', `this project already has ${this.#opts.perProject} SQL statements running and ${this.#opts.queuePerProject} waiting; retry shortly`, {
            headers: { 'retry-after': String(RETRY_AFTER_S) },
          }),
        );
        return;
      }
      this.#pump();
      // note: still waiting (no free worker, or the project is at its cap): it leaves the queue at its deadline.
      if (p.timeoutMs === 0) p.timer = setTimeout(() => this.#expire(p), at.deadline - Date.now());
    });
  }

  /** Load of one project (tests, diagnostics). */
  load(tenant: string): { running: number; queued: number } {
    return this.#queue.load(tenant);
  }

  /** Closes a project's file in every worker (before the project is deleted). */
  forget(file: string): void {
    for (const s of this.#slots) s.worker.postMessage({ close: file });
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const p of this.#queue.drain()) {
      if (p.timer) clearTimeout(p.timer);
      p.reject(new EdgeError('unavailable', 'the server is shutting down'));
    }
    await Promise.all(this.#slots.splice(0).map((s) => s.worker.terminate()));
  }

  #spawn(): Slot {
    const script = workerScript();
    const worker = new Worker(script.file ?? script.code, {
      eval: script.file === undefined,
      workerData: { options: { maxConnections: this.#opts.maxConnections ?? 16, synchronous: this.#opts.synchronous, maxDbBytes: this.#opts.maxDbBytes ?? 0 } },
    });
    worker.unref();
    const slot: Slot = { worker, busy: null };
    worker.on('message', (m: WorkerReply) => this.#reply(slot, m));
    worker.on('error', (err) => this.#fail(slot, err));
    worker.on('exit', () => this.#fail(slot, new Error('SQL worker exited')));
    this.#slots.push(slot);
    return slot;
  }

  #pump(): void {
    for (;;) {
      let slot = this.#slots.find((s) => s.busy === null);
      if (!slot && this.#slots.length >= this.#opts.size) return;
      const next = this.#queue.next();
      if (!next) return;
      slot ??= this.#spawn();
      const p = next.item;
      if (p.timer) clearTimeout(p.timer);
      const left = p.at.deadline - Date.now();
      if (left <= 0) {
        this.#queue.done(p.at.tenant);
        p.timer = null;
        p.reject(budgetSpent(p.at.limitMs));
        continue;
      }
      const job = p.job;
      p.timeoutMs = 'parse' in job ? Math.min(left, job.maxMs) : left;
      slot.busy = p;
      p.timer = setTimeout(() => this.#timeout(slot), p.timeoutMs + GRACE_MS);
      if ('parse' in job) slot.worker.postMessage({ parse: { id: job.id, sql: job.parse } });
      else slot.worker.postMessage({ job: { ...job, timeoutMs: p.timeoutMs, maxBytes: p.at.bytesLeft } satisfies WorkerJob });
    }
  }

  /** A queued job's budget ended before a worker took it. */
  #expire(p: Pending): void {
    p.timer = null;
    if (this.#queue.remove(p.at.tenant, p)) p.reject(budgetSpent(p.at.limitMs));
  }

  #reply(slot: Slot, m: WorkerReply): void {
    const p = slot.busy;
    if (!p || p.job.id !== m.id) return;
    this.#done(slot);
    if (m.ok && 'bytes' in m) p.at.bytesLeft -= m.bytes;
    if (m.ok) p.resolve(('ast' in m ? m.ast : 'results' in m ? { results: m.results, changes: m.changes ?? [] } : { results: [], changes: [] }) as never);
    else if (m.code === 'pe_statement_timeout') p.reject(timeoutError(p));
    else if (m.code === 'pe_syntax') p.reject({ message: m.message, cursor: (m as { cursor?: number }).cursor ?? -1 });
    else p.reject(Object.assign(new Error(m.message), { name: 'SqlWorkerError', code: m.code, facts: m.facts, statement: m.statement }));
  }

  /** The worker did not end the statement itself: terminate it and start a fresh one. */
  #timeout(slot: Slot): void {
    const p = slot.busy;
    if (!p) return;
    this.#remove(slot);
    // note: fire-and-forget: terminate() resolves with the exit code; the slot is already removed.
    void slot.worker.terminate();
    p.reject(timeoutError(p));
    this.#pump();
  }

  #fail(slot: Slot, err: unknown): void {
    const p = slot.busy;
    this.#remove(slot);
    if (p) p.reject(err);
    if (!this.#closed) this.#pump();
  }

  #remove(slot: Slot): void {
    const i = this.#slots.indexOf(slot);
    if (i >= 0) this.#slots.splice(i, 1);
    this.#release(slot);
  }

  #done(slot: Slot): void {
    this.#release(slot);
    this.#pump();
  }

  #release(slot: Slot): void {
    const p = slot.busy;
    if (!p) return;
    if (p.timer) clearTimeout(p.timer);
    this.#queue.done(p.at.tenant);
    slot.busy = null;
  }
}

/** A parse past its own cap names that cap; a statement, its request's time limit. */
const timeoutError = (p: Pending): EdgeError =>
  'parse' in p.job && p.timeoutMs === p.job.maxMs
    ? new EdgeError('statement_timeout', `parsing the SQL took longer than ${p.job.maxMs} ms and was cancelled`)
    : new EdgeError('statement_timeout', `the statement ran longer than its time limit of ${p.at.limitMs} ms and was cancelled`);

const budgetSpent = (ms: number): EdgeError =>
  new EdgeError('statement_timeout', `the request's SQL time limit of ${ms} ms was used up before this statement started`);
