// The change log's own cost per insert (issue 12 item 6, issue 13 "Performance"): a project file
// made by the real migrations (schema/project/*.sql), a document table shaped like the rows API's,
// and one write transaction per insert as a request makes it. Variants, measured in interleaved
// rounds on the same file: the row alone; plus its change-log entry without row images; plus the
// images (as the rows API writes them); the same with the change log's (tbl, seq) index dropped.
// Also prints EXPLAIN QUERY PLAN of every query the server runs on the change log
// (src/events/change-store.ts), to show which index each uses.
// Usage: node bench/change-log-cost.mjs   (BENCH_CL_ROWS per round, default 20000; BENCH_CL_ROUNDS, default 5)
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import { v7 } from 'uuid';

const ROWS = Number(process.env.BENCH_CL_ROWS || 20_000);
const ROUNDS = Number(process.env.BENCH_CL_ROUNDS || 5);
const schemaDir = new URL('../schema/project/', import.meta.url);

function open(withIndex) {
  const dir = mkdtempSync(join(tmpdir(), 'cl-cost-'));
  const db = new Database(join(dir, 'project.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  for (const f of readdirSync(schemaDir).filter((f) => f.endsWith('.sql')).sort()) db.exec(readFileSync(new URL(f, schemaDir), 'utf8'));
  db.exec('DROP INDEX IF EXISTS "_svc_meta.change_log_tbl"');
  if (withIndex) db.exec('CREATE INDEX "_svc_meta.change_log_tbl" ON "_svc_meta.change_log" (tbl, seq)');
  db.exec(`CREATE TABLE docs (id TEXT PRIMARY KEY NOT NULL, data TEXT NOT NULL CHECK (json_valid(data)), created_at TEXT NOT NULL, updated_at TEXT NOT NULL) STRICT`);
  return { db, dir };
}

const APPEND = `INSERT INTO "_svc_meta.change_log" (at, op, tbl, row_id, data, old, new_row, old_row) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`;

function variant(name, withIndex, log, images) {
  const { db, dir } = open(withIndex);
  const insert = db.prepare('INSERT INTO docs (id, data, created_at, updated_at) VALUES (?, ?, ?, ?) RETURNING id, data, created_at, updated_at');
  const append = db.prepare(APPEND);
  const one = db.transaction((i) => {
    const at = new Date().toISOString();
    const data = JSON.stringify({ city: `c${i % 5000}`, n: i, note: 'benchmark row' });
    const row = insert.get(v7(), data, at, at);
    if (!log) return;
    const image = images ? `{"id":${JSON.stringify(row.id)},"data":${row.data},"created_at":${JSON.stringify(at)},"updated_at":${JSON.stringify(at)}}` : null;
    append.run(at, 'insert', 'docs', row.id, data, null, image, null);
  });
  let n = 0;
  return {
    name,
    db,
    /** One round: [wall µs, CPU µs (user + system of this process)] per insert. */
    round() {
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      for (let i = 0; i < ROWS; i++) one.immediate(n++);
      const c = process.cpuUsage(c0);
      return [((performance.now() - t0) * 1000) / ROWS, (c.user + c.system) / ROWS];
    },
    close() {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const variants = [
  variant('row only', false, false, false),
  variant('row + change log entry, no images, no tbl index', false, true, false),
  variant('row + change log entry with images, no tbl index (this branch)', false, true, true),
  variant('row + change log entry with images + (tbl, seq) index (before)', true, true, true),
];
const wall = variants.map(() => []);
const cpu = variants.map(() => []);
for (let r = 0; r < ROUNDS; r++) {
  variants.forEach((v, i) => {
    const [w, c] = v.round();
    wall[i].push(w);
    cpu[i].push(c);
  });
}
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];

console.log(`change log cost per insert: ${ROUNDS} interleaved rounds of ${ROWS} one-insert transactions (WAL, synchronous=NORMAL); medians; CPU = this process's user+system time`);
const [bw, bc] = [median(wall[0]), median(cpu[0])];
variants.forEach((v, i) => {
  const [w, c] = [median(wall[i]), median(cpu[i])];
  console.log(`  ${v.name.padEnd(66)} wall ${w.toFixed(2).padStart(7)} µs (+${(w - bw).toFixed(2)})   CPU ${c.toFixed(2).padStart(7)} µs (+${(c - bc).toFixed(2)})   CPU rounds ${cpu[i].map((t) => t.toFixed(1)).join(', ')}`);
});
const min = (a) => Math.min(...a);
console.log(`  the (tbl, seq) index alone: CPU ${(median(cpu[3]) - median(cpu[2])).toFixed(2)} µs per insert by medians, ${(min(cpu[3]) - min(cpu[2])).toFixed(2)} µs by the least disturbed round (min; read this one on a loaded machine)`);
console.log(`  the change log entry with images: CPU ${(min(cpu[2]) - min(cpu[0])).toFixed(2)} µs per insert by min (${(min(cpu[1]) - min(cpu[0])).toFixed(2)} without images)`);

// Which index each change-log query uses (the statements of src/events/change-store.ts).
const db = variants[3].db;
const COLUMNS = 'seq, at, op, tbl, row_id, data, old, new_row, old_row';
const queries = {
  after: `SELECT ${COLUMNS} FROM "_svc_meta.change_log" WHERE seq > 1 ORDER BY seq LIMIT 500`,
  between: `SELECT ${COLUMNS} FROM "_svc_meta.change_log" WHERE seq > 1 AND seq < 9 ORDER BY seq`,
  descending: `SELECT ${COLUMNS} FROM "_svc_meta.change_log" WHERE seq > 1 AND seq < 9 ORDER BY seq DESC LIMIT 500`,
  bounds: `SELECT (SELECT min(seq) FROM "_svc_meta.change_log") AS oldest, (SELECT max(seq) FROM "_svc_meta.change_log") AS newest`,
  'bounds (the one SELECT before)': `SELECT min(seq) AS oldest, max(seq) AS newest FROM "_svc_meta.change_log"`,
  newest: `SELECT coalesce(max(seq), 0) FROM "_svc_meta.change_log"`,
  prune: `DELETE FROM "_svc_meta.change_log" WHERE seq <= 5`,
};
console.log('EXPLAIN QUERY PLAN with the (tbl, seq) index present (no query names tbl; "bounds" before used it only to scan every entry):');
for (const [k, sql] of Object.entries(queries)) {
  const plan = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all().map((r) => r.detail).join('; ');
  console.log(`  ${k.padEnd(31)} ${plan}`);
}
for (const v of variants) v.close();
