import type { TableInfo } from '../../sql/table-model.js';

/** Wire shapes of table definitions and of the schema graph (docs/api.md "Database"). */

interface ColumnView {
  name: string;
  type: string;
  nullable: boolean;
  default: unknown;
  unique: boolean;
  primary_key: boolean;
  references: { table: string; column: string; on_delete: string } | null;
  system: boolean;
  /** `COMMENT ON COLUMN`; absent without one. */
  comment?: string;
  /** The enum type of a text column (`CREATE TYPE … AS ENUM`); absent otherwise. */
  enum?: string;
}

const sys = (name: string, type: string, pk = false): ColumnView => ({
  name,
  type,
  nullable: false,
  default: null,
  unique: pk,
  primary_key: pk,
  references: null,
  system: true,
});

/** Every column of a table, the platform ones (`id`, `data`, timestamps) marked `system`. */
export function columnsOf(t: TableInfo): ColumnView[] {
  const out: ColumnView[] = [sys('id', t.def.key === 'int8' ? 'int8' : 'uuid', true)];
  if (t.def.kind === 'document') out.push(sys('data', 'jsonb'));
  for (const c of t.def.columns) {
    out.push({
      name: c.name,
      type: c.type,
      nullable: c.nullable,
      default: c.default,
      unique: c.unique,
      primary_key: false,
      references: c.references,
      system: false,
      ...(c.comment !== undefined ? { comment: c.comment } : {}),
      ...(c.enum ? { enum: c.enum } : {}),
    });
  }
  if (t.def.stamps !== false) out.push(sys('created_at', 'timestamptz'), sys('updated_at', 'timestamptz'));
  const sc = t.def.systemComments;
  if (sc) for (const c of out) if (c.system && sc[c.name] !== undefined) c.comment = sc[c.name]!;
  return out;
}

export function tableView(t: TableInfo): unknown {
  return {
    name: t.def.name,
    type: t.def.kind,
    columns: columnsOf(t),
    indexes: t.def.indexes,
    rls_enabled: t.rls.enabled,
    ...(t.def.comment !== undefined ? { comment: t.def.comment } : {}),
    system: t.system,
    created_at: t.def.created_at,
  };
}

/** Tables, columns, primary keys and foreign-key edges. */
export function schemaGraph(tables: TableInfo[]): unknown {
  const edges: unknown[] = [];
  for (const t of tables) {
    for (const c of t.def.columns) {
      if (c.references) {
        edges.push({
          from: { table: t.def.name, column: c.name },
          to: { table: c.references.table, column: c.references.column },
          on_delete: c.references.on_delete,
        });
      }
    }
  }
  return {
    tables: tables.map((t) => ({
      name: t.def.name,
      schema: 'public',
      type: t.def.kind,
      primary_key: ['id'],
      columns: columnsOf(t).map((c) => ({ name: c.name, type: c.type, nullable: c.nullable, primary_key: c.primary_key, ...(c.comment !== undefined ? { comment: c.comment } : {}), ...(c.enum ? { enum: c.enum } : {}) })),
      rls_enabled: t.rls.enabled,
      ...(t.def.comment !== undefined ? { comment: t.def.comment } : {}),
    })),
    edges,
  };
}
