import type Database from 'better-sqlite3';

/**
 * A table rebuilt with an edited CREATE TABLE text (create-text.ts), SQLite's way to change what
 * ALTER TABLE cannot (a column's NOT NULL, default or type): the rows are kept aside in a TEMP
 * table (each column as it was, or through `values`), the old table dropped, the new one made
 * under a reserved scratch name, renamed, and filled, keeping its rows' rowids, the serial counter, its
 * indexes and triggers in their order, this connection's TEMP triggers (the change capture),
 * and the views over it (legacy renaming leaves them alone, and they name it again once it is
 * back). Runs in the caller's transaction.
 *
 * Dropping the old table deletes its rows first, with foreign keys on: safe inside a transaction
 * only when no other table's foreign key would act on them (`safeInTransaction`); else it must
 * be done alone, outside a transaction, with foreign keys off (relax-not-null.ts).
 */
export const SCRATCH = '_svc_rebuild'; // note: a reserved name, which no project table can have.

export interface RebuildOptions {
  /** Per column, the SQLite expression (over the old table's columns) its copied value is; else the value as it is. */
  values?: Record<string, string>;
  /** Statements run once the table is back, before its indexes and triggers are made again (SQLite fires newest first). */
  first?: string[];
}

export function safeInTransaction(db: Database.Database, table: string): boolean {
  const refs = db
    .prepare(`SELECT m.name AS child, f.on_delete AS action FROM sqlite_master AS m, pragma_foreign_key_list(m.name) AS f WHERE m.type = 'table' AND m.name <> ? AND f."table" = ? COLLATE NOCASE`)
    .all(table, table) as Array<{ child: string; action: string }>;
  return refs.every((r) => r.action.toUpperCase() === 'NO ACTION' || db.prepare(`SELECT 1 FROM ${quoteIdent(r.child)} LIMIT 1`).get() === undefined);
}

/** The table's CREATE text, or undefined (no such table, or WITHOUT ROWID, which keeps no rowids to carry). */
export function createText(db: Database.Database, table: string): string | undefined {
  const sql = db.prepare(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`).pluck().get(table) as string | undefined;
  if (!sql || /\bWITHOUT\s+ROWID\b/i.test(sql.slice(sql.lastIndexOf(')')))) return undefined;
  return sql;
}

/** Rebuilds `table` as `created` (the CREATE TABLE text of the scratch table, SCRATCH). */
export function rebuildTable(db: Database.Database, table: string, created: string, opts: RebuildOptions = {}): void {
  const q = quoteIdent(table);
  const others = db.prepare(`SELECT type, name, sql FROM sqlite_master WHERE tbl_name = ? AND type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY rowid`).all(table) as Array<{ type: string; name: string; sql: string }>;
  // note: this connection's TEMP triggers on the table (the change capture) go with it: made again afterwards.
  const temp = db.prepare(`SELECT sql FROM temp.sqlite_master WHERE type = 'trigger' AND tbl_name = ? AND sql IS NOT NULL ORDER BY rowid`).pluck().all(table) as string[];
  const hasSeq = db.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'`).get() !== undefined;
  const seq = hasSeq ? (db.prepare(`SELECT seq FROM sqlite_sequence WHERE name = ?`).pluck().get(table) as number | bigint | undefined) : undefined;
  const info = db.pragma(`table_info(${q})`) as Array<{ name: string; type: string; pk: number }>;
  const cols = info.map((c) => c.name);
  // note: the rowids are kept (an INTEGER PRIMARY KEY is the rowid itself, copied as the column).
  const keys = info.filter((c) => c.pk > 0);
  const alias = keys.length === 1 && keys[0]!.type.toUpperCase() === 'INTEGER';
  const names = [...(alias ? [] : ['rowid']), ...cols.map(quoteIdent)].join(', ');
  const values = [...(alias ? [] : ['rowid']), ...cols.map((c) => `${opts.values?.[c] ?? quoteIdent(c)} AS ${quoteIdent(c)}`)].join(', ');
  const kept = `temp.${quoteIdent(`${SCRATCH}_rows`)}`;
  db.pragma('defer_foreign_keys = ON');
  // note: the rows are kept aside, and go into the new table once it has the old one's name: other tables'
  // rows that the drop left without their parent find it again then (SQLite counts deferred violations).
  db.exec(`CREATE TABLE ${kept} AS SELECT ${values.replace(/^rowid\b/, 'rowid AS "pe_rowid"')} FROM ${q} ORDER BY rowid`);
  db.exec(`DROP TABLE ${q}`);
  db.exec(created);
  // note: legacy renaming leaves views over the table alone (they name it again once the rename is done).
  db.pragma('legacy_alter_table = ON');
  try {
    db.exec(`ALTER TABLE ${quoteIdent(SCRATCH)} RENAME TO ${q}`);
  } finally {
    db.pragma('legacy_alter_table = OFF');
  }
  db.exec(`INSERT INTO ${q} (${names}) SELECT ${alias ? '' : '"pe_rowid", '}${cols.map(quoteIdent).join(', ')} FROM ${kept}`);
  db.exec(`DROP TABLE ${kept}`);
  if (seq !== undefined) {
    db.prepare(`DELETE FROM sqlite_sequence WHERE name = ?`).run(table);
    db.prepare(`INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)`).run(table, seq);
  }
  // note: the NOT NULL checks by trigger first (SQLite fires newest first: relax-not-null.ts), then the indexes and triggers as they were, in their order.
  const nn = others.filter((o) => o.type === 'trigger' && o.name.startsWith('pe_nn_'));
  for (const sqlText of opts.first ?? []) db.exec(sqlText);
  for (const o of nn) db.exec(o.sql);
  for (const o of others) if (!nn.includes(o)) db.exec(o.sql);
  // note: SQLite keeps a TEMP trigger's text as `CREATE TRIGGER …` (without TEMP).
  for (const t of temp) db.exec(t.replace(/^CREATE\s+(?:TEMP\s+|TEMPORARY\s+)?TRIGGER\b/i, 'CREATE TEMP TRIGGER'));
}

export const quoteIdent = (s: string): string => `"${s.replaceAll('"', '""')}"`;
