#!/usr/bin/env node
// A translation cache miss (parse + translate of a one-line SELECT), PostgreSQL's parser
// (libpg-query, what /db/query uses) against node-sql-parser (what it used before issue 17),
// measured in one run. The old translator's emitter is gone from the tree, so "old" is
// node-sql-parser's parse alone: a lower bound of the old cache miss, which makes the ratio
// conservative. Bounded: about 2 s per measurement.
//
//   node bench/sql-parse.mjs
import { build } from 'esbuild';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const SQL = `select id, title, price from books where author_id = $1 and price > 10 order by price desc limit 20`;
const COLUMNS = ['id', 'author_id', 'title', 'price'].map((name) => ({ name, type: name === 'title' ? 'text' : 'int8' }));
const schema = (t) => (t === 'books' ? COLUMNS : null);

// note: inside the package (removed at the end), so the bundle resolves the package's dependencies.
const dir = mkdtempSync(join(process.cwd(), 'bench', '.sql-parse-'));
const out = join(dir, 'translate.mjs');
await build({
  stdin: {
    contents: `export { translateUncached } from './src/sql/pg/translate.ts'; export { loadParser, parseScript } from './src/sql/pg/parse.ts';`,
    resolveDir: process.cwd(),
    loader: 'ts',
  },
  bundle: true,
  platform: 'node',
  format: 'esm',
  packages: 'external',
  outfile: out,
  logLevel: 'error',
});
const { translateUncached, loadParser, parseScript } = await import(pathToFileURL(out).href);
await loadParser();

/** Median µs per call of `fn` over rounds of about 200 ms (after a warm-up). */
function measure(fn) {
  for (let i = 0; i < 500; i++) fn();
  const rounds = [];
  const until = performance.now() + 2000;
  while (performance.now() < until) {
    let n = 0;
    const t0 = performance.now();
    while (performance.now() - t0 < 200) {
      fn();
      n++;
    }
    rounds.push(((performance.now() - t0) * 1000) / n);
  }
  rounds.sort((a, b) => a - b);
  return rounds[Math.floor(rounds.length / 2)];
}

const newMiss = measure(() => translateUncached(SQL, schema));
const newParse = measure(() => parseScript(SQL));
let oldParse = null;
try {
  const require = createRequire(join(process.cwd(), 'package.json'));
  const { Parser } = require('node-sql-parser/build/postgresql.js');
  const p = new Parser();
  oldParse = measure(() => p.astify(SQL, { database: 'postgresql' }));
} catch {
  // note: node-sql-parser is no longer a dependency once issue 17 is merged.
}
rmSync(dir, { recursive: true, force: true });

const f = (x) => `${x.toFixed(1)} µs`;
console.log(`statement: ${SQL}`);
console.log(`new  cache miss (libpg-query parse + lower + emit): ${f(newMiss)}  (parse alone ${f(newParse)})`);
if (oldParse === null) console.log('old  node-sql-parser: not measured (not installed)');
else {
  console.log(`old  node-sql-parser parse alone (lower bound of the old miss): ${f(oldParse)}`);
  console.log(`ratio new miss / old parse: ${(newMiss / oldParse).toFixed(2)}`);
}
