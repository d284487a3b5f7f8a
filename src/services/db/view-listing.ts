import { EdgeError } from '../../core/errors.js';
import { typeName } from '../../sql/pg/types.js';
import type { StoredView } from '../../sql/pg/views.js';

/**
 * Views in the database service's listings (docs/api.md "Views"): `GET /db/tables` and
 * `GET /db/schema` list them after the tables, with `type: "view"`, their columns as
 * `POST /db/query` types them, the tables and views they read and their statement.
 */
const columnsOf = (v: StoredView) =>
  v.columns.map((c) => ({ name: c.name, type: typeName(c.type), nullable: true, primary_key: false, ...(v.columnComments?.[c.name] !== undefined ? { comment: v.columnComments[c.name] } : {}) }));
/** What a view reads: the tables and views it names, through other views too (never a platform table: auth.users as such). */
const reads = (v: StoredView) => v.deps;

export function viewListing(v: StoredView, createdAt: string | null): unknown {
  return {
    name: v.name,
    type: 'view',
    columns: columnsOf(v).map((c) => ({ ...c, default: null, unique: false, references: null, system: false })),
    indexes: [],
    rls_enabled: false,
    system: false,
    created_at: createdAt,
    reads: reads(v),
    definition: v.definition,
    ...(v.comment !== undefined ? { comment: v.comment } : {}),
  };
}

/** The schema graph with the views after the tables (no edges: a view has no foreign keys). */
export function withViews(graph: unknown, views: StoredView[]): unknown {
  const g = graph as { tables: unknown[]; edges: unknown[] };
  const listed = views.map((v) => ({ name: v.name, schema: 'public', type: 'view', primary_key: [], columns: columnsOf(v), rls_enabled: false, reads: reads(v), ...(v.comment !== undefined ? { comment: v.comment } : {}) }));
  return { ...g, tables: [...g.tables, ...listed] };
}

/** A write, RLS or DDL request of the rows API on a view: 405 (a view is read through GET …/rows; SQL changes it). */
export function viewIsReadOnly(name: string): EdgeError {
  return new EdgeError('method_not_allowed', `"${name}" is a view: its rows are read with GET /db/tables/${name}/rows[/{id}]; write to the tables it reads, and change it with CREATE OR REPLACE VIEW / DROP VIEW through /db/query`, {
    headers: { allow: 'GET' },
  });
}
