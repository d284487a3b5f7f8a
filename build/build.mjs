// Bundles the TypeScript sources into build/platform-edge.mjs with esbuild.
// Dependencies (native modules among them) stay external and load from node_modules.
// Code splitting puts what is loaded on demand (e.g. the GraphQL service) in build/chunks/,
// so `serve` does not pay for it at startup.
import { build } from 'esbuild';
import { rmSync } from 'node:fs';

const out = new URL('./', import.meta.url).pathname;
rmSync(new URL('./chunks/', import.meta.url), { recursive: true, force: true });

await build({
  entryPoints: { 'platform-edge': new URL('../src/cli/main.ts', import.meta.url).pathname },
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
