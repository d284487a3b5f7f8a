// Bundles the TypeScript sources into build/platform-edge.mjs with esbuild.
// Dependencies (native modules among them) stay external and load from node_modules.
import { build } from 'esbuild';


await build({
  entryPoints: [new URL('../src/cli/main.ts', import.meta.url).pathname],
  outfile: new URL('./platform-edge.mjs', import.meta.url).pathname,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  sourcemap: 'linked',
  logLevel: 'warning',
});
