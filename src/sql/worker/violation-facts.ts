import type Database from 'better-sqlite3';

/**
 * What the worker learns about a constraint violation when it happens (docs/sql.md
 * "Errors"): SQLite names a NOT NULL or UNIQUE column but no key value, a CHECK by its text
 * and a foreign key not at all. So the failing step is run again inside a savepoint with
 * TEMP triggers on every project table that hand each row the statement writes (NEW, and
 * OLD for updates and deletes) to a JavaScript function — outside the database, so the
 * statement's own rollback does not erase them — and then everything is rolled back. The
 * rows, the tables' columns and DDL, and the failing foreign key are the facts; the main
 * thread words them as Postgres would (src/sql/pg/violations.ts).
 */
export interface ViolationRow {
  table: string;
  op: 'insert' | 'update' | 'old' | 'delete';
  /** Each column's value: numbers, int8 as decimal text, bytea as `\x…` text, null. */
  values: Array<string | number | null>;
}

export interface ViolationTable {
  name: string;
  columns: Array<{ name: string; decl: string; pk: number }>;
  /** The CREATE TABLE text (for CHECK constraints and their names). */
  sql: string;
  /** Unique indexes: name, origin (`pk`, `u` for a UNIQUE constraint, `c` for CREATE UNIQUE INDEX), columns. */
  unique: Array<{ name: string; origin: string; columns: string[] }>;
  /** Foreign keys: columns, parent table and columns (empty: its primary key), actions. */
  fks: Array<{ from: string[]; parent: string; to: string[]; onDelete: string; onUpdate: string }>;
}

export interface ViolationFacts {
  /** Rows the statement wrote, in order, up to and including the failing one. */
  rows: ViolationRow[];
  tables: ViolationTable[];
  /** AUTOINCREMENT tables' last assigned key (sqlite_sequence), so an unassigned key (-1) shows as the value it would get. */
  sequences?: Record<string, string>;
  /** A foreign key: the child row's table and key (insert side), or the parent's row still referenced (delete side). */
  fk?: { side: 'insert' | 'delete'; child: string; parent: string; from: string[]; to: string[]; values: Array<string | number | null> };
}

