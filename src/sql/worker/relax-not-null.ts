import type Database from 'better-sqlite3';

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
  const sql = db.prepare(`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`).pluck().get(table) as string | undefined;
  if (!sql || /\bWITHOUT\s+ROWID\b/i.test(sql.slice(sql.lastIndexOf(')')))) return;
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

function safeInTransaction(db: Database.Database, table: string): boolean {
  const refs = db
    .prepare(`SELECT m.name AS child, f.on_delete AS action FROM sqlite_master AS m, pragma_foreign_key_list(m.name) AS f WHERE m.type = 'table' AND m.name <> ? AND f."table" = ? COLLATE NOCASE`)
    .all(table, table) as Array<{ child: string; action: string }>;
  return refs.every((r) => r.action.toUpperCase() === 'NO ACTION' || db.prepare(`SELECT 1 FROM ${quoteIdent(r.child)} LIMIT 1`).get() === undefined);
}

function rebuild(db: Database.Database, table: string, column: string, sql: string): void {
  const q = quoteIdent(table);
  const scratch = '_svc_rebuild'; // note: a reserved name, which no project table can have.
  const created = withoutNotNull(sql, column, scratch);
  if (!created) return;
  const others = db.prepare(`SELECT type, name, sql FROM sqlite_master WHERE tbl_name = ? AND type IN ('index', 'trigger') AND sql IS NOT NULL ORDER BY rowid`).all(table) as Array<{ type: string; name: string; sql: string }>;
  // note: this connection's TEMP triggers on the table (the change capture) go with it: made again afterwards.
  const temp = db.prepare(`SELECT sql FROM temp.sqlite_master WHERE type = 'trigger' AND tbl_name = ? AND sql IS NOT NULL ORDER BY rowid`).pluck().all(table) as string[];
  const hasSeq = db.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'`).get() !== undefined;
  const seq = hasSeq ? (db.prepare(`SELECT seq FROM sqlite_sequence WHERE name = ?`).pluck().get(table) as number | bigint | undefined) : undefined;
  const names = (db.pragma(`table_info(${q})`) as Array<{ name: string }>).map((c) => quoteIdent(c.name)).join(', ');
  db.pragma('defer_foreign_keys = ON');
  db.exec(created);
  db.exec(`INSERT INTO ${quoteIdent(scratch)} (${names}) SELECT ${names} FROM ${q}`);
  db.exec(`DROP TABLE ${q}`);
  // note: legacy renaming leaves views over the table alone (they name it again once the rename is done).
  db.pragma('legacy_alter_table = ON');
  try {
    db.exec(`ALTER TABLE ${quoteIdent(scratch)} RENAME TO ${q}`);
  } finally {
    db.pragma('legacy_alter_table = OFF');
  }
  if (seq !== undefined) {
    db.prepare(`DELETE FROM sqlite_sequence WHERE name = ?`).run(table);
    db.prepare(`INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)`).run(table, seq);
  }
  // note: the enforcement first (SQLite fires newest first), then the indexes and triggers as they were, in their order.
  const nn = others.filter((o) => o.type === 'trigger' && o.name.startsWith('pe_nn_'));
  for (const sqlText of enforcement(table, column)) db.exec(sqlText);
  for (const o of nn) db.exec(o.sql);
  for (const o of others) if (!nn.includes(o)) db.exec(o.sql);
  // note: SQLite keeps a TEMP trigger's text as `CREATE TRIGGER …` (without TEMP).
  for (const t of temp) db.exec(t.replace(/^CREATE\s+(?:TEMP\s+|TEMPORARY\s+)?TRIGGER\b/i, 'CREATE TEMP TRIGGER'));
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

const quoteIdent = (s: string): string => `"${s.replaceAll('"', '""')}"`;
const quoteLiteral = (s: string): string => `'${s.replaceAll("'", "''")}'`;

/**
 * The table's CREATE text under another name with the column's NOT NULL left out (null when
 * it is not found). A small scanner of SQLite's text: quoted names and strings, comments, and
 * the parentheses' depth, so only the column's own definition is edited.
 */
export function withoutNotNull(sql: string, column: string, name: string): string | null {
  const toks: Array<{ text: string; start: number; end: number; depth: number }> = [];
  let depth = 0;
  for (let i = 0; i < sql.length; ) {
    const ch = sql[i]!;
    if (/\s/.test(ch)) {
      i++;
      continue;
    }
    if (ch === '-' && sql[i + 1] === '-') {
      const e = sql.indexOf('\n', i);
      i = e < 0 ? sql.length : e;
      continue;
    }
    if (ch === '/' && sql[i + 1] === '*') {
      const e = sql.indexOf('*/', i + 2);
      i = e < 0 ? sql.length : e + 2;
      continue;
    }
    let end = i + 1;
    if (ch === '"' || ch === "'" || ch === '`' || ch === '[') {
      const close = ch === '[' ? ']' : ch;
      for (;;) {
        const e = sql.indexOf(close, end);
        if (e < 0) return null;
        end = e + 1;
        if (close !== ']' && sql[end] === close) end++;
        else break;
      }
    } else if (/[\w$]/.test(ch)) {
      while (end < sql.length && /[\w$]/.test(sql[end]!)) end++;
    }
    if (ch === ')') depth--;
    toks.push({ text: sql.slice(i, end), start: i, end, depth });
    if (ch === '(') depth++;
    i = end;
  }
  const ident = (t: string): string => (/^["`[]/.test(t) ? t.slice(1, -1).replace(/""/g, '"') : t).toLowerCase();
  // note: CREATE TABLE <name> (: the name is the token before the first parenthesis.
  const open = toks.findIndex((t) => t.text === '(');
  if (open < 1) return null;
  let at = -1;
  for (let i = open + 1; i < toks.length; i++) {
    const prev = toks[i - 1]!;
    if (toks[i]!.depth === 1 && (prev.text === '(' || prev.text === ',') && prev.depth === (prev.text === '(' ? 0 : 1) && ident(toks[i]!.text) === column.toLowerCase()) {
      at = i;
      break;
    }
  }
  if (at < 0) return null;
  let cut: { start: number; end: number } | null = null;
  for (let i = at + 1; i < toks.length && !(toks[i]!.depth === 1 && toks[i]!.text === ',') && toks[i]!.depth >= 1; i++) {
    if (toks[i]!.depth === 1 && toks[i]!.text.toUpperCase() === 'NOT' && toks[i + 1]?.text.toUpperCase() === 'NULL') {
      cut = { start: toks[i]!.start, end: toks[i + 1]!.end };
      break;
    }
  }
  if (!cut) return null;
  const nameTok = toks[open - 1]!;
  return `${sql.slice(0, nameTok.start)}${quoteIdent(name)}${sql.slice(nameTok.end, cut.start)}${sql.slice(cut.end)}`;
}
