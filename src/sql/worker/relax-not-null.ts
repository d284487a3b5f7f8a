import type Database from 'better-sqlite3';
import { withoutNotNull } from './create-text.js';
import { SCRATCH, createText, quoteIdent, rebuildTable, safeInTransaction } from './rebuild.js';

export { withoutNotNull };

/**
 * A NOT NULL column that a BEFORE trigger fills (docs/sql.md "Functions and triggers"). SQLite
 * checks NOT NULL on the row as the statement writes it, before the AFTER trigger that applies
 * the BEFORE trigger's assignments (plpgsql.ts): an insert leaving the column to the trigger
 * would fail where Postgres accepts it. So the column accepts NULL in SQLite — the table is
 * rebuilt without its NOT NULL, in the script's transaction — and two AFTER triggers
 * (`pe_nn_<t>_<c>_insert|update`) check the row as stored once the assignments are applied,
 * failing with Postgres' 23502. They are made before the table's other triggers, and SQLite
 * fires a table's triggers newest first, so they run after every `…_set` trigger.
 *
 * Runs in the SQL worker, with the schema as the script's earlier statements left it. Nothing
 * happens (the column keeps SQLite's NOT NULL, as before) when the column is nullable or already
 * relaxed, is a key, or when another table's foreign key references the table: with foreign
 * keys on (they cannot be turned off inside a transaction) dropping the old table would run
 * their ON DELETE actions.
 */
export function relaxNotNull(db: Database.Database, table: string, column: string, phase: 'before' | 'in'): void {
  const q = quoteIdent(table);
  const col = (db.pragma(`table_info(${q})`) as Array<{ name: string; notnull: number; pk: number }>).find((c) => c.name === column);
  if (!col || col.notnull === 0 || col.pk > 0 || table.startsWith('_svc')) return;
  const sql = createText(db, table);
  if (!sql) return;
  // note: dropping the old table deletes its rows first, with foreign keys on: safe inside the script's transaction
  // only when no other table's foreign key would act on it (ON DELETE CASCADE / SET NULL / SET DEFAULT / RESTRICT
  // with rows); else it is done before the transaction, alone, with foreign keys off.
  const inTransaction = safeInTransaction(db, table);
  if (phase === 'in' ? !inTransaction : inTransaction) return;
  if (phase === 'before') {
    db.pragma('foreign_keys = OFF');
    try {
      db.transaction(() => rebuild(db, table, column, sql)).immediate();
    } finally {
      db.pragma('foreign_keys = ON');
    }
    return;
  }
  rebuild(db, table, column, sql);
}

function rebuild(db: Database.Database, table: string, column: string, sql: string): void {
  const created = withoutNotNull(sql, column, SCRATCH);
  if (!created) return;
  // note: the enforcement first (SQLite fires newest first), then the indexes and triggers as they were.
  rebuildTable(db, table, created, { first: enforcement(table, column) });
}

/** The AFTER triggers that enforce a relaxed column's NOT NULL, with Postgres' 23502 (violations.ts reads `pe_raise[23502]`). */
export function enforcement(table: string, column: string): string[] {
  const q = quoteIdent(table);
  const msg = `pe_raise[23502]: null value in column "${column}" of relation "${table}" violates not-null constraint`;
  const body = `BEGIN SELECT RAISE(ABORT, ${quoteLiteral(msg)}) WHERE (SELECT ${quoteIdent(column)} FROM ${q} WHERE rowid = NEW.rowid) IS NULL; END`;
  return [
    `CREATE TRIGGER ${quoteIdent(`pe_nn_${table}_${column}_insert`)} AFTER INSERT ON ${q} FOR EACH ROW ${body}`,
    `CREATE TRIGGER ${quoteIdent(`pe_nn_${table}_${column}_update`)} AFTER UPDATE OF ${quoteIdent(column)} ON ${q} FOR EACH ROW ${body}`,
  ];
}

const quoteLiteral = (s: string): string => `'${s.replaceAll("'", "''")}'`;
