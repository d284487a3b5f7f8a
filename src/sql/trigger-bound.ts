import type Database from 'better-sqlite3';
import { EdgeError } from '../core/errors.js';

/**
 * The bound on the trigger work of one statement (docs/sql.md "Functions and triggers",
 * "Recursion"). SQLite's recursive triggers are on, so a trigger that writes its own table
 * fires again, as in Postgres; SQLite bounds the depth (1000 levels: "stack depth limit
 * exceeded", 54001) but not the breadth: a trigger that inserts two rows into its own table
 * doubles at each level. Every compiled trigger body (src/sql/pg/plpgsql.ts) first calls
 * `pe_trg_step()`, registered here on every project connection (the registry's and each SQL
 * worker's), which bounds the breadth by time, as Postgres' `statement_timeout` would:
 *
 * - on a SQL worker, the statement's own time limit (its request's SQL budget): past it the
 *   statement ends as any statement past its limit does (400 `statement_timeout`);
 * - on the main thread (a rows-API write, a GraphQL mutation, an RPC, a sign-up: the server's
 *   one event loop, which has no statement time limit), {@link MAIN_TRIGGER_MS} of trigger work
 *   per synchronous write, then 400 `statement_timeout` too.
 *
 * No count of firings: a statement that fires a trigger for each of many rows (a bulk UPDATE of
 * a table with an `updated_at` trigger) is ordinary work and runs as long as its time allows.
 * The main thread's clock starts at the first firing of a synchronous run (a request's write;
 * better-sqlite3 is synchronous, so a queued microtask runs only once that run ended).
 *
 * note: the worker thread imports it (src/sql/worker/entry.ts, its own bundle entry).
 */
export const MAIN_TRIGGER_MS = 2000;

/** The function's name, as a compiled trigger body calls it. */
export const TRIGGER_STEP_SQL = 'SELECT pe_trg_step()';

/** What the main thread answers when a write's triggers used up {@link MAIN_TRIGGER_MS}. */
export const mainTriggerTimeout = (): EdgeError =>
  new EdgeError('statement_timeout', `the triggers of this write ran longer than ${MAIN_TRIGGER_MS} ms and were cancelled (the write is rolled back)`);

/**
 * Registers `pe_trg_step()` on `db`. `deadline`: a SQL worker's time limit (absent on the main
 * thread, which takes {@link MAIN_TRIGGER_MS} per write).
 */
export function registerTriggerBound(db: Database.Database, opts: { deadline?: { at: number } }): void {
  let fired = 0;
  let until = 0;
  const reset = (): void => {
    fired = 0;
  };
  db.function('pe_trg_step', { deterministic: false }, () => {
    if (fired === 0) {
      queueMicrotask(reset);
      until = Date.now() + MAIN_TRIGGER_MS;
    }
    fired++;
    if ((fired & 63) === 0) {
      if (opts.deadline) {
        if (Date.now() > opts.deadline.at) throw new Error('pe_statement_timeout');
      } else if (Date.now() > until) throw mainTriggerTimeout();
    }
    return 1;
  });
}

/**
 * Whether recursive triggers may be turned on for this project's file: every compiled trigger
 * (`pe_trg_…`) calls `pe_trg_step()` (so the bound holds) — triggers compiled before it (and
 * before the `_svc_meta.sql_applying` guard of BEFORE-trigger assignments) would recurse
 * unbounded or re-fire their own assignment UPDATE. Such a project keeps SQLite's recursive
 * triggers off until those triggers are created again (docs/sql.md "Recursion").
 */
export function recursionSafe(db: Database.Database): boolean {
  const old = db
    .prepare(`SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'pe\\_trg\\_%' ESCAPE '\\' AND instr(sql, 'pe_trg_step()') = 0`)
    .pluck()
    .get() as number | bigint;
  return Number(old) === 0;
}

/** Turns SQLite's recursive triggers on for `db` when {@link recursionSafe} says it may. */
export function applyRecursion(db: Database.Database): void {
  db.pragma(`recursive_triggers = ${recursionSafe(db) ? 'ON' : 'OFF'}`);
}
