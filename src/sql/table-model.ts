/**
 * The table model (docs/api.md "Database"): tables, columns, indexes and compiled RLS policies.
 * It lives in src/sql/ because the SQL layer compiles against it (RLS, translation) and the
 * database service builds on it; it imports nothing, so any layer from src/sql/ up may use it.
 */
export const COLUMN_TYPES = ['text', 'int8', 'float8', 'bool', 'timestamptz', 'jsonb', 'uuid', 'bytea'] as const;
export type ColumnType = (typeof COLUMN_TYPES)[number];
export type TableKind = 'document' | 'relational';
export type OnDelete = 'cascade' | 'set null' | 'restrict' | 'no action';

export interface ColumnDef {
  name: string;
  type: ColumnType;
  nullable: boolean;
  default: unknown;
  unique: boolean;
  references: { table: string; column: string; on_delete: OnDelete } | null;
  /** A text column of an enum type made by raw SQL (`CREATE TYPE … AS ENUM`): the type's name. */
  enum?: string;
  /** `COMMENT ON COLUMN` (loaded from `_svc_meta.comments`, never stored in the definition). */
  comment?: string;
}

export interface IndexDef {
  /** Column names (relational) or dotted JSON paths (document). */
  columns: string[];
  unique: boolean;
}

export interface TableDef {
  name: string;
  kind: TableKind;
  /** Relational columns besides id/created_at/updated_at; empty for documents. */
  columns: ColumnDef[];
  indexes: IndexDef[];
  created_at: string | null;
  /**
   * Tables made by raw DDL (docs/sql.md "Tables made by raw DDL") may differ from the rows
   * API's own shape: `key` int8 when `id` is an integer rowid (SQLite assigns it on insert),
   * and `stamps` false when the table has no `created_at`/`updated_at` pair (its rows then
   * carry neither, and columns of those names are ordinary data columns).
   */
  key?: 'int8';
  stamps?: false;
  /** `COMMENT ON TABLE` (loaded from `_svc_meta.comments`). */
  comment?: string;
  /** Comments of the system columns (`id`, `created_at`, …), which have no ColumnDef. */
  systemComments?: Record<string, string>;
}

/** Which auth value a compiled policy parameter takes. */
export type PolicyParam =
  | { k: 'uid' }
  | { k: 'role' }
  | { k: 'jwt'; claim: string; path?: string[]; json?: boolean }
  | { k: 'lit'; v: string | number | null };

export interface CompiledPolicy {
  /** A parenthesised SQLite boolean expression with `?` placeholders. */
  sql: string;
  params: PolicyParam[];
  /**
   * Tables its subqueries read (src/sql/policy-expand.ts): the SQL holds a `\0R<table>\0` marker
   * for each, replaced by the table's RLS-filtered form when the catalog loads.
   */
  refs?: string[];
  /** The stored LANGUAGE sql functions inlined into it (docs/sql.md "Functions in policies"): recompiled when the catalog loads. */
  fns?: string[];
  /** Set when expanding failed (a policy cycle, 42P17): using the policy is this error. */
  error?: { sqlstate: string; message: string };
}

/** A named policy as CREATE POLICY writes it (docs/sql.md "Policies"). */
export interface NamedPolicy {
  name: string;
  command: 'all' | PolicyOp;
  permissive: boolean;
  /** Empty: public. */
  roles: string[];
  using: string | null;
  check: string | null;
}

export type PolicyOp = 'select' | 'insert' | 'update' | 'delete';
export const POLICY_OPS: readonly PolicyOp[] = ['select', 'insert', 'update', 'delete'];

export interface RlsState {
  enabled: boolean;
  policies: Partial<Record<PolicyOp, string>>;
  /** Per op, and `update_check` (the new row of an update) when it differs from `update`. */
  compiled: Partial<Record<PolicyOp | 'update_check', CompiledPolicy>>;
  version: number;
  /** The named policies (null for a row written before names were kept: derived from `policies`). */
  named?: NamedPolicy[] | null;
}

/** Columns every table has, in the order they are presented. */
export const SYSTEM_COLUMNS = ['id', 'created_at', 'updated_at'] as const;
const ID_ONLY = ['id'] as const;
const STAMPS = ['created_at', 'updated_at'] as const;
const NO_STAMPS = [] as const;

/** The system columns a table really has: id, and the timestamps unless it has none (see TableDef.stamps). */
export const systemColumns = (def: TableDef): readonly string[] => (def.stamps === false ? ID_ONLY : SYSTEM_COLUMNS);
/** The timestamp columns a table really has (none, see TableDef.stamps), in stored order. */
export const stampColumns = (def: TableDef): readonly string[] => (def.stamps === false ? NO_STAMPS : STAMPS);
/** Whether a name is one of the table's system columns. */
export const isSystemColumn = (def: TableDef, name: string): boolean =>
  name === 'id' || (def.stamps !== false && (name === 'created_at' || name === 'updated_at'));

/** A table as the service uses it at runtime: definition, column lookup, RLS. */
export interface TableInfo {
  def: TableDef;
  cols: ReadonlyMap<string, ColumnDef>;
  rls: RlsState;
  /** Whether this is a platform table presented from its real columns (profiles). */
  system: boolean;
  /** Its recorded privileges (src/sql/grants.ts); undefined: Supabase's defaults, all of them for every role. */
  grants?: Readonly<Partial<Record<'anon' | 'authenticated' | 'service_role', number>>>;
  /** Row SQL built once per table (and RLS version: a new TableInfo after every change). */
  sql: Map<string, string>;
}
