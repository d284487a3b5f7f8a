#!/usr/bin/env node
// Thin entry: runs the bundled CLI (built by `npm run build`, which `npm install` runs).
import { existsSync } from 'node:fs';

const bundle = new URL('../build/platform-edge.mjs', import.meta.url);
if (!existsSync(bundle)) {
  process.stderr.write('platform-edge: build/platform-edge.mjs is missing; run `npm run build` first.\n');
  process.exit(1);
}
const { main } = await import(bundle.href);
process.exitCode = await main(process.argv.slice(2));
