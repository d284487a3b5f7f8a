#!/usr/bin/env node
// LATERAL as the translator emits it (src/sql/pg/lateral.ts: the subquery's rows as JSON
// through json_each, once per outer row) against the form one would write for SQLite by
// hand (row_number() OVER (PARTITION BY …) joined), for the everyday top-N per group:
// 2,000 authors × 20 posts, the 3 best posts of each. Both run on one better-sqlite3
// connection in the same run; the figure is the ratio. Bounded: about 2 s per measurement.
//
//   node bench/lateral.mjs
import { build } from 'esbuild';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const LATERAL = `select a.id, a.name, t.title, t.score from authors a cross join lateral (select title, score from posts p where p.author_id = a.id order by score desc, id limit 3) t`;
const WINDOW = `SELECT a.id, a.name, t.title, t.score FROM authors a JOIN (SELECT author_id, title, score, row_number() OVER (PARTITION BY author_id ORDER BY score DESC, id) AS rn FROM posts) t ON t.author_id = a.id AND t.rn <= 3`;
const AUTHORS = [
  { name: 'id', type: 'int4', pk: true },
  { name: 'name', type: 'text' },
];
const POSTS = [
  { name: 'id', type: 'int4', pk: true },
  { name: 'author_id', type: 'int4' },
  { name: 'title', type: 'text' },
  { name: 'score', type: 'int4' },
];
const schema = (t) => (t === 'authors' ? AUTHORS : t === 'posts' ? POSTS : null);

// note: inside the package (removed at the end), so the bundle resolves the package's dependencies.
const dir = mkdtempSync(join(process.cwd(), 'bench', '.lateral-'));
const out = join(dir, 'translate.mjs');
await build({
  stdin: { contents: `export { translateUncached } from './src/sql/pg/translate.ts'; export { loadParser } from './src/sql/pg/parse.ts';`, resolveDir: process.cwd(), loader: 'ts' },
  bundle: true,
  platform: 'node',
  format: 'esm',
  packages: 'external',
  outfile: out,
  logLevel: 'error',
});
const { translateUncached, loadParser } = await import(pathToFileURL(out).href);
await loadParser();
rmSync(dir, { recursive: true, force: true });

// note: the table markers become the tables themselves and the time-limit check a constant (no RLS, no limit: the SQL alone).
const emitted = translateUncached(LATERAL, schema)
  .statements[0].steps.map((s) => s.sql)
  .join('')
  .replace(/\0T(\w+)\0/g, '"$1"')
  .replace(/\0K[^\0]*\0/g, '1');

const db = new Database(':memory:');
db.function('pe_error', (m) => {
  throw new Error(String(m));
});
db.exec(`CREATE TABLE authors (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
  CREATE TABLE posts (id INTEGER PRIMARY KEY, author_id INTEGER NOT NULL, title TEXT NOT NULL, score INTEGER);
  CREATE INDEX posts_author ON posts (author_id);`);
const ins = db.prepare('INSERT INTO posts (id, author_id, title, score) VALUES (?, ?, ?, ?)');
db.transaction(() => {
  for (let a = 1; a <= 2000; a++) {
    db.prepare('INSERT INTO authors (id, name) VALUES (?, ?)').run(a, `author ${a}`);
    for (let j = 0; j < 20; j++) ins.run(a * 100 + j, a, `post ${a}.${j}`, (a * 7 + j * 13) % 50);
  }
})();

const lateral = db.prepare(emitted);
const windowed = db.prepare(WINDOW);
const sortRows = (rows) => rows.map((r) => JSON.stringify([r.id, r.title, r.score])).sort();
const a = sortRows(lateral.all());
const b = sortRows(windowed.all());
if (a.length !== 6000 || JSON.stringify(a) !== JSON.stringify(b)) throw new Error(`the two forms disagree (${a.length} vs ${b.length} rows)`);

/** Median ms per run of `fn` over about 2 s (after a warm-up). */
function measure(fn) {
  for (let i = 0; i < 3; i++) fn();
  const times = [];
  const until = performance.now() + 2000;
  while (performance.now() < until) {
    const t0 = performance.now();
    fn();
    times.push(performance.now() - t0);
  }
  times.sort((x, y) => x - y);
  return times[Math.floor(times.length / 2)];
}
const lat = measure(() => lateral.all());
const win = measure(() => windowed.all());
console.log(JSON.stringify({ rows: a.length, lateral_ms: +lat.toFixed(2), window_ms: +win.toFixed(2), lateral_over_window: +(lat / win).toFixed(2) }));
