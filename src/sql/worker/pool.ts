import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { EdgeError } from '../../edge/errors.js';
import { registerFunctions } from '../functions.js';
import { parseWithFallback } from '../pg/parse.js';
import { workerMain, type WorkerChange, type WorkerJob, type WorkerReply, type WorkerResult } from './worker-main.js';

/**
 * A small pool of worker threads that run caller-supplied SQL with their own
 * better-sqlite3 connections (DESIGN.md §10: better-sqlite3 blocks the calling thread
 * and cannot be interrupted). A statement past its time limit ends itself through
 * `pe_tick()` in every emitted WHERE; a worker that still does not answer shortly
 * after is terminated and replaced. Meanwhile the main thread keeps serving.
 */
export interface PoolOptions {
  size: number;
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

interface Pending {
  job: WorkerJob | { id: number; parse: string; timeoutMs: number };
  resolve: (r: never) => void;
  reject: (e: unknown) => void;
  timer: NodeJS.Timeout | null;
}

const GRACE_MS = 1000;

export class SqlPool {
  readonly #opts: PoolOptions;
  readonly #slots: Slot[] = [];
  readonly #queue: Pending[] = [];
  #nextId = 1;
  #closed = false;
  readonly #source: string;
  readonly #driver: string;
  readonly #parser: string;
  readonly #mysqlParser: string;

  constructor(opts: PoolOptions) {
    this.#opts = opts;
    const req = createRequire(import.meta.url);
    this.#driver = req.resolve('better-sqlite3');
    this.#parser = req.resolve('node-sql-parser/build/postgresql.js');
    this.#mysqlParser = req.resolve('node-sql-parser/build/mysql.js');
    this.#source = [
      `const { parentPort, workerData } = require('node:worker_threads');`,
      `const Database = require(workerData.driver);`,
      `const register = ${registerFunctions.toString()};`,
      `const parser = new (require(workerData.parser).Parser)();`,
      `const mysql = new (require(workerData.mysqlParser).Parser)();`,
      `const parse = ${parseWithFallback.toString()}.bind(null, parser, mysql);`,
      `(${workerMain.toString()})({ parentPort, Database, register, parse }, workerData.options);`,
    ].join('\n');
  }

  /** Runs one job; rejects with 400 `statement_timeout` past its time limit. */
  run(job: Omit<WorkerJob, 'id'>): Promise<{ results: WorkerResult[]; changes: WorkerChange[] }> {
    if (this.#closed) return Promise.reject(new EdgeError('unavailable', 'the server is shutting down'));
    return new Promise<{ results: WorkerResult[]; changes: WorkerChange[] }>((resolve, reject) => {
      this.#queue.push({ job: { ...job, id: this.#nextId++ }, resolve: resolve as (r: never) => void, reject, timer: null });
      this.#pump();
    });
  }

  /** Parses PostgreSQL into node-sql-parser's AST in a worker; rejects with the parser's message. */
  parse(sql: string, timeoutMs: number): Promise<unknown> {
    if (this.#closed) return Promise.reject(new EdgeError('unavailable', 'the server is shutting down'));
    return new Promise<unknown>((resolve, reject) => {
      this.#queue.push({ job: { id: this.#nextId++, parse: sql, timeoutMs }, resolve: resolve as (r: never) => void, reject, timer: null });
      this.#pump();
    });
  }

  /** Closes a project's file in every worker (before the project is deleted). */
  forget(file: string): void {
    for (const s of this.#slots) s.worker.postMessage({ close: file });
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const p of this.#queue.splice(0)) p.reject(new EdgeError('unavailable', 'the server is shutting down'));
    await Promise.all(this.#slots.splice(0).map((s) => s.worker.terminate()));
  }

  #spawn(): Slot {
    const worker = new Worker(this.#source, {
      eval: true,
      workerData: { driver: this.#driver, parser: this.#parser, mysqlParser: this.#mysqlParser, options: { maxConnections: this.#opts.maxConnections ?? 16, synchronous: this.#opts.synchronous, maxDbBytes: this.#opts.maxDbBytes ?? 0 } },
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
    while (this.#queue.length) {
      let slot = this.#slots.find((s) => s.busy === null);
      if (!slot) {
        if (this.#slots.length >= this.#opts.size) return;
        slot = this.#spawn();
      }
      const p = this.#queue.shift()!;
      slot.busy = p;
      p.timer = setTimeout(() => this.#timeout(slot), p.job.timeoutMs + GRACE_MS);
      if ('parse' in p.job) slot.worker.postMessage({ parse: { id: p.job.id, sql: p.job.parse } });
      else slot.worker.postMessage({ job: p.job });
    }
  }

  #reply(slot: Slot, m: WorkerReply): void {
    const p = slot.busy;
    if (!p || p.job.id !== m.id) return;
    this.#done(slot);
    if (m.ok) p.resolve(('ast' in m ? m.ast : 'results' in m ? { results: m.results, changes: m.changes ?? [] } : { results: [], changes: [] }) as never);
    else if (m.code === 'pe_statement_timeout') p.reject(timeoutError(p.job.timeoutMs));
    else p.reject(Object.assign(new Error(m.message), { name: 'SqlWorkerError', code: m.code }));
  }

  /** The worker did not end the statement itself: terminate it and start a fresh one. */
  #timeout(slot: Slot): void {
    const p = slot.busy;
    if (!p) return;
    this.#remove(slot);
    void slot.worker.terminate();
    p.reject(timeoutError(p.job.timeoutMs));
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
    if (slot.busy?.timer) clearTimeout(slot.busy.timer);
    slot.busy = null;
  }

  #done(slot: Slot): void {
    if (slot.busy?.timer) clearTimeout(slot.busy.timer);
    slot.busy = null;
    this.#pump();
  }
}

const timeoutError = (ms: number): EdgeError =>
  new EdgeError('statement_timeout', `the statement ran longer than its time limit of ${ms} ms and was cancelled`);
