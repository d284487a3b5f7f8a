import type { ProjectLease } from '../../project/registry.js';
import { pgError, violationError } from '../../sql/pg/violations.js';
import { fromCatalogType, type ColumnType } from '../../sql/pg/types.js';
import { systemColumns, type TableInfo } from '../../sql/table-model.js';
import { violationFacts } from '../../sql/worker/violation-facts.js';

/**
 * A rows-API write whose statement violates a constraint answers as raw SQL does (docs/sql.md
 * "Errors"): Postgres' message and `details` {sqlstate, table, column, constraint, detail}.
 * The facts are gathered as the SQL worker gathers them, while the write's transaction is open.
 */
export function writeRows<R>(lease: ProjectLease, t: TableInfo, sql: string, params: unknown[]): R[] {
  try {
    return lease.stmt(sql).all(...params) as R[];
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    // note: a bad value a trigger refuses (an enum column's, docs/sql.md "Enum types") reads as through SQL.
    if (code === 'SQLITE_CONSTRAINT_TRIGGER') throw pgError(err) ?? err;
    if (typeof code !== 'string' || !code.startsWith('SQLITE_CONSTRAINT_') || !lease.db.inTransaction) throw err;
    let facts = null;
    try {
      facts = violationFacts(lease.db, sql, params, code);
    } catch {
      // note: the facts only improve the message; the error itself is the answer.
    }
    throw violationError(code, (err as Error).message, facts, (name) => (name === t.def.name ? catalogColumns(t) : null), err) ?? err;
  }
}

/** The table's columns with the types the catalog gives them (its SQLite declarations are storage classes). */
function catalogColumns(t: TableInfo): ColumnType[] {
  const sys = systemColumns(t.def).map((name) => ({ name, type: name === 'id' ? (t.def.key === 'int8' ? 'int8' : 'uuid') : 'timestamptz' }) as ColumnType);
  if (t.def.kind === 'document') return [...sys, { name: 'data', type: 'jsonb' }];
  return [...sys, ...t.def.columns.map((c) => ({ name: c.name, type: fromCatalogType(c.type) }))];
}
