import type { ProjectLease } from '../../project/registry.js';

/** One deployed version as stored (immutable once written). */
export interface VersionRow {
  /** Never reused (AUTOINCREMENT): names the version's warm isolate. */
  id: number;
  name: string;
  version: number;
  language: 'js' | 'ts';
  source: string;
  code: string;
  size: number;
  sha256: string;
  /** JSON text of the version's options. */
  options: string;
  created_at: string;
}

export interface FunctionRow {
  name: string;
  version: number;
  created_at: string;
  updated_at: string;
}

/** A version's row without its source and code (what an invoke needs on a warm isolate). */
export type VersionMeta = Omit<VersionRow, 'source' | 'code'>;

export type NewVersion = Omit<VersionRow, 'id' | 'version' | 'created_at'>;

const VERSION_COLUMNS = 'id, name, version, language, size, sha256, options, created_at';
const VERSION_COLUMNS_V = 'v.id, v.name, v.version, v.language, v.size, v.sha256, v.options, v.created_at';

/** SQL of the functions service: `_svc_meta.functions` and `_svc_meta.function_versions`. */
export const functionsStore = {
  /** Adds the next version of `name` (1 for a new name) and points the name at it, in one transaction. */
  deploy(lease: ProjectLease, v: NewVersion, now: string): { row: VersionRow; created: boolean } {
    return lease.db.transaction(() => {
      const current = lease.stmt('SELECT version FROM "_svc_meta.functions" WHERE name = ?').get(v.name) as { version: number } | undefined;
      const last = lease.stmt('SELECT max(version) AS v FROM "_svc_meta.function_versions" WHERE name = ?').get(v.name) as { v: number | null };
      const version = (last.v ?? 0) + 1;
      const info = lease
        .stmt(
          `INSERT INTO "_svc_meta.function_versions" (name, version, language, source, code, size, sha256, options, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(v.name, version, v.language, v.source, v.code, v.size, v.sha256, v.options, now);
      if (current === undefined) {
        lease.stmt('INSERT INTO "_svc_meta.functions" (name, version, created_at, updated_at) VALUES (?, ?, ?, ?)').run(v.name, version, now, now);
      } else {
        lease.stmt('UPDATE "_svc_meta.functions" SET version = ?, updated_at = ? WHERE name = ?').run(version, now, v.name);
      }
      return { row: { ...v, id: Number(info.lastInsertRowid), version, created_at: now }, created: current === undefined };
    })();
  },

  list(lease: ProjectLease): (FunctionRow & Pick<VersionRow, 'language' | 'options'>)[] {
    return lease
      .stmt(
        `SELECT f.name, f.version, f.created_at, f.updated_at, v.language, v.options
         FROM "_svc_meta.functions" f JOIN "_svc_meta.function_versions" v ON v.name = f.name AND v.version = f.version
         ORDER BY f.name`,
      )
      .all() as (FunctionRow & Pick<VersionRow, 'language' | 'options'>)[];
  },

  get(lease: ProjectLease, name: string): FunctionRow | null {
    return (lease.stmt('SELECT name, version, created_at, updated_at FROM "_svc_meta.functions" WHERE name = ?').get(name) as FunctionRow | undefined) ?? null;
  },

  /** Versions without their source, newest first. */
  versions(lease: ProjectLease, name: string): VersionMeta[] {
    return lease.stmt(`SELECT ${VERSION_COLUMNS} FROM "_svc_meta.function_versions" WHERE name = ? ORDER BY version DESC`).all(name) as VersionMeta[];
  },

  /** One version without its source and code; the current one when `version` is null. */
  version(lease: ProjectLease, name: string, version: number | null): VersionMeta | null {
    const row =
      version === null
        ? lease.stmt(`SELECT ${VERSION_COLUMNS_V} FROM "_svc_meta.functions" f JOIN "_svc_meta.function_versions" v ON v.name = f.name AND v.version = f.version WHERE f.name = ?`).get(name)
        : lease.stmt(`SELECT ${VERSION_COLUMNS_V} FROM "_svc_meta.functions" f JOIN "_svc_meta.function_versions" v ON v.name = f.name WHERE f.name = ? AND v.version = ?`).get(name, version);
    return (row as VersionMeta | undefined) ?? null;
  },

  /** The compiled code of a version by id (read at a cold start only); null when it is gone. */
  code(lease: ProjectLease, id: number): string | null {
    return (lease.stmt('SELECT code FROM "_svc_meta.function_versions" WHERE id = ?').pluck().get(id) as string | undefined) ?? null;
  },

  /** Removes the name and all its versions; the ids removed (their isolates are dropped). */
  delete(lease: ProjectLease, name: string): number[] | null {
    return lease.db.transaction(() => {
      const ids = (lease.stmt('SELECT id FROM "_svc_meta.function_versions" WHERE name = ?').all(name) as { id: number }[]).map((r) => r.id);
      const gone = lease.stmt('DELETE FROM "_svc_meta.functions" WHERE name = ?').run(name).changes;
      lease.stmt('DELETE FROM "_svc_meta.function_versions" WHERE name = ?').run(name);
      return gone === 0 ? null : ids;
    })();
  },
};
