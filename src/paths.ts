import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

let root: string | null = null;

/** The package root (the folder holding package.json), from the sources or the bundle. */
export function packageRoot(): string {
  if (root) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('platform-edge: cannot find the package root');
    dir = up;
  }
  return (root = dir);
}

export const schemaDir = (): string => join(packageRoot(), 'schema');

/** A separate entry's script: its built file, or (run from source) its bundled text. */
export type EntryScript = { file: URL; code?: undefined } | { file?: undefined; code: string };

/**
 * The script of an entry that runs apart from the server's module graph (a SQL worker thread,
 * the functions' sandbox process), which build/build.mjs bundles as build/chunks/<chunk>.mjs.
 * `here` is the caller's `import.meta.url`: bundled, the caller is in build/ or build/chunks/, so
 * the file is found from either. Run from source (vitest imports src/ through Vite, which a
 * worker thread or a child process cannot), `source` (a path relative to `here`) is bundled with
 * esbuild (a dependency: functions use it too) into CommonJS text whose `require` resolves from
 * the source file, as the bundled file's imports do from build/chunks/.
 */
export function entryScript(here: string, chunk: string, source: string): EntryScript {
  if (!here.endsWith('.ts')) {
    const file = new URL(here.includes('/chunks/') ? `./${chunk}.mjs` : `./chunks/${chunk}.mjs`, here);
    if (!existsSync(file)) throw new Error(`${fileURLToPath(file)} is missing: run \`npm run build\``);
    return { file };
  }
  const entry = fileURLToPath(new URL(source, here));
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
  return { code: `(function (require) {\n${out.outputFiles[0]!.text}\n})(require('node:module').createRequire(${JSON.stringify(entry)}));` };
}
