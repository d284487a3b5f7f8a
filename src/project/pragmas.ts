import type Database from 'better-sqlite3';

/**
 * Applies the pragmas every SQLite file gets (DESIGN.md §4). busy_timeout comes
 * first so that the WAL switch itself waits for a concurrent opener instead of failing.
 */
export function applyPragmas(db: Database.Database, durability: 'normal' | 'full'): void {
  db.pragma('busy_timeout = 5000');
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${durability === 'full' ? 'FULL' : 'NORMAL'}`);
  db.pragma('foreign_keys = ON');
  db.pragma('temp_store = MEMORY');
  // note: bounds the WAL file after checkpoints (DESIGN.md §10).
  db.pragma('journal_size_limit = 67108864');
}
