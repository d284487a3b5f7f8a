import { createRequire } from 'node:module';
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import type { CallerSlot } from '../caller.js';
import { registerProjectSql } from '../register.js';
import { applyRecursion } from '../trigger-bound.js';
import { relaxNotNull } from './relax-not-null.js';
import { alterColumn, foreignKeysOff } from './alter-column.js';
import { violationFacts } from './violation-facts.js';
import { workerMain } from './worker-main.js';

/**
 * A SQL worker thread (pool.ts starts it): ordinary code, bundled by build/build.mjs as its own
 * entry, build/chunks/sql-worker.mjs (issue 17 item 2). Run from source (vitest), pool.ts bundles
 * this file with esbuild when the first worker starts.
 */
type PgQuery = { loadModule(): Promise<void>; parseSync(sql: string): unknown };
let pg: PgQuery | null = null;
let ready: Promise<void> | null = null;

// note: libpg-query loads on the first long SQL a worker parses (most workers never parse). The tree
// goes back as JSON text: a structured clone of a very deep tree would overflow the stack uncaught.
async function parse(sql: string): Promise<string> {
  pg ??= createRequire(import.meta.url)('libpg-query') as PgQuery;
  ready ??= pg.loadModule();
  await ready;
  try {
    return JSON.stringify(pg.parseSync(sql));
  } catch (e) {
    const d = (e as { sqlDetails?: { message?: string; cursorPosition?: number } } | null)?.sqlDetails;
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- the shape workerMain's parse contract names
    throw { syntax: Boolean(d), message: String(d?.message ?? (e as Error | null)?.message ?? e), cursor: typeof d?.cursorPosition === 'number' ? d.cursorPosition : -1 };
  }
}

const register = (db: Database.Database, deadline: { at: number; n: number }, caller: CallerSlot): void => {
  registerProjectSql(db, caller, deadline);
  // note: recursive triggers as on the project's own connection (docs/sql.md "Recursion").
  applyRecursion(db);
};

workerMain({ parentPort: parentPort!, Database, register, parse, relax: relaxNotNull, alter: alterColumn, foreignKeysOff, violation: violationFacts }, (workerData as { options: Parameters<typeof workerMain>[1] }).options);
