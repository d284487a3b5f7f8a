import type Database from 'better-sqlite3';
import { EdgeError } from '../core/errors.js';

/**
 * The bound on the trigger work of one statement (docs/sql.md "Functions and triggers",
 * "Recursion"). SQLite's recursive triggers are on, so a trigger that writes its own table
 * fires again, as in Postgres; SQLite bounds the depth (1000 levels: "stack depth limit
 * exceeded", 54001) but not the breadth: a trigger that inserts two rows into its own table
 * doubles at each level. Every compiled trigger body (src/sql/pg/plpgsql.ts) first calls
 * `pe_trg_step()`, registered here on every project connection (the registry's and each SQL
 * worker's), which counts the firings since the statement began and refuses the statement past
 * {@link TRIGGER_FIRINGS_MAX} firings (54000, rolled back whole). On a SQL worker it also checks the
 * statement's time limit, so trigger work ends with the statement's time limit too.
 *
 * Two bounds: a SQL worker's statement may fire 100,000 trigger bodies (it also has its time
 * limit, and SQL seeds tables in bulk); a write on the main thread 10,000 (it runs on the
 * server's one event loop with no time limit: a firing that logs its row for the change log
 * costs up to ~0.1 ms there on a loaded machine, so the bound is about a second of blocked loop).
 *
 * The count starts again after each synchronous run: a write on the main thread (a rows-API
 * request's write, a GraphQL mutation, an RPC, a sign-up) or a SQL worker's job (one request's
 * script). better-sqlite3 is synchronous, so a queued microtask runs only once that run ended.
 *
 * note: the worker thread imports it (src/sql/worker/entry.ts, its own bundle entry).
 */
export const TRIGGER_FIRINGS_MAX = { worker: 100_000, main: 10_000 } as const;

/** The function's name, as a compiled trigger body calls it. */
export const TRIGGER_STEP_SQL = 'SELECT pe_trg_step()';

/** What the bound answers when it is reached (54000, program_limit_exceeded). */
export const triggerLimitMessage = (max: number): string => `trigger work limit exceeded: the statement fired triggers more than ${max} times`;

/**
 * Registers `pe_trg_step()` on `db`. `deadline` is a SQL worker's time limit (absent on the
 * main thread, which takes the main thread's bound). `edge`: throw an EdgeError (the main thread maps it as is) rather than a
 * `pe_raise[54000]: …` message (what a worker's error goes back as, read by violations.ts).
 */
export function registerTriggerBound(db: Database.Database, opts: { deadline?: { at: number }; edge: boolean }): void {
  const max = opts.deadline ? TRIGGER_FIRINGS_MAX.worker : TRIGGER_FIRINGS_MAX.main;
  let fired = 0;
  const reset = (): void => {
    fired = 0;
  };
  db.function('pe_trg_step', { deterministic: false }, () => {
    if (fired === 0) queueMicrotask(reset);
    fired++;
    if (fired > max) {
      if (opts.edge) throw new EdgeError('invalid_request', triggerLimitMessage(max), { details: { sqlstate: '54000' } });
      throw new Error(`pe_raise[54000]: ${triggerLimitMessage(max)}`);
    }
    if (opts.deadline && (fired & 255) === 0 && Date.now() > opts.deadline.at) throw new Error('pe_statement_timeout');
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
