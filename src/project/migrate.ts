import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type Database from 'better-sqlite3';

export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

const cache = new Map<string, readonly Migration[]>();
const fileName = (version: number, name: string): string => `${String(version).padStart(4, '0')}_${name}.sql`;

/**
 * Reads the numbered `NNNN_name.sql` files of a folder, in order (cached per folder).
 * Two files with the same number are an error naming both.
 */
export function loadMigrations(dir: string): readonly Migration[] {
  const hit = cache.get(dir);
  if (hit) return hit;
  const list = readdirSync(dir)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((f) => ({ version: Number(f.slice(0, 4)), name: f.slice(5, -4), sql: readFileSync(join(dir, f), 'utf8') }));
  for (let i = 1; i < list.length; i++) {
    const [a, b] = [list[i - 1]!, list[i]!];
    if (a.version === b.version) {
      throw new Error(`migrations in ${dir}: ${fileName(a.version, a.name)} and ${fileName(b.version, b.name)} have the same number; renumber one`);
    }
  }
  cache.set(dir, list);
  return list;
}

/**
 * Applies every migration the database has not recorded, whatever its number (so a file
 * numbered below one already applied, added later by another area, still runs), in
 * order, each in its own transaction, and records it by version and name in `table`
 * (e.g. `"_svc_meta.migrations"`). A file whose number is recorded under another name is an
 * error naming both, raised before anything is applied.
 */
export function migrate(db: Database.Database, migrations: readonly Migration[], table: string): void {
  db.exec(`CREATE TABLE IF NOT EXISTS ${table} (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`);
  const recorded = db.prepare(`SELECT name FROM ${table} WHERE version = ?`).pluck();
  const applied = new Map((db.prepare(`SELECT version, name FROM ${table}`).all() as { version: number; name: string }[]).map((r) => [r.version, r.name]));
  for (const m of migrations) checkName(m, applied.get(m.version), table);
  const record = db.prepare(`INSERT INTO ${table} (version, name, applied_at) VALUES (?, ?, ?)`);
  for (const m of migrations) {
    if (applied.has(m.version)) continue;
    db.transaction(() => {
      // note: another process (the CLI, a SQL worker) may have applied it since the read above.
      const now = recorded.get(m.version) as string | undefined;
      if (now !== undefined) return checkName(m, now, table);
      db.exec(m.sql);
      record.run(m.version, m.name, new Date().toISOString());
    }).immediate();
  }
}

function checkName(m: Migration, recordedName: string | undefined, table: string): void {
  if (recordedName === undefined || recordedName === m.name) return;
  throw new Error(
    `migration ${fileName(m.version, m.name)}: version ${m.version} is already recorded in ${table} as ${fileName(m.version, recordedName)}; renumber the new file`,
  );
}
