import type Database from 'better-sqlite3';
import { registerCaller, type CallerSlot } from './caller.js';
import { registerArrayFunctions } from './functions-arrays.js';
import { registerEveryday } from './functions-everyday.js';
import { registerFormats } from './functions-formats.js';
import { registerMore } from './functions-more.js';
import { registerFunctions } from './functions.js';
import { registerTriggerBound } from './trigger-bound.js';

/**
 * The SQL functions every connection to a project file has: the registry's own (src/project/registry.ts,
 * no deadline) and each SQL worker's (src/sql/worker/entry.ts, its statement's deadline), so a CHECK,
 * default or trigger that calls one holds on every write path.
 */
export function registerProjectSql(db: Database.Database, caller: CallerSlot, deadline?: { at: number; n: number }): void {
  registerFunctions(db, deadline ?? { at: Number.POSITIVE_INFINITY, n: 0 });
  registerEveryday(db);
  registerFormats(db);
  registerMore(db);
  registerCaller(db, caller);
  registerArrayFunctions(db);
  registerTriggerBound(db, deadline ? { deadline } : {});
}
