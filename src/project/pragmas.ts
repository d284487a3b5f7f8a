import type Database from 'better-sqlite3';

/**
 * Applies the pragmas every SQLite file gets (docs/operations.md "Durability"). busy_timeout comes
 * first so that the WAL switch itself waits for a concurrent opener instead of failing.
 */
export function applyPragmas(db: Database.Database, durability: 'normal' | 'full'): void {
  db.pragma('busy_timeout = 5000');
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${durability === 'full' ? 'FULL' : 'NORMAL'}`);
  db.pragma('foreign_keys = ON');
  db.pragma('temp_store = MEMORY');
  // note: bounds the WAL file after checkpoints (a long-lived reader would otherwise let it grow).
  db.pragma('journal_size_limit = 67108864');
}

/**
 * Caps the file's size (a project's quota, `PLATFORM_EDGE_MAX_PROJECT_DB_BYTES`): past it a
 * write fails with SQLITE_FULL, answered 507 like a full disk. Per connection; 0 leaves it off.
 */
export function applySizeCap(db: Database.Database, maxBytes: number): void {
  if (maxBytes <= 0) return;
  const page = db.pragma('page_size', { simple: true }) as number;
  db.pragma(`max_page_count = ${Math.max(1, Math.floor(maxBytes / page))}`);
}
