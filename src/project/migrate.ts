import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type Database from 'better-sqlite3';

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

const cache = new Map<string, readonly Migration[]>();

/** Reads the numbered `NNNN_name.sql` files of a folder, in order (cached per folder). */
export function loadMigrations(dir: string): readonly Migration[] {
  const hit = cache.get(dir);
  if (hit) return hit;
  const list = readdirSync(dir)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((f) => ({ version: Number(f.slice(0, 4)), name: f.slice(5, -4), sql: readFileSync(join(dir, f), 'utf8') }));
  cache.set(dir, list);
  return list;
}

/**
 * Applies the migrations the database has not seen, each in its own transaction,
 * and records them in `table` (e.g. `"_svc_meta.migrations"`).
 */
export function migrate(db: Database.Database, migrations: readonly Migration[], table: string): void {
  db.exec(`CREATE TABLE IF NOT EXISTS ${table} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`);
  const row = db.prepare(`SELECT max(version) AS v FROM ${table}`).get() as { v: number | null };
  const current = row.v ?? 0;
  const record = db.prepare(`INSERT INTO ${table} (version, name, applied_at) VALUES (?, ?, ?)`);
  for (const m of migrations) {
    if (m.version <= current) continue;
    db.transaction(() => {
      db.exec(m.sql);
      record.run(m.version, m.name, new Date().toISOString());
    }).immediate();
  }
}
