import type Database from 'better-sqlite3';
import type { ProjectLease } from './registry.js';

/** How long a read schema version is trusted without asking SQLite again. */
const TRUST_MS = 1000;

interface Known {
  version: number;
  checkedAt: number;
}
const known = new WeakMap<Database.Database, Known>();

/**
 * The project database's schema version (SQLite's `schema_version`), read at most once a
 * second (`fresh`: now): reading it is a statement of its own, with its own file locks. Every schema
 * change made in this process calls `schemaChanged` (table DDL of the rows API, user-field
 * changes, raw-SQL DDL run by the worker pool), so the cached value is only ever stale for
 * changes made by another process, and then for at most TRUST_MS.
 */
export function schemaVersion(lease: ProjectLease, fresh = false): number {
  const now = Date.now();
  const k = known.get(lease.db);
  if (k && !fresh && now - k.checkedAt < TRUST_MS) return k.version;
  const version = lease.stmt('PRAGMA schema_version').pluck().get() as number;
  known.set(lease.db, { version, checkedAt: now });
  return version;
}

/** Forgets the cached version after a schema change made in this process. */
export function schemaChanged(db: Database.Database): void {
  known.delete(db);
}
