import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { loadMigrations, migrate } from '../../src/project/migrate.js';

const dirs: string[] = [];
const dbs: Database.Database[] = [];
afterEach(() => {
  dbs.splice(0).forEach((d) => d.close());
  dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true }));
});

/** A fresh folder (loadMigrations caches per folder, so each state of the files gets its own). */
function folder(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'pe-migrate-'));
  dirs.push(dir);
  for (const [name, sql] of Object.entries(files)) writeFileSync(join(dir, name), sql);
  return dir;
}

function database(): Database.Database {
  const db = new Database(':memory:');
  dbs.push(db);
  db.exec('CREATE TABLE log (step TEXT NOT NULL)');
  return db;
}

const TABLE = '"_svc_meta.migrations"';
const applied = (db: Database.Database) => db.prepare(`SELECT version, name FROM ${TABLE} ORDER BY version`).all();
const log = (db: Database.Database) => db.prepare('SELECT step FROM log ORDER BY rowid').pluck().all();
const step = (s: string): string => `INSERT INTO log (step) VALUES ('${s}');`;

describe('migrate', () => {
  it('applies every file in number order and records each by version and name', () => {
    const db = database();
    const dir = folder({ '0003_c.sql': step('c'), '0001_a.sql': step('a'), '0002_b.sql': step('b'), 'notes.txt': 'x', '0004_Bad-Name.sql': step('no') });
    migrate(db, loadMigrations(dir), TABLE);
    expect(log(db)).toEqual(['a', 'b', 'c']);
    expect(applied(db)).toEqual([
      { version: 1, name: 'a' },
      { version: 2, name: 'b' },
      { version: 3, name: 'c' },
    ]);
  });

  it('does not re-run a migration already applied', () => {
    const db = database();
    const files = { '0001_a.sql': step('a'), '0002_b.sql': step('b') };
    migrate(db, loadMigrations(folder(files)), TABLE);
    migrate(db, loadMigrations(folder(files)), TABLE);
    migrate(db, loadMigrations(folder({ ...files, '0003_c.sql': step('c') })), TABLE);
    expect(log(db)).toEqual(['a', 'b', 'c']);
    expect(applied(db)).toEqual([
      { version: 1, name: 'a' },
      { version: 2, name: 'b' },
      { version: 3, name: 'c' },
    ]);
  });

  it('applies a lower-numbered file added after higher ones were applied', () => {
    const db = database();
    migrate(db, loadMigrations(folder({ '0001_a.sql': step('a'), '0005_e.sql': step('e') })), TABLE);
    migrate(db, loadMigrations(folder({ '0001_a.sql': step('a'), '0002_b.sql': step('b'), '0004_d.sql': step('d'), '0005_e.sql': step('e') })), TABLE);
    expect(log(db)).toEqual(['a', 'e', 'b', 'd']);
    expect(applied(db)).toEqual([
      { version: 1, name: 'a' },
      { version: 2, name: 'b' },
      { version: 4, name: 'd' },
      { version: 5, name: 'e' },
    ]);
  });

  it('a file whose number is recorded under another name is an error naming both, and nothing else is applied', () => {
    const db = database();
    migrate(db, loadMigrations(folder({ '0001_a.sql': step('a'), '0002_storage.sql': step('storage') })), TABLE);
    const dir = folder({ '0001_a.sql': step('a'), '0002_webhooks.sql': step('webhooks'), '0003_c.sql': step('c') });
    expect(() => migrate(db, loadMigrations(dir), TABLE)).toThrow(
      `migration 0002_webhooks.sql: version 2 is already recorded in ${TABLE} as 0002_storage.sql; renumber the new file`,
    );
    expect(log(db)).toEqual(['a', 'storage']);
    expect(applied(db)).toEqual([
      { version: 1, name: 'a' },
      { version: 2, name: 'storage' },
    ]);
  });

  it('two files with the same number are an error naming both', () => {
    const dir = folder({ '0001_a.sql': step('a'), '0002_storage.sql': step('s'), '0002_webhooks.sql': step('w') });
    expect(() => loadMigrations(dir)).toThrow(`migrations in ${dir}: 0002_storage.sql and 0002_webhooks.sql have the same number; renumber one`);
  });

  it('a failing migration is rolled back and not recorded; the ones before it stay', () => {
    const db = database();
    const dir = folder({ '0001_a.sql': step('a'), '0002_b.sql': `${step('b')} SELECT * FROM missing_table;` });
    expect(() => migrate(db, loadMigrations(dir), TABLE)).toThrow('no such table: missing_table');
    expect(log(db)).toEqual(['a']);
    expect(applied(db)).toEqual([{ version: 1, name: 'a' }]);
  });

  it('a second connection on the same file finds them applied and runs nothing again', () => {
    const dir = folder({ '0001_a.sql': step('a'), '0002_b.sql': step('b') });
    const path = join(dir, 'shared.db');
    const one = new Database(path);
    const two = new Database(path);
    dbs.push(one, two);
    one.exec('CREATE TABLE log (step TEXT NOT NULL)');
    migrate(one, loadMigrations(dir), TABLE);
    migrate(two, loadMigrations(dir), TABLE);
    expect(log(two)).toEqual(['a', 'b']);
  });
});
