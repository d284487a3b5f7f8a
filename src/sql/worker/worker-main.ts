import type Database from 'better-sqlite3';
import type { CallerSlot, CallerValues } from '../caller.js';
import type { AlterColumnSpec } from './alter-column.js';

/** A job for a SQL worker: one script, run in one transaction on one project file. */
export interface WorkerJob {
  id: number;
  file: string;
  /** The caller may only read: every statement must be read-only (checked again here). */
  restricted: boolean;
  /** Every statement reads only: a deferred read transaction, which never waits for writers (WAL). */
  readOnly: boolean;
  /** Change capture for writes to db-catalog tables (src/sql/pg/changes.ts). */
  capture?: {
    setups: Array<{ table: string; key: string; sql: string[] }>;
    read: string;
    clear: string;
    append: string;
  };
  /** Who writes: what a stored default's `auth.uid()` reads while the job runs (src/sql/caller.ts); none: NULL. */
  caller?: CallerValues;
  /** The script changes the schema: cached statements of this connection are dropped after it. */
  schemaChange?: boolean;
  /** The script only changes the schema (no SELECT, INSERT, UPDATE, DELETE): its ALTER COLUMN rebuilds may run with foreign keys off (alter-column.ts). */
  ddlOnly?: boolean;
  timeoutMs: number;
  /** Rows one statement may return; more is an error (never a silently shorter result). */
  maxRows: number;
  /** About how many bytes of JSON the script's results may make together; more is an error. */
  maxBytes: number;
  /** Per statement, its SQLite steps. */
  /** `rowids`: see Step.rowids (src/sql/pg/statements.ts). */
  statements: Array<Array<{ sql: string; params: unknown[]; result: boolean; rowids?: 'collect' | 'use'; relax?: { table: string; column: string }; alter?: AlterColumnSpec; into?: string }>>;
}

export interface WorkerResult {
  columns: Array<{ name: string; decl: string | null }>;
  rows: unknown[][];
  changes: number;
  reader: boolean;
}

/** A captured row change, appended to the change log (seq) inside the script's transaction. */
export interface WorkerChange {
  seq: number;
  at: string;
  op: 'insert' | 'update' | 'delete';
  table: string;
  id: string;
  data: string | null;
  old: string | null;
}

export type WorkerReply =
  | { id: number; ok: true; results: WorkerResult[]; changes?: WorkerChange[]; bytes: number }
  | { id: number; ok: true; ast: unknown }
  | { id: number; ok: false; code: string; message: string; facts?: unknown; cursor?: number; statement?: number }
  | { id: number; ok: true; closed: true };

/**
 * The body of a SQL worker thread (started by entry.ts, which hands it what it needs).
 */
