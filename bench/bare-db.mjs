// Bare uWS + better-sqlite3 server: the baseline for the database benchmarks (issue 4).
// One connection, prepared statements, JSON out, the same table shape as a document
// table (id TEXT PK UUIDv7, data JSON text, timestamps) with an expression index on
// data.city, seeded with BARE_DB_SEED rows (default 100000, city = "c" + i % 5000).
//   GET  /rows/:id          one row by primary key
//   GET  /rows?city=cN      20 rows by the indexed field
//   POST /rows              insert {"data": {...}} → 201 row
// Usage: node bench/bare-db.mjs [port]; prints one JSON line once listening:
// {"server":"bare-db","url":…,"port":…,"first_id":…}
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { v7 } from 'uuid';

const require = createRequire(import.meta.url);
const pkgDir = dirname(require.resolve('uWebSockets.js/package.json'));
const file = join(pkgDir, 'binaries', `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`);
if (!existsSync(file)) {
  process.stderr.write(`bare-db: no native uWS binary for this Node ABI (${file})\n`);
  process.exit(1);
}
const uws = require(file);

const dir = mkdtempSync(join(tmpdir(), 'bare-db-'));
const db = new Database(join(dir, 'bare.db'));
db.pragma('busy_timeout = 5000');
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.pragma('journal_size_limit = 67108864');
db.exec(`CREATE TABLE docs (id TEXT PRIMARY KEY NOT NULL, data TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL) STRICT;
         CREATE INDEX docs_city ON docs (json_extract(data, '$.city'));`);
const insert = db.prepare('INSERT INTO docs (id, data, created_at, updated_at) VALUES (?, ?, ?, ?)');
const seed = Number(process.env.BARE_DB_SEED ?? 100_000);
db.transaction(() => {
  for (let i = 1; i <= seed; i++) {
    const at = new Date().toISOString();
    insert.run(v7(), JSON.stringify({ city: `c${i % 5000}`, n: i }), at, at);
  }
})();
const byId = db.prepare('SELECT id, data, created_at, updated_at FROM docs WHERE id = ?');
const byCity = db.prepare(`SELECT id, data, created_at, updated_at FROM docs WHERE json_extract(data, '$.city') = ? ORDER BY id LIMIT 20`);
const firstId = db.prepare('SELECT id FROM docs ORDER BY id LIMIT 1').pluck().get() ?? null;
const toRow = (r) => ({ id: r.id, data: JSON.parse(r.data), created_at: r.created_at, updated_at: r.updated_at });

const send = (res, status, body) => {
  res.cork(() => {
    res.writeStatus(status);
    res.writeHeader('content-type', 'application/json; charset=utf-8');
    res.end(JSON.stringify(body));
  });
};

const port = Number(process.argv[2] ?? 0);
const host = '127.0.0.1';
uws
  .App()
  .get('/rows/:id', (res, req) => {
    const r = byId.get(req.getParameter(0));
    if (r) send(res, '200 OK', toRow(r));
    else send(res, '404 Not Found', { error: { code: 'not_found', message: 'row not found' } });
  })
  .get('/rows', (res, req) => {
    const city = new URLSearchParams(req.getQuery() ?? '').get('city');
    send(res, '200 OK', { rows: byCity.all(city).map(toRow) });
  })
  .post('/rows', (res) => {
    let aborted = false;
    const chunks = [];
    res.onAborted(() => {
      aborted = true;
    });
    res.onData((ab, isLast) => {
      chunks.push(Buffer.from(ab.slice(0)));
      if (!isLast || aborted) return;
      let data;
      try {
        data = JSON.parse(Buffer.concat(chunks).toString('utf8')).data;
      } catch {
        send(res, '400 Bad Request', { error: { code: 'invalid_body', message: 'bad json' } });
        return;
      }
      const id = v7();
      const at = new Date().toISOString();
      insert.run(id, JSON.stringify(data), at, at);
      send(res, '201 Created', { id, data, created_at: at, updated_at: at });
    });
  })
  .any('/*', (res) => send(res, '404 Not Found', { error: { code: 'not_found', message: 'route not found' } }))
  .listen(host, port, (token) => {
    if (!token) {
      process.stderr.write(`bare-db: cannot listen on ${host}:${port}\n`);
      process.exit(1);
    }
    const p = uws.us_socket_local_port(token);
    process.stdout.write(`${JSON.stringify({ server: 'bare-db', url: `http://${host}:${p}`, port: p, first_id: firstId })}\n`);
  });

const stop = () => {
  try {
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
    process.exit(0);
  }
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