export function violationFacts(db: Database.Database, sql: string, params: unknown[], code: string): ViolationFacts | null {
  // note: only the violations src/sql/pg/violations.ts words (a trigger's RAISE is its own message).
  if (!['SQLITE_CONSTRAINT_NOTNULL', 'SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_PRIMARYKEY', 'SQLITE_CONSTRAINT_FOREIGNKEY', 'SQLITE_CONSTRAINT_CHECK', 'SQLITE_CONSTRAINT_DATATYPE'].includes(code)) return null;
  const q = (n: string): string => `"${n.replaceAll('"', '""')}"`;
  const lit = (s: string): string => `'${s.replaceAll("'", "''")}'`;
  const sink: ViolationRow[] = [];
  const shown = (v: unknown): string | number | null =>
    v === null || v === undefined ? null : typeof v === 'bigint' ? v.toString() : typeof v === 'number' || typeof v === 'string' ? v : `\\x${Buffer.from(v as Uint8Array).toString('hex')}`;
  const holder = db as unknown as { peViolationSink?: ViolationRow[] | null };
  if (!('peViolationSink' in holder)) {
    holder.peViolationSink = null;
    db.function('pe_violation_row', { varargs: true, deterministic: false, safeIntegers: true }, (table: unknown, op: unknown, ...values: unknown[]) => {
      const rows = holder.peViolationSink;
      // note: a statement with very many rows keeps the first 1000 and the last (the failing one).
      if (rows) {
        if (rows.length >= 1000) rows.splice(999, 1);
        rows.push({ table: String(table), op: op as ViolationRow['op'], values: values.map(shown) });
      }
      return 1;
    });
  }
  const names = (db.prepare(`SELECT name, sql FROM main.sqlite_schema WHERE type = 'table' AND name NOT LIKE '\\_svc%' ESCAPE '\\' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' LIMIT 500`).all() as Array<{ name: string; sql: string }>);
  const tables: ViolationTable[] = names.map(({ name, sql: ddl }) => {
    const columns = (db.prepare(`SELECT name, type AS decl, pk FROM pragma_table_info(?)`).all(name) as ViolationTable['columns']);
    const unique: ViolationTable['unique'] = [];
    for (const ix of db.prepare(`SELECT name, "unique" AS u, origin FROM pragma_index_list(?)`).all(name) as Array<{ name: string; u: number; origin: string }>) {
      if (!ix.u) continue;
      const cols = (db.prepare(`SELECT name FROM pragma_index_info(?) ORDER BY seqno`).pluck().all(ix.name) as Array<string | null>).map((c) => c ?? '');
      unique.push({ name: ix.name, origin: ix.origin, columns: cols });
    }
    const byId = new Map<number, ViolationTable['fks'][number]>();
    for (const fk of db.prepare(`SELECT id, seq, "table" AS parent, "from" AS f, "to" AS t, on_update AS u, on_delete AS d FROM pragma_foreign_key_list(?) ORDER BY id, seq`).all(name) as Array<{ id: number; parent: string; f: string; t: string | null; u: string; d: string }>) {
      let k = byId.get(fk.id);
      if (!k) {
        k = { from: [], parent: fk.parent, to: [], onDelete: fk.d, onUpdate: fk.u };
        byId.set(fk.id, k);
      }
      k.from.push(fk.f);
      if (fk.t !== null) k.to.push(fk.t);
    }
    return { name, columns, sql: ddl, unique, fks: [...byId.values()].reverse() };
  });
  const facts: ViolationFacts = { rows: sink, tables };
  if (names.length < 500 && db.prepare(`SELECT 1 FROM main.sqlite_schema WHERE name = 'sqlite_sequence'`).get() !== undefined) {
    facts.sequences = {};
    for (const r of db.prepare('SELECT name, seq FROM main.sqlite_sequence').all() as Array<{ name: string; seq: number | bigint }>) facts.sequences[r.name] = String(r.seq);
  }
  db.exec('SAVEPOINT pe_violation');
  try {
    tables.forEach((t, i) => {
      const vals = (rec: string) => t.columns.map((c) => `${rec}.${q(c.name)}`).join(', ');
      const on = `ON main.${q(t.name)} BEGIN SELECT pe_violation_row(${lit(t.name)}`;
      db.exec(`CREATE TEMP TRIGGER pe_violation_${i}_i BEFORE INSERT ${on}, 'insert', ${vals('NEW')}); END`);
      db.exec(`CREATE TEMP TRIGGER pe_violation_${i}_u BEFORE UPDATE ${on}, 'old', ${vals('OLD')}); SELECT pe_violation_row(${lit(t.name)}, 'update', ${vals('NEW')}); END`);
      db.exec(`CREATE TEMP TRIGGER pe_violation_${i}_d BEFORE DELETE ${on}, 'delete', ${vals('OLD')}); END`);
    });
    holder.peViolationSink = sink;
    let again: string | null = null;
    try {
      const st = db.prepare(sql);
      st.safeIntegers(true);
      if (st.reader) st.all(...params);
      else st.run(...params);
    } catch (err) {
      again = String((err as { code?: unknown }).code ?? '');
    } finally {
      holder.peViolationSink = null;
    }
    // note: a run that does not fail the same way (a volatile function) teaches nothing.
    if (again !== code) return null;
    if (code === 'SQLITE_CONSTRAINT_FOREIGNKEY') facts.fk = failingKey(db, facts, q) ?? undefined;
    return facts;
  } finally {
    db.exec('ROLLBACK TO pe_violation');
    db.exec('RELEASE pe_violation');
  }

  /** The first written row whose key names no parent row, else the first deleted (or re-keyed) parent row still referenced. */
  function failingKey(db: Database.Database, facts: ViolationFacts, q: (n: string) => string): ViolationFacts['fk'] | null {
    const byName = new Map(facts.tables.map((t) => [t.name, t]));
    const pkOf = (t: ViolationTable) => t.columns.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name);
    const valueOf = (t: ViolationTable, row: ViolationRow, col: string) => row.values[t.columns.findIndex((c) => c.name === col)] ?? null;
    const exists = (table: string, cols: string[], values: unknown[]) => {
      const where = cols.map((c) => `${q(c)} IS ?`).join(' AND ');
      return db.prepare(`SELECT 1 FROM main.${q(table)} WHERE ${where} LIMIT 1`).get(...values) !== undefined;
    };
    for (const row of facts.rows) {
      if (row.op !== 'insert' && row.op !== 'update') continue;
      const t = byName.get(row.table);
      if (!t) continue;
      for (const fk of t.fks) {
        const values = fk.from.map((c) => valueOf(t, row, c));
        if (values.some((v) => v === null)) continue;
        const parent = byName.get(fk.parent);
        const to = fk.to.length ? fk.to : parent ? pkOf(parent) : [];
        if (!parent || to.length !== values.length) continue;
        // note: the parent row may be one the statement wrote before this row (a self-reference).
        const written = facts.rows.some((r) => r !== row && r.table === fk.parent && (r.op === 'insert' || r.op === 'update') && to.every((c, i) => String(valueOf(parent, r, c)) === String(values[i])));
        if (!written && !exists(fk.parent, to, values)) return { side: 'insert', child: t.name, parent: fk.parent, from: fk.from, to, values };
      }
    }
    for (const row of facts.rows) {
      if (row.op !== 'delete' && row.op !== 'old') continue;
      const parent = byName.get(row.table);
      if (!parent) continue;
      for (const child of facts.tables) {
        for (const fk of child.fks) {
          if (fk.parent !== parent.name) continue;
          const action = row.op === 'delete' ? fk.onDelete : fk.onUpdate;
          if (action !== 'NO ACTION' && action !== 'RESTRICT') continue;
          const to = fk.to.length ? fk.to : pkOf(parent);
          const values = to.map((c) => valueOf(parent, row, c));
          if (values.some((v) => v === null)) continue;
          if (row.op === 'old') {
            // note: an update that keeps the key leaves its children referencing it.
            const next = facts.rows[facts.rows.indexOf(row) + 1];
            if (next && to.every((c) => String(valueOf(parent, next, c)) === String(valueOf(parent, row, c)))) continue;
          }
          if (exists(child.name, fk.from, values)) return { side: 'delete', child: child.name, parent: parent.name, from: fk.from, to, values };
        }
      }
    }
    return null;
  }
}