export function workerMain(
  deps: {
    parentPort: { on(ev: 'message', f: (m: unknown) => void): void; postMessage(m: unknown): void };
    Database: typeof Database;
    register: (db: Database.Database, deadline: { at: number; n: number }, caller: CallerSlot) => void;
    /**
     * libpg-query's parse of long SQL (src/sql/pg/parse.ts; a script of hundreds of KB takes tens of
     * ms: it runs here, off the main thread). A syntax error rejects with `{ syntax: true, message, cursor }`.
     */
    parse: (sql: string) => Promise<unknown>;
    /** A NOT NULL column a BEFORE trigger fills takes NULL until the trigger ran (relax-not-null.ts). */
    relax?: (db: Database.Database, table: string, column: string, phase: 'before' | 'in') => void;
    /** `ALTER COLUMN … SET/DROP DEFAULT | NOT NULL | TYPE`: the table rebuilt in the transaction (alter-column.ts). */
    alter?: (db: Database.Database, spec: AlterColumnSpec) => void;
    /** Whether a DDL-only script's rebuilds need foreign keys off; then the foreign keys are checked before it commits (alter-column.ts). */
    foreignKeysOff?: (db: Database.Database, job: WorkerJob) => { check: () => void } | null;
    /** Facts about a constraint violation, gathered while its transaction is still open (violation-facts.ts). */
    violation?: (db: Database.Database, sql: string, params: unknown[], code: string) => unknown;
  },
  options: { maxConnections: number; synchronous: string; maxDbBytes?: number },
): void {
  type Conn = { db: Database.Database; stmts: Map<string, Database.Statement>; triggers: Map<string, string> };
  const conns = new Map<string, Conn>();
  const columnsOf = new WeakMap<Database.Statement, Array<{ name: string; decl: string | null }>>();
  const deadline = { at: Number.POSITIVE_INFINITY, n: 0 };
  // note: one job at a time per worker, so one caller for all of its connections (set per job, reset in finally).
  const caller: CallerSlot = { current: null };
  const open = (file: string) => {
    let c = conns.get(file);
    if (c) {
      conns.delete(file);
      conns.set(file, c);
      return c;
    }
    const db = new deps.Database(file, { fileMustExist: true });
    db.pragma('busy_timeout = 5000');
    db.pragma(`synchronous = ${options.synchronous}`);
    db.pragma('foreign_keys = ON');
    // note: sorts and temp b-trees of caller SQL spill to disk instead of growing the process's memory.
    db.pragma('temp_store = FILE');
    // note: the project's size cap holds on this connection too (max_page_count is per connection).
    const cap = options.maxDbBytes ?? 0;
    if (cap > 0) db.pragma(`max_page_count = ${Math.max(1, Math.floor(cap / (db.pragma('page_size', { simple: true }) as number)))}`);
    deps.register(db, deadline, caller);
    c = { db, stmts: new Map(), triggers: new Map() };
    conns.set(file, c);
    while (conns.size > options.maxConnections) {
      const [k, v] = conns.entries().next().value as [string, { db: Database.Database }];
      conns.delete(k);
      v.db.close();
    }
    return c;
  };
  const prepare = (c: Conn, sql: string) => {
    let s = c.stmts.get(sql);
    if (!s) {
      s = c.db.prepare(sql);
      s.safeIntegers(true);
      if (c.stmts.size >= 200) c.stmts.delete(c.stmts.keys().next().value as string);
      c.stmts.set(sql, s);
    }
    return s;
  };
  deps.parentPort.on('message', (m: unknown) => {
    const msg = m as { close?: string; job?: WorkerJob; parse?: { id: number; sql: string } };
    if (msg.parse !== undefined) {
      const id = msg.parse.id;
      deps.parse(msg.parse.sql).then(
        (ast) => deps.parentPort.postMessage({ id, ok: true, ast }),
        (err: unknown) => {
          const e = err as { syntax?: boolean; message?: unknown; cursor?: unknown } | null;
          const message = String(e?.message ?? err).split('\n')[0]!.slice(0, 300);
          deps.parentPort.postMessage({ id, ok: false, code: e?.syntax ? 'pe_syntax' : 'pe_parse', message, cursor: typeof e?.cursor === 'number' ? e.cursor : -1 });
        },
      );
      return;
    }
    if (msg.close !== undefined) {
      const c = conns.get(msg.close);
      if (c) {
        conns.delete(msg.close);
        c.db.close();
      }
      return;
    }
    const job = msg.job!;
    // note: the index of the statement that is running, so a script's error names it.
    let running = -1;
    try {
      const c = open(job.file);
      deadline.at = Date.now() + job.timeoutMs;
      deadline.n = 0;
      caller.current = job.caller ?? null;
      const results: WorkerResult[] = [];
      const changes: WorkerChange[] = [];
      // note: the JSON the results make, estimated as rows are read (strings by length, other values by a
      // fixed size, each row's column names), so a huge result ends here and never reaches the main thread.
      let bytes = 0;
      const capture = job.capture;
      let current: { sql: string; params: unknown[] } | null = null;
      const run = () => {
        if (job.schemaChange && c.triggers.size) {
          // note: SQLite refuses to drop or rename a column a trigger names, TEMP triggers included; a
          // script that changes the schema first removes this connection's capture triggers.
          for (const t of c.db.prepare(`SELECT name FROM temp.sqlite_master WHERE type = 'trigger' AND name LIKE 'pe\\_%' ESCAPE '\\'`).pluck().all() as string[]) {
            c.db.exec(`DROP TRIGGER IF EXISTS temp."${t.replaceAll('"', '""')}"`);
          }
          c.triggers.clear();
        }
        if (capture) {
          for (const t of capture.setups) {
            if (c.triggers.get(t.table) === t.key) continue;
            for (const sql of t.sql) c.db.exec(sql);
            c.triggers.set(t.table, t.key);
          }
        }
        for (const steps of job.statements) {
          running++;
          let out: WorkerResult = { columns: [], rows: [], changes: 0, reader: false };
          let rowids = '[]';
          for (const given of steps) {
            // note: a re-read of written rows (Statement.reread) gets the rowids the write returned as its last parameter.
            const step = given.rowids === 'use' ? { ...given, params: [...given.params.slice(0, -1), rowids] } : given;
            current = step;
            if (step.relax) {
              deps.relax?.(c.db, step.relax.table, step.relax.column, 'in');
              c.stmts.clear();
              continue;
            }
            if (step.alter) {
              c.stmts.clear();
              deps.alter?.(c.db, step.alter);
              continue;
            }
            let s: Database.Statement;
            try {
              s = prepare(c, step.sql);
            } catch (err) {
              // note: a schema change by an earlier statement of the script invalidates cached statements.
              c.stmts.clear();
              throw err;
            }
            if ((job.restricted || job.readOnly) && !s.readonly) throw Object.assign(new Error('only read-only statements are allowed'), { code: 'pe_read_only' });
            let r: WorkerResult;
            if (step.into !== undefined) {
              keepRows(c.db, s, step.params, step.into);
              continue;
            }
            if (s.reader) {
              const rows: unknown[][] = [];
              let cols = columnsOf.get(s);
              if (!cols) {
                cols = s.columns().map((col) => ({ name: col.name, decl: col.type }));
                columnsOf.set(s, cols);
              }
              let perRow = 2;
              for (const col of cols) perRow += col.name.length + 4;
              for (const row of s.raw(true).iterate(...step.params) as IterableIterator<unknown[]>) {
                if (rows.length === job.maxRows) {
                  throw Object.assign(new Error(`the statement returns more than ${job.maxRows} rows; add a LIMIT`), { code: 'pe_too_many_rows' });
                }
                bytes += perRow;
                for (const v of row) bytes += typeof v === 'string' ? v.length + 2 : v === null ? 4 : typeof v === 'object' ? (v as Uint8Array).length * 2 + 2 : 8;
                if (bytes > job.maxBytes) {
                  throw Object.assign(new Error(`the result is larger than ${job.maxBytes} bytes; select fewer rows or columns (LIMIT/OFFSET)`), { code: 'pe_result_too_large' });
                }
                rows.push(row);
              }
              r = { columns: cols, rows, changes: rows.length, reader: true };
            } else {
              const info = s.run(...step.params);
              r = { columns: [], rows: [], changes: Number(info.changes), reader: false };
            }
            if (step.rowids === 'collect') rowids = `[${r.rows.map((row) => String(row[0])).join(',')}]`;
            if (step.result) out = r;
          }
          results.push(out);
        }
        if (capture) {
          const at = new Date().toISOString();
          const rows = prepare(c, capture.read).raw(false).all() as Array<{ op: WorkerChange['op']; tbl: string; row_id: string; data: string | null; old: string | null; new_row: string | null; old_row: string | null }>;
          const append = prepare(c, capture.append);
          for (const r of rows) {
            const info = append.run(at, r.op, r.tbl, r.row_id, r.data, r.old, r.new_row, r.old_row);
            changes.push({ seq: Number(info.lastInsertRowid), at, op: r.op, table: r.tbl, id: String(r.row_id), data: r.data, old: r.old });
          }
          if (rows.length) prepare(c, capture.clear).run();
        }
      };
      if (job.readOnly && job.statements.length === 1 && job.statements[0]!.length === 1) run();
      else if (job.readOnly) {
        // note: a read transaction gives every statement of the script one snapshot.
        c.db.exec('BEGIN');
        try {
          run();
        } finally {
          c.db.exec('ROLLBACK');
        }
      } else {
        // note: a NOT NULL column of a table other tables' foreign keys act on is relaxed before the transaction (relax-not-null.ts).
        for (const steps of job.statements) for (const step of steps) if (step.relax) deps.relax?.(c.db, step.relax.table, step.relax.column, 'before');
        const fkOff = job.ddlOnly ? (deps.foreignKeysOff?.(c.db, job) ?? null) : null;
        try {
          c.db.transaction(() => {
            try {
              run();
              fkOff?.check();
            } catch (err) {
              const code = (err as { code?: unknown }).code;
              if (deps.violation && current && typeof code === 'string' && code.startsWith('SQLITE_CONSTRAINT_')) {
                try {
                  (err as { facts?: unknown }).facts = deps.violation(c.db, current.sql, current.params, code);
                } catch {
                  // note: the facts only improve the message; the error itself is the answer.
                }
              }
              throw err;
            }
          }).immediate();
        } finally {
          if (fkOff) c.db.pragma('foreign_keys = ON');
        }
      }
      if (job.schemaChange) {
        c.stmts.clear();
        // note: a dropped or altered table loses its TEMP triggers; they are made again on next use.
        c.triggers.clear();
      }
      deps.parentPort.postMessage({ id: job.id, ok: true, results, changes, bytes });
    } catch (err) {
      // note: a rolled-back transaction also undid any TEMP trigger it created.
      if (job.capture) conns.get(job.file)?.triggers.clear();
      const e = err as { code?: unknown; message?: unknown };
      const message = String(e.message ?? err);
      const code = message.includes('pe_statement_timeout') ? 'pe_statement_timeout' : typeof e.code === 'string' ? e.code : 'pe_error';
      deps.parentPort.postMessage({ id: job.id, ok: false, code, message, facts: (e as { facts?: unknown }).facts, ...(job.statements.length > 1 && running >= 0 ? { statement: running } : {}) });
    } finally {
      deadline.at = Number.POSITIVE_INFINITY;
      caller.current = null;
      if (conns.size && job.file) {
        const c = conns.get(job.file);
        if (c && c.db.inTransaction) {
          try {
            c.db.exec('ROLLBACK');
          } catch {
            // note: already rolled back by SQLite.
          }
        }
      }
    }
  });
}

/**
 * A data-modifying WITH item's step (src/sql/pg/dml-cte.ts): its RETURNING rows go into a TEMP
 * table `into` (columns c1…cn) of this connection, inside the script's transaction, which the
 * statement's later steps read and its last step drops.
 */
function keepRows(db: Database.Database, s: Database.Statement, params: unknown[], into: string): void {
  if (!/^pe_cte_[a-z0-9_]+$/.test(into)) throw new Error('bad TEMP table name');
  const rows = s.raw(true).all(...params) as unknown[][];
  const width = s.columns().length;
  const cols = Array.from({ length: width }, (_, i) => `c${i + 1}`);
  db.exec(`CREATE TEMP TABLE "${into}" (${cols.join(', ')})`);
  const ins = db.prepare(`INSERT INTO temp."${into}" VALUES (${cols.map(() => '?').join(', ')})`);
  for (const row of rows) ins.run(...row);
}
