import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * Where a SQL worker thread's code comes from: entry.ts, bundled by build/build.mjs as
 * build/chunks/sql-worker.mjs. This module is bundled into build/ or build/chunks/, so the file
 * is found from either. Run from source (vitest imports src/ through Vite, which a worker thread
 * cannot), entry.ts is bundled here once per process with esbuild (a dependency: functions use
 * it too) and started as source text.
 */
export type WorkerScript = { file: URL; code?: undefined } | { file?: undefined; code: string };

let script: WorkerScript | null = null;

export function workerScript(): WorkerScript {
  script ??= locate();
  return script;
}

function locate(): WorkerScript {
  const here = import.meta.url;
  if (!here.endsWith('.ts')) {
    const file = new URL(here.includes('/chunks/') ? './sql-worker.mjs' : './chunks/sql-worker.mjs', here);
    if (!existsSync(file)) throw new Error(`${fileURLToPath(file)} is missing: run \`npm run build\``);
    return { file };
  }
  const entry = fileURLToPath(new URL('./entry.ts', here));
  const esbuild = createRequire(here)('esbuild') as typeof import('esbuild');
  const out = esbuild.buildSync({
    entryPoints: [entry],
    bundle: true,
    write: false,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    packages: 'external',
    define: { 'import.meta.url': JSON.stringify(pathToFileURL(entry).href) },
    logLevel: 'silent',
  });
  // note: source text runs as a CommonJS script whose require resolves from the working directory;
  // this one resolves from entry.ts, as the bundled file's imports do from build/chunks/.
  const code = `(function (require) {\n${out.outputFiles[0]!.text}\n})(require('node:module').createRequire(${JSON.stringify(entry)}));`;
  return { code };
}
