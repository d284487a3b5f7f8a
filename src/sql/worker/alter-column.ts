import type Database from 'better-sqlite3';
import type { WorkerJob } from './worker-main.js';
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
  if (!sql) {
    const exists = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(table) !== undefined;
    throw exists ? fail('0A000', `ALTER COLUMN on "${table}" is not supported (a WITHOUT ROWID table)`) : fail('42P01', `relation "${table}" does not exist`);
  }
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
  if (spec.type) {
    const policy = policyUsing(db, table, column);
    if (policy) throw fail('0A000', `cannot alter type of a column used in a policy definition (policy ${policy} on table ${table} depends on column "${column}")`);
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
  if (db.pragma('foreign_keys', { simple: true }) !== 0 && !safeInTransaction(db, table)) {
    // note: dropping the old table would run other tables' ON DELETE actions on their rows (foreign keys stay on in a transaction).
    throw fail('0A000', `ALTER COLUMN on "${table}" while other tables' rows reference it through ON DELETE CASCADE, SET NULL or SET DEFAULT is not supported in a script that also reads or writes rows (SQLite rebuilds the table to change a column): run the ALTER in a script of schema changes only`);
  }
  rebuildTable(db, table, created, spec.type ? { values: { [column]: spec.type.convert } } : {});
}

/**
 * The name of an RLS policy whose expressions name the column — on the table itself, or on
 * another table when they name the table too (a subquery) — as Postgres refuses a type change
 * under it (policies are compiled against the column's type); or null.
 */
function policyUsing(db: Database.Database, table: string, column: string): string | null {
  const word = (w: string) => new RegExp(`(^|[^\\w$])"?${w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"?($|[^\\w$])`, 'i');
  const col = word(column);
  const tbl = word(table);
  const rows = db.prepare(`SELECT tbl, policies, named FROM "_svc_meta.rls"`).all() as Array<{ tbl: string; policies: string | null; named: string | null }>;
  for (const r of rows) {
    const texts: Array<[string, string]> = [];
    try {
      for (const [op, text] of Object.entries((JSON.parse(r.policies ?? '{}') ?? {}) as Record<string, unknown>)) if (typeof text === 'string') texts.push([op, text]);
      const named = (JSON.parse(r.named ?? '[]') ?? []) as unknown;
      for (const p of (Array.isArray(named) ? named : Object.values(named as object)) as Array<{ name?: string; using?: string | null; check?: string | null }>) {
        for (const text of [p.using, p.check]) if (typeof text === 'string') texts.push([p.name ?? '', text]);
      }
    } catch {
      continue;
    }
    for (const [name, text] of texts) if (col.test(text) && (r.tbl === table || tbl.test(text))) return `"${name}"`;
  }
  return null;
}

/**
 * A script of schema changes only whose ALTER COLUMN rebuilds a table other tables' rows
 * reference through ON DELETE actions (dropping the old table would run them): it runs with
 * foreign keys off (they cannot be switched inside a transaction), and `check` — before it
 * commits — finds any row the script left without the row it references, as SQLite's
 * 12-step ALTER TABLE does. Null when no such rebuild is in the script.
 */
export function foreignKeysOff(db: Database.Database, job: WorkerJob): { check: () => void } | null {
  const tables = new Set<string>();
  for (const steps of job.statements) for (const step of steps) if (step.alter) tables.add(step.alter.table);
  const unsafe = [...tables].some((t) => createText(db, t) !== undefined && !safeInTransaction(db, t));
  if (!unsafe) return null;
  db.pragma('foreign_keys = OFF');
  return {
    check: () => {
      const bad = db.pragma('foreign_key_check') as Array<{ table: string; parent: string }>;
      if (bad.length) throw fail('23503', `rows of "${bad[0]!.table}" would be left without the row they reference in "${bad[0]!.parent}"`);
    },
  };
}
