import type { ProjectLease } from './registry.js';

/** How long a read schema version is trusted without asking SQLite again. */
const TRUST_MS = 1000;

/** Per open connection (`lease.cache`): the last version read and when; `checkedAt` -Infinity: not trusted. */
interface Known {
  version: number;
  checkedAt: number;
}
const KNOWN = 'schema-version.known';
const newKnown = (): Known => ({ version: 0, checkedAt: Number.NEGATIVE_INFINITY });

/**
 * The project database's schema version (SQLite's `schema_version`), read at most once a
 * second (`fresh`: now): reading it is a statement of its own, with its own file locks. Every schema
 * change made in this process calls `schemaChanged` (table DDL of the rows API, user-field
 * changes, raw-SQL DDL run by the worker pool), so the cached value is only ever stale for
 * changes made by another process, and then for at most TRUST_MS.
 */
export function schemaVersion(lease: ProjectLease, fresh = false): number {
  const now = Date.now();
  const k = lease.cache(KNOWN, newKnown);
  if (!fresh && now - k.checkedAt < TRUST_MS) return k.version;
  const version = lease.stmt('PRAGMA schema_version').pluck().get() as number;
  k.version = version;
  k.checkedAt = now;
  return version;
}

/** Forgets the cached version after a schema change made in this process. */
export function schemaChanged(lease: ProjectLease): void {
  lease.cache(KNOWN, newKnown).checkedAt = Number.NEGATIVE_INFINITY;
}
