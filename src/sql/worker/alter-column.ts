import type Database from 'better-sqlite3';
import { editColumn } from './create-text.js';
import { SCRATCH, createText, quoteIdent, rebuildTable, safeInTransaction } from './rebuild.js';

/**
 * `ALTER TABLE t ALTER COLUMN c SET|DROP DEFAULT | SET|DROP NOT NULL | TYPE … [USING …]`
 * (src/sql/pg/alter-column.ts translates it; docs/sql.md "Changing a column"): SQLite changes
 * these only by rebuilding the table, done here in the script's transaction with the schema as
 * its earlier statements left it, so a later failure rolls it back with the rest.
 */
export interface AlterColumnSpec {
  table: string;
  column: string;
  /** SQLite's DEFAULT expression, or null to drop it. */
  default?: string | null;
  notNull?: boolean;
  /** The new declared type, its CHECKs, and the SQLite expression (over the old columns) each stored value becomes. */
  type?: { decl: string; checks: string[]; convert: string };
}

/** A failure worded as Postgres words it (src/sql/pg/violations.ts reads `pe_raise[SQLSTATE]: …`). */
const fail = (state: string, message: string): Error => new Error(`pe_raise[${state}]: ${message}`);

export function alterColumn(db: Database.Database, spec: AlterColumnSpec): void {
  const { table, column } = spec;
  const sql = createText(db, table);
  if (!sql) throw fail('42P01', `relation "${table}" does not exist`);
  const q = quoteIdent(table);
  const c = quoteIdent(column);
  const info = (db.pragma(`table_info(${q})`) as Array<{ name: string; notnull: number; pk: number }>).find((x) => x.name === column);
  if (!info) throw fail('42703', `column "${column}" of relation "${table}" does not exist`);
  // note: a column a BEFORE trigger fills is NOT NULL by triggers (relax-not-null.ts): SET NOT NULL has nothing to do there.
  const relaxed = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = ?`).get(`pe_nn_${table}_${column}_insert`) !== undefined;
  const notNull = spec.notNull === true && relaxed ? undefined : spec.notNull;
  if (spec.type && /\)\s*STRICT\s*$/i.test(sql)) {
    throw fail('0A000', `ALTER COLUMN … TYPE on "${table}", a table made by POST /db/tables, is not supported (its columns' types are the rows API's)`);
  }
  if (notNull === true && db.prepare(`SELECT 1 FROM ${q} WHERE ${c} IS NULL LIMIT 1`).get() !== undefined) {
    throw fail('23502', `column "${column}" of relation "${table}" contains null values`);
  }
  // note: nothing to rebuild when the column already is as asked.
  if (spec.type === undefined && spec.default === undefined && (notNull === undefined || (notNull ? 1 : 0) === info.notnull)) return;
  const created = editColumn(sql, column, SCRATCH, {
    ...(spec.default !== undefined ? { default: spec.default } : {}),
    ...(notNull !== undefined ? { notNull } : {}),
    ...(spec.type ? { type: { decl: spec.type.decl, checks: spec.type.checks } } : {}),
  });
  if (!created) throw fail('42703', `column "${column}" of relation "${table}" does not exist`);
  if (!safeInTransaction(db, table)) {
    // note: dropping the old table would run other tables' ON DELETE actions on their rows (foreign keys stay on in a transaction).
    throw fail('0A000', `ALTER COLUMN on "${table}" while other tables' rows reference it through ON DELETE CASCADE, SET NULL or SET DEFAULT is not supported (SQLite rebuilds the table to change a column)`);
  }
  rebuildTable(db, table, created, spec.type ? { values: { [column]: spec.type.convert } } : {});
}
