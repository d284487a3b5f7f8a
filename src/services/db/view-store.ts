import type { ProjectLease } from '../../project/registry.js';
import type { StoredView } from '../../sql/pg/views.js';
import type { ColumnType } from '../../sql/pg/types.js';

/**
 * The view catalog (`_svc_meta.views`, schema/project/0016_views.sql) of one project, read once
 * per SQLite schema version: every CREATE/DROP VIEW also creates or drops SQLite's placeholder
 * view (src/sql/pg/views.ts), which changes the schema version.
 */
interface Cached {
  version: number;
  views: Map<string, StoredView>;
  created: Map<string, string>;
}
const VIEWS = 'db.views';
const empty = (): Cached => ({ version: Number.NaN, views: new Map(), created: new Map() });

export function readViews(lease: ProjectLease, version: number): Map<string, StoredView> {
  return cached(lease, version).views;
}

/** When each view was made (for /db/schema and /db/tables). */
export function viewCreatedAt(lease: ProjectLease, version: number, name: string): string | null {
  return cached(lease, version).created.get(name) ?? null;
}

function cached(lease: ProjectLease, version: number): Cached {
  const c = lease.cache(VIEWS, empty);
  if (c.version === version) return c;
  const views = new Map<string, StoredView>();
  const created = new Map<string, string>();
  const rows = lease.stmt('SELECT name, definition, columns, deps, created_at FROM "_svc_meta.views" ORDER BY name').all() as Array<{
    name: string;
    definition: string;
    columns: string;
    deps: string;
    created_at: string;
  }>;
  for (const r of rows) {
    views.set(r.name, { name: r.name, definition: r.definition, columns: JSON.parse(r.columns) as ColumnType[], deps: JSON.parse(r.deps) as string[] });
    created.set(r.name, r.created_at);
  }
  // note: COMMENT ON VIEW (and on a view's columns) keeps its text in _svc_meta.comments under the view's name.
  const hasComments = rows.length > 0 && lease.stmt(`SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = '_svc_meta.comments'`).get() !== undefined;
  if (hasComments) {
    for (const r of lease.stmt('SELECT tbl, col, comment FROM "_svc_meta.comments"').all() as Array<{ tbl: string; col: string; comment: string }>) {
      const v = views.get(r.tbl);
      if (!v) continue;
      if (r.col === '') v.comment = r.comment;
      else (v.columnComments ??= {})[r.col] = r.comment;
    }
  }
  c.version = version;
  c.views = views;
  c.created = created;
  return c;
}
