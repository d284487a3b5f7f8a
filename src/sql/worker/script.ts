import { entryScript, type EntryScript } from '../../paths.js';

/**
 * Where a SQL worker thread's code comes from: entry.ts, bundled by build/build.mjs as
 * build/chunks/sql-worker.mjs, or, run from source, bundled once per process and started as
 * source text (src/paths.ts `entryScript`).
 */
export type WorkerScript = EntryScript;

let script: WorkerScript | null = null;

export function workerScript(): WorkerScript {
  script ??= entryScript(import.meta.url, 'sql-worker', './entry.ts');
  return script;
}
