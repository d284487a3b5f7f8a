// Bundles the TypeScript sources with esbuild: build/platform-edge.cjs (the CLI, run by
// bin/platform-edge.js) and build/index.mjs (the programmatic API, the package's export),
// and emits build/index.d.ts, the API's types, from src/index.ts with TypeScript.
// Dependencies (native modules among them) stay external and load from node_modules.
// For the API, code splitting puts what is loaded on demand (e.g. the GraphQL service) in
// build/chunks/. The CLI is one CommonJS script so that bin/platform-edge.js can compile it
// with V8's code cache (a `vm.Script` takes cached data; an ES module cannot on Node 20):
// a start after the first skips compiling it (docs/benchmarks.md "Startup").
import { build } from 'esbuild';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';

const out = new URL('./', import.meta.url).pathname;
const src = (path) => new URL(`../src/${path}`, import.meta.url).pathname;
rmSync(new URL('./chunks/', import.meta.url), { recursive: true, force: true });

await build({
  // note: the SQL worker thread and the functions' sandbox process are their own entries
  // (src/sql/worker/script.ts and src/services/functions/sandbox-process.ts find them in chunks/).
  entryPoints: { index: src('index.ts'), 'chunks/sql-worker': src('sql/worker/entry.ts'), 'chunks/functions-sandbox': src('services/functions/sandbox-child.ts') },
  outdir: out,
  outExtension: { '.js': '.mjs' },
  chunkNames: 'chunks/[name]-[hash]',
  splitting: true,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  sourcemap: 'linked',
  logLevel: 'warning',
});

await build({
  entryPoints: { 'platform-edge': src('cli/main.ts') },
  outdir: out,
  outExtension: { '.js': '.cjs' },
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  packages: 'external',
  // note: the script runs in a `vm.Script` without a dynamic-import hook: `import()` becomes
  // `require()`, and `import.meta.url` is the script's own URL (src/paths.ts finds the package by it).
  supported: { 'dynamic-import': false },
  define: { 'import.meta.url': '__import_meta_url' },
  banner: { js: 'const __import_meta_url = require("node:url").pathToFileURL(__filename).href;' },
  sourcemap: 'linked',
  logLevel: 'warning',
});
rmSync(new URL('./platform-edge.mjs', import.meta.url), { force: true });
rmSync(new URL('./platform-edge.mjs.map', import.meta.url), { force: true });

await emitTypes();

/**
 * build/index.d.ts from src/index.ts. Every type the API shows is declared in that one file,
 * so its declarations stand alone: TypeScript's isolated declaration emit (no type checking;
 * `tsc --noEmit` checks the file) must report nothing, and the result may import nothing.
 * The installed package's types are checked by .ci/pack-check.
 */
async function emitTypes() {
  let ts;
  try {
    ts = (await import('typescript')).default;
  } catch {
    // note: a build without the dev dependencies keeps the .d.ts it has (the packed one).
    process.stderr.write('build: typescript is not installed; build/index.d.ts not regenerated\n');
    return;
  }
  const file = src('index.ts');
  const result = ts.transpileDeclaration(readFileSync(file, 'utf8'), {
    fileName: file,
    reportDiagnostics: true,
    compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, strict: true },
  });
  const problems = (result.diagnostics ?? []).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
  if (/^\s*(import|export)\s[^;{\n]*\sfrom\s*['"]|^\s*import\s*['"]|\bimport\(\s*['"]|\/\/\/\s*<reference/m.test(result.outputText)) {
    problems.push('the declarations import another module; declare every exported type in src/index.ts');
  }
  if (problems.length > 0) throw new Error(`build: cannot emit build/index.d.ts from src/index.ts:\n${problems.join('\n')}`);
  writeFileSync(new URL('./index.d.ts', import.meta.url), `// Generated from src/index.ts by build/build.mjs; do not edit.\n${result.outputText}`);
}
