import { EdgeError } from '../../core/errors.js';
import type { ViolationFacts, ViolationRow, ViolationTable } from '../worker/violation-facts.js';
import { typeOfDecl, type PgType, type SchemaLookup } from './types.js';

/**
 * Constraint violations and bad values worded as PostgreSQL words them (docs/sql.md
 * "Errors"): the message, the SQLSTATE and the fields Postgres sets (`table`, `column`,
 * `constraint`, `detail`). SQLite says only "UNIQUE constraint failed: t.x", "CHECK
 * constraint failed: <text>" or "FOREIGN KEY constraint failed"; the constraint is found in
 * the table's definition and the key or row in the facts the worker gathered when the
 * statement failed (src/sql/worker/violation-facts.ts). Constraint names are Postgres'
 * own: the declared name, else `t_pkey`, `t_col_key`, `t_a_b_key`, `t_col_fkey`,
 * `t_col_check` (one column named) or `t_check`, numbered from 1 when taken.
 */
export interface PgError {
  sqlstate: string;
  message: string;
  table?: string;
  column?: string;
  constraint?: string;
  detail?: string;
}

/** One constraint of a table as its CREATE TABLE text declares it. */
interface Declared {
  kind: 'check' | 'unique' | 'pkey' | 'fkey';
  /** The declared name (CONSTRAINT name), else null. */
  name: string | null;
  columns: string[];
  /** A CHECK's expression text, as SQLite reports it. */
  text?: string;
  /** The column whose definition holds it (a column constraint). */
  column?: string;
}

/** The SQLSTATE of a message our SQL functions raise for a bad value (`pe_invalid_input: …`), or null. */
export function valueErrorState(message: string): string | null {
  if (/^invalid input syntax for type (date|time|timestamp|timestamp with time zone|timestamp without time zone|interval)\b/.test(message)) return '22007';
  if (/^date\/time field value out of range/.test(message)) return '22008';
  if (/^(invalid input syntax for type |invalid input value for enum |malformed array literal)/.test(message)) return '22P02';
  if (/out of range|^numeric field overflow|^percentile value .* is not between 0 and 1/.test(message)) return '22003';
  if (/^division by zero/.test(message)) return '22012';
  if (/^value too long for type /.test(message)) return '22001';
  if (/^unit ".*" not recognized|^cannot get array length/.test(message)) return '22023';
  if (/^cannot drop type .* because other objects depend on it/.test(message)) return '2BP01';
  if (/^cannot insert a non-DEFAULT value into column|can only be updated to DEFAULT$/.test(message)) return '428C9';
  if (/^field name must not be null|^too few arguments for format|^unterminated format|^unrecognized format/.test(message)) return '22023';
  if (/^null character not permitted/.test(message)) return '54000';
  if (/^step size cannot equal zero|^cannot extract elements from|^cannot call jsonb_\w+ on|^cannot deconstruct/.test(message)) return '22023';
  if (/^invalid regular expression/.test(message)) return '2201B';
  if (/^stride must be greater than zero/.test(message)) return '22023';
  if (/^timestamps cannot be binned/.test(message)) return '0A000';
  if (/^count must be greater than zero|^lower bound cannot equal upper bound/.test(message)) return '2201G';
  if (/^LIMIT must not be negative/.test(message)) return '2201W';
  if (/^OFFSET must not be negative/.test(message)) return '2201X';
  if (/^more than one row returned by a subquery|^ON CONFLICT DO UPDATE command cannot affect row a second time/.test(message)) return '21000';
  if (/^there is no unique or exclusion constraint matching the ON CONFLICT/.test(message)) return '42P10';
  if (/^missing FROM-clause entry for table/.test(message)) return '42P01';
  if (/^(function|operator) .* does not exist/.test(message)) return '42883';
  return null;
}

/** A constraint violation (`SQLITE_CONSTRAINT_*` and SQLite's message) worded as Postgres does, or null when it is not one. */
export function constraintError(code: string, message: string, facts: ViolationFacts | null | undefined, lookup?: SchemaLookup): PgError | null {
  const f = facts ?? null;
  const typesOf = (t: ViolationTable): Array<PgType | null> => {
    const known = lookup?.(t.name) ?? null;
    return t.columns.map((c) => {
      const declared = typeOfDecl(c.decl);
      const fromLookup = known?.find((k) => k.name === c.name)?.type ?? null;
      return /^(TEXT|INTEGER|REAL|BLOB|)$/i.test(c.decl) ? (fromLookup ?? declared) : (declared ?? fromLookup);
    });
  };
  const table = (name: string) => f?.tables.find((t) => t.name === name) ?? null;
  const lastRow = (name: string | null): ViolationRow | null => {
    const rows = f?.rows ?? [];
    for (let i = rows.length - 1; i >= 0; i--) {
      const r = rows[i]!;
      if ((r.op === 'insert' || r.op === 'update') && (name === null || r.table === name)) return r;
    }
    return null;
  };
  const failingRow = (t: ViolationTable, row: ViolationRow | null): string | undefined => {
    if (!row) return undefined;
    const types = typesOf(t);
    return `Failing row contains (${row.values.map((v, i) => pgText(fillSerial(t, row, i, v, f), types[i] ?? null)).join(', ')}).`;
  };
  // note: a known table whose name is a prefix wins (names may hold dots); else the first dot splits.
  const colsOf = (m: string) => m.split(', ').map((p) => {
    const known = f?.tables.find((t) => p.startsWith(`${t.name}.`));
    const dot = known ? known.name.length : p.indexOf('.');
    return { table: p.slice(0, dot), column: p.slice(dot + 1) };
  });
  // note: the platform's own tables (`_svc_*`, docs/sql.md "Reserved tables") are never named in an answer.
  if (/ _svc|: _svc|^_svc/.test(message)) return null;

  switch (code) {
    case 'SQLITE_CONSTRAINT_NOTNULL': {
      const m = /^NOT NULL constraint failed: (.+)$/s.exec(message);
      if (!m) return null;
      const [{ table: tn, column }] = colsOf(m[1]!) as [{ table: string; column: string }];
      const t = table(tn);
      return {
        sqlstate: '23502',
        message: `null value in column "${column}" of relation "${tn}" violates not-null constraint`,
        table: tn,
        column,
        ...(t ? { detail: failingRow(t, lastRow(tn)) } : {}),
      };
    }
    case 'SQLITE_CONSTRAINT_UNIQUE':
    case 'SQLITE_CONSTRAINT_PRIMARYKEY': {
      // note: a unique index on expressions (a document table's JSON path) is named, not its columns.
      const byIndex = /^UNIQUE constraint failed: index '(.+)'$/s.exec(message);
      if (byIndex) return { sqlstate: '23505', message: `duplicate key value violates unique constraint "${byIndex[1]}"`, constraint: byIndex[1]! };
      const m = /^UNIQUE constraint failed: (.+)$/s.exec(message);
      if (!m) return null;
      const parts = colsOf(m[1]!);
      const tn = parts[0]!.table;
      const cols = parts.map((p) => p.column);
      const t = table(tn);
      const constraint = t ? uniqueName(t, cols, code === 'SQLITE_CONSTRAINT_PRIMARYKEY') : code === 'SQLITE_CONSTRAINT_PRIMARYKEY' ? `${tn}_pkey` : `${tn}_${cols.join('_')}_key`;
      const row = t ? lastRow(tn) : null;
      let detail: string | undefined;
      if (t && row) {
        const types = typesOf(t);
        const vals = cols.map((c) => {
          const i = t.columns.findIndex((x) => x.name === c);
          return i < 0 ? 'null' : pgText(fillSerial(t, row, i, row.values[i] ?? null, f), types[i] ?? null);
        });
        detail = `Key (${cols.join(', ')})=(${vals.join(', ')}) already exists.`;
      }
      return { sqlstate: '23505', message: `duplicate key value violates unique constraint "${constraint}"`, table: tn, constraint, ...(detail ? { detail } : {}) };
    }
    case 'SQLITE_CONSTRAINT_FOREIGNKEY': {
      const k = f?.fk;
      if (!k) return { sqlstate: '23503', message: 'insert, update or delete violates a foreign key constraint' };
      const child = table(k.child)!;
      const parent = table(k.parent);
      const constraint = fkName(child, k.from, k.parent);
      const shown = (cols: string[], t: ViolationTable | null) => {
        const types = t ? typesOf(t) : [];
        return k.values.map((v, i) => pgText(v, t ? (types[t.columns.findIndex((c) => c.name === cols[i])] ?? null) : null)).join(', ');
      };
      if (k.side === 'insert') {
        return {
          sqlstate: '23503',
          message: `insert or update on table "${k.child}" violates foreign key constraint "${constraint}"`,
          table: k.child,
          constraint,
          detail: `Key (${k.from.join(', ')})=(${shown(k.from, child)}) is not present in table "${k.parent}".`,
        };
      }
      return {
        sqlstate: '23503',
        message: `update or delete on table "${k.parent}" violates foreign key constraint "${constraint}" on table "${k.child}"`,
        table: k.child,
        constraint,
        detail: `Key (${k.to.join(', ')})=(${shown(k.to, parent)}) is still referenced from table "${k.child}".`,
      };
    }
    case 'SQLITE_CONSTRAINT_CHECK': {
      const m = /^CHECK constraint failed: (.+)$/s.exec(message);
      if (!m) return null;
      const text = m[1]!.trim();
      const len = /^pe_(varchar|bpchar)_(\d+)$/.exec(text);
      if (len) return { sqlstate: '22001', message: `value too long for type ${len[1] === 'varchar' ? 'character varying' : 'character'}(${len[2]})` };
      // note: an array column's element check (ddl.ts): an element its type cannot read.
      const arr = /^pe_array_(\w+)$/.exec(text);
      if (arr) return { sqlstate: '22P02', message: `malformed array literal: an element is not of type ${ARRAY_WORDS[arr[1]!] ?? arr[1]!}` };
      const row = lastRow(null);
      const t = row ? table(row.table) : null;
      if (!t || !row) return { sqlstate: '23514', message: `new row violates check constraint "${text}"` };
      const checks = checkNames(t);
      const found = checks.find((c) => c.declared === text) ?? checks.find((c) => c.text === text);
      if (found?.internal) {
        const i = t.columns.findIndex((c) => c.name === found.column);
        const v = String(row.values[i] ?? '');
        if (found.internal === 'bool') return { sqlstate: '22P02', message: `invalid input syntax for type boolean: "${v}"` };
        if (found.internal === 'json') return { sqlstate: '22P02', message: 'invalid input syntax for type json' };
        return { sqlstate: '22P02', message: `malformed array literal: "${v}"` };
      }
      const constraint = found?.name ?? text;
      return { sqlstate: '23514', message: `new row for relation "${t.name}" violates check constraint "${constraint}"`, table: t.name, constraint, detail: failingRow(t, row) };
    }
    case 'SQLITE_CONSTRAINT_DATATYPE': {
      // note: a STRICT table (the rows API's) refusing a value of another storage class: Postgres' 22P02.
      const m = /^cannot store (\w+) value in (\w+) column (.+)$/s.exec(message);
      if (!m) return null;
      const [{ table: tn, column }] = colsOf(m[3]!) as [{ table: string; column: string }];
      const t = table(tn);
      const row = lastRow(tn);
      const i = t ? t.columns.findIndex((c) => c.name === column) : -1;
      const type = t && i >= 0 ? (typesOf(t)[i] ?? null) : null;
      const v = row && i >= 0 ? row.values[i] : undefined;
      return { sqlstate: '22P02', message: `invalid input syntax for type ${type ? PG_NAMES[type] ?? type : m[2]!.toLowerCase()}${v === undefined || v === null ? '' : `: "${String(v)}"`}` };
    }
  }
  return null;
}

const PG_NAMES: Partial<Record<PgType, string>> = {
  int4: 'integer',
  int8: 'bigint',
  float8: 'double precision',
  bool: 'boolean',
  timestamptz: 'timestamp with time zone',
  timestamp: 'timestamp without time zone',
};

/** An INTEGER PRIMARY KEY left to SQLite reads -1 before it is assigned: the value the sequence gives. */
function fillSerial(t: ViolationTable, row: ViolationRow, i: number, v: string | number | null, f: ViolationFacts | null): string | number | null {
  const c = t.columns[i]!;
  if (row.op !== 'insert' || c.pk !== 1 || String(v) !== '-1' || !/^INTEGER$/i.test(c.decl) || t.columns.some((x) => x.pk > 1)) return v;
  // note: a table not yet in sqlite_sequence has assigned no key: the first is 1.
  const seq = f?.sequences?.[t.name] ?? (f?.sequences && /\bAUTOINCREMENT\b/i.test(t.sql) ? '0' : undefined);
  if (seq === undefined) return v;
  const idx = t.columns.indexOf(c);
  const earlier = (f?.rows ?? []).filter((r) => r.table === t.name && r.op === 'insert' && String(r.values[idx]) === '-1');
  const k = earlier.indexOf(row) + 1;
  return (BigInt(seq) + BigInt(k)).toString();
}

function uniqueName(t: ViolationTable, cols: string[], primary: boolean): string {
  const key = cols.join('\0');
  const ix = t.unique.find((u) => u.columns.join('\0') === key);
  const decl = declared(t.sql);
  const pk = primary || ix?.origin === 'pk' || (!ix && t.columns.filter((c) => c.pk > 0).map((c) => c.name).join('\0') === key);
  if (ix && ix.origin === 'c') return ix.name;
  const named = decl.find((d) => (pk ? d.kind === 'pkey' : d.kind === 'unique') && d.columns.join('\0') === key && d.name);
  if (named?.name) return named.name;
  return pk ? `${t.name}_pkey` : `${t.name}_${cols.join('_')}_key`;
}

function fkName(t: ViolationTable, from: string[], parent: string): string {
  const named = declared(t.sql).find((d) => d.kind === 'fkey' && d.columns.join('\0') === from.join('\0') && d.name);
  void parent;
  return named?.name ?? `${t.name}_${from.join('_')}_fkey`;
}

/** Each CHECK of a table with the name Postgres gives it; the translator's own type checks marked `internal`. */
function checkNames(t: ViolationTable): Array<{ text: string; declared: string | null; name: string; column?: string; internal?: 'bool' | 'json' | 'array' }> {
  const q = (n: string) => `"${n.replaceAll('"', '""')}"`;
  const names = new Set<string>();
  const out = [];
  const colNames = new Set(t.columns.map((c) => c.name));
  for (const d of declared(t.sql)) {
    if (d.kind !== 'check') continue;
    const text = d.text ?? '';
    if (d.name && /^pe_/.test(d.name)) continue;
    if (d.column !== undefined) {
      const c = q(d.column);
      const internal = text === `${c} IN (0, 1)` ? 'bool' : text === `json_valid(${c})` ? 'json' : text === `json_valid(${c}) AND json_type(${c}) = 'array'` ? 'array' : undefined;
      if (internal) {
        out.push({ text, declared: null, name: text, column: d.column, internal } as const);
        continue;
      }
    }
    let name = d.name;
    if (!name) {
      const used = [...new Set(d.columns.filter((c) => colNames.has(c)))];
      const base = used.length === 1 ? `${t.name}_${used[0]}_check` : `${t.name}_check`;
      name = base;
      for (let n = 1; names.has(name); n++) name = `${base}${n}`;
    }
    names.add(name);
    out.push({ text, declared: d.name, name, ...(d.column !== undefined ? { column: d.column } : {}) });
  }
  return out;
}

interface Token {
  t: 'word' | 'ident' | 'string' | 'punct';
  v: string;
  start: number;
  end: number;
}

/** SQLite DDL text as tokens: words, quoted identifiers, strings, punctuation (read, never rewritten). */
function tokens(sql: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < sql.length) {
    const ch = sql[i]!;
    if (/\s/.test(ch)) {
      i++;
      continue;
    }
    const start = i;
    if (ch === '"' || ch === '`' || ch === "'" || ch === '[') {
      const close = ch === '[' ? ']' : ch;
      let v = '';
      i++;
      while (i < sql.length) {
        if (sql[i] === close) {
          if (close !== ']' && sql[i + 1] === close) {
            v += close;
            i += 2;
            continue;
          }
          i++;
          break;
        }
        v += sql[i++];
      }
      out.push({ t: ch === "'" ? 'string' : 'ident', v, start, end: i });
    } else if (/[A-Za-z0-9_$\u0080-\uffff]/.test(ch)) {
      while (i < sql.length && /[A-Za-z0-9_$.\u0080-\uffff]/.test(sql[i]!)) i++;
      out.push({ t: 'word', v: sql.slice(start, i), start, end: i });
    } else if (ch === '-' && sql[i + 1] === '-') {
      while (i < sql.length && sql[i] !== '\n') i++;
    } else if (ch === '/' && sql[i + 1] === '*') {
      const e = sql.indexOf('*/', i + 2);
      i = e < 0 ? sql.length : e + 2;
    } else {
      out.push({ t: 'punct', v: ch, start, end: ++i });
    }
  }
  return out;
}

const declaredCache = new Map<string, Declared[]>();

/** The constraints a CREATE TABLE text declares, in order (column constraints where their column stands). */
function declared(sql: string): Declared[] {
  const hit = declaredCache.get(sql);
  if (hit) return hit;
  const toks = tokens(sql);
  const out: Declared[] = [];
  const open = toks.findIndex((x) => x.v === '(');
  // note: the table's items, split at commas outside parentheses.
  const items: Token[][] = [];
  let cur: Token[] = [];
  let depth = 0;
  for (let i = open + 1; i < toks.length; i++) {
    const x = toks[i]!;
    if (x.t === 'punct' && x.v === '(') depth++;
    if (x.t === 'punct' && x.v === ')') {
      if (depth === 0) break;
      depth--;
    }
    if (depth === 0 && x.t === 'punct' && x.v === ',') {
      items.push(cur);
      cur = [];
    } else cur.push(x);
  }
  if (cur.length) items.push(cur);
  const kw = (x: Token | undefined, w: string) => x !== undefined && x.t === 'word' && x.v.toUpperCase() === w;
  /** The tokens inside the parenthesis that opens at j, and the index after it. */
  const group = (item: Token[], j: number): [Token[], number] => {
    let d = 0;
    for (let k = j; k < item.length; k++) {
      if (item[k]!.v === '(' && item[k]!.t === 'punct') d++;
      if (item[k]!.v === ')' && item[k]!.t === 'punct' && --d === 0) return [item.slice(j + 1, k), k + 1];
    }
    return [item.slice(j + 1), item.length];
  };
  const idents = (ts: Token[]) => ts.filter((x) => x.t === 'ident' || (x.t === 'word' && !/^\d/.test(x.v))).map((x) => x.v);
  for (const item of items) {
    if (!item.length) continue;
    const first = item[0]!.t === 'word' ? item[0]!.v.toUpperCase() : '';
    const isTable = ['CONSTRAINT', 'PRIMARY', 'UNIQUE', 'CHECK', 'FOREIGN'].includes(first);
    const column = isTable ? undefined : item[0]!.v;
    let name: string | null = null;
    for (let j = isTable ? 0 : 1; j < item.length; j++) {
      const x = item[j]!;
      if (x.t === 'punct' && x.v === '(') {
        j = group(item, j)[1] - 1;
        continue;
      }
      if (kw(x, 'CONSTRAINT')) {
        name = item[j + 1]?.v ?? null;
        j++;
        continue;
      }
      if (kw(x, 'CHECK') && item[j + 1]?.v === '(') {
        const [inner, next] = group(item, j + 1);
        const text = inner.length ? sql.slice(inner[0]!.start, inner[inner.length - 1]!.end).trim() : '';
        // note: the columns it names: identifiers not called as functions.
        const cols = inner.filter((y, k) => (y.t === 'ident' || y.t === 'word') && inner[k + 1]?.v !== '(').map((y) => y.v);
        out.push({ kind: 'check', name, columns: cols, text, ...(column !== undefined ? { column } : {}) });
        name = null;
        j = next - 1;
      } else if (kw(x, 'PRIMARY') || kw(x, 'UNIQUE')) {
        const kind = kw(x, 'PRIMARY') ? 'pkey' : 'unique';
        let k = kw(x, 'PRIMARY') ? j + 2 : j + 1;
        let cols = column !== undefined ? [column] : [];
        if (column === undefined && item[k]?.v === '(') {
          const [inner, next] = group(item, k);
          cols = idents(inner).filter((w) => !['ASC', 'DESC', 'COLLATE'].includes(w.toUpperCase()));
          k = next;
        }
        out.push({ kind, name, columns: cols });
        name = null;
        j = k - 1;
      } else if (kw(x, 'FOREIGN') && kw(item[j + 1], 'KEY') && item[j + 2]?.v === '(') {
        const [inner, next] = group(item, j + 2);
        out.push({ kind: 'fkey', name, columns: idents(inner) });
        name = null;
        j = next - 1;
      } else if (kw(x, 'REFERENCES') && column !== undefined) {
        out.push({ kind: 'fkey', name, columns: [column] });
        name = null;
      } else if (kw(x, 'NOT') || kw(x, 'DEFAULT') || kw(x, 'COLLATE') || kw(x, 'GENERATED')) name = null;
    }
  }
  if (declaredCache.size > 200) declaredCache.clear();
  declaredCache.set(sql, out);
  return out;
}

/** A stored value as Postgres' output function shows it (the text of `Key (…)=(…)` and `Failing row contains (…)`). */
export function pgText(v: string | number | null, type: PgType | null): string {
  if (v === null) return 'null';
  const s = String(v);
  switch (type) {
    case 'bool':
      return s === '1' || s === 'true' ? 't' : s === '0' || s === 'false' ? 'f' : s;
    case 'timestamptz':
    case 'timestamp': {
      const m = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:?\d{2})?$/.exec(s);
      if (!m) return s;
      const frac = m[3] ? m[3].replace(/0+$/, '') : '';
      return `${m[1]} ${m[2]}${frac ? `.${frac}` : ''}${type === 'timestamptz' ? '+00' : ''}`;
    }
    case 'jsonb':
      try {
        return jsonbText(JSON.parse(s));
      } catch {
        return s;
      }
    case 'text[]':
    case 'int4[]':
    case 'int8[]':
    case 'float8[]':
    case 'numeric[]':
    case 'bool[]':
    case 'uuid[]':
      try {
        const a = JSON.parse(s) as unknown[];
        return `{${a.map((x) => (x === null ? 'NULL' : x === true ? 't' : x === false ? 'f' : typeof x === 'number' ? String(x) : arrayItem(String(x)))).join(',')}}`;
      } catch {
        return s;
      }
    case 'float8':
    case 'numeric':
      return typeof v === 'number' && Number.isFinite(v) ? String(v) : s;
    default:
      return s;
  }
}

const arrayItem = (s: string): string => (s === '' || /[\s{},"\\]/.test(s) || s.toUpperCase() === 'NULL' ? `"${s.replace(/["\\]/g, '\\$&')}"` : s);

/** jsonb's output: `{"a": 1, "b": [1, 2]}`, keys shortest first then bytewise, as jsonb stores them. */
function jsonbText(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(jsonbText).join(', ')}]`;
  const keys = Object.keys(v).sort((a, b) => (a.length !== b.length ? a.length - b.length : a < b ? -1 : a > b ? 1 : 0));
  return `{${keys.map((k) => `${JSON.stringify(k)}: ${jsonbText((v as Record<string, unknown>)[k])}`).join(', ')}}`;
}

/** Which of our codes (docs/api.md "Errors") a SQLSTATE answers with: 23505/23503 409, 23502/23514 400 `invalid_field`, the rest 400 `invalid_request`. */
function edgeCode(sqlstate: string): 'conflict' | 'invalid_field' | 'invalid_request' {
  if (sqlstate === '23505' || sqlstate === '23503') return 'conflict';
  if (sqlstate === '23502' || sqlstate === '23514') return 'invalid_field';
  return 'invalid_request';
}

/** A SQLite constraint error as Postgres words it (the rows API's writes, src/services/db/), or null. */
export function violationError(code: string, message: string, facts: ViolationFacts | null, lookup?: SchemaLookup, cause?: unknown): EdgeError | null {
  const pg = constraintError(code, message, facts, lookup);
  return pg ? toEdge(pg, cause) : null;
}

/** `details` of a Postgres-worded error: the SQLSTATE and the fields Postgres sets (and `field`, for `invalid_field`, when a column is known). */
function toEdge(pg: PgError, cause?: unknown): EdgeError {
  const code = edgeCode(pg.sqlstate);
  const details: Record<string, unknown> = { sqlstate: pg.sqlstate };
  for (const k of ['table', 'column', 'constraint', 'detail'] as const) if (pg[k] !== undefined) details[k] = pg[k];
  if (code === 'invalid_field' && pg.column !== undefined) details.field = pg.column;
  return new EdgeError(code, pg.message, { details, cause });
}

/**
 * A failed statement's error (a worker's `{code, message, facts}`, or an EdgeError a bad
 * value raised while binding or translating) as Postgres words it, or null when it is
 * neither a constraint violation nor a bad value.
 */
export function pgError(err: unknown, lookup?: SchemaLookup): EdgeError | null {
  if (err instanceof EdgeError) {
    if (err.code !== 'invalid_request' || err.details !== undefined) return null;
    const state = valueErrorState(err.message);
    return state ? new EdgeError('invalid_request', err.message, { details: { sqlstate: state } }) : null;
  }
  const e = err as { code?: unknown; message?: unknown; facts?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  const message = String(e.message ?? '');
  const raised = raisedError(message, err);
  if (raised) return raised;
  if (code.startsWith('SQLITE_CONSTRAINT')) {
    const pg = constraintError(code, message, e.facts as ViolationFacts | undefined, lookup);
    if (pg) return toEdge(pg, err);
  }
  // note: SQLite's bound on trigger depth (recursive triggers, docs/sql.md "Recursion") is Postgres' 54001.
  if (message === 'too many levels of trigger recursion') return toEdge({ sqlstate: '54001', message: 'stack depth limit exceeded' }, err);
  // note: SQLite refuses an ON CONFLICT target without a matching unique index when it prepares the statement.
  if (/ON CONFLICT clause does not match any PRIMARY KEY or UNIQUE constraint/.test(message)) {
    return toEdge({ sqlstate: '42P10', message: 'there is no unique or exclusion constraint matching the ON CONFLICT specification' }, err);
  }
  const input = /pe_invalid_input: (.*)$/s.exec(message);
  if (input) {
    const text = input[1]!.slice(0, 300);
    const state = valueErrorState(text);
    return state ? toEdge({ sqlstate: state, message: text }, err) : new EdgeError('invalid_request', text, { cause: err });
  }
  return null;
}

/**
 * A trigger's `RAISE EXCEPTION` (plpgsql.ts: SQLite's RAISE(ABORT, 'pe_raise: …')) as Postgres' P0001,
 * or another SQLSTATE a platform trigger names (`pe_raise[23502]: …`, relax-not-null.ts); or null.
 */
export function raisedError(message: string, cause?: unknown): EdgeError | null {
  const m = /pe_raise(?:\[([0-9A-Z]{5})\])?: (.*)$/s.exec(message);
  if (!m) return null;
  const text = m[2]!.slice(0, 300);
  if (!m[1]) return new EdgeError('invalid_request', text, { details: { sqlstate: 'P0001' }, cause });
  // note: a NOT NULL checked by trigger answers as SQLite's own NOT NULL does (invalid_field, naming table and column).
  const nn = /^null value in column "(.+)" of relation "(.+)" violates not-null constraint$/s.exec(text);
  return toEdge({ sqlstate: m[1], message: text, ...(nn ? { column: nn[1]!, table: nn[2]! } : {}) }, cause);
}

const ARRAY_WORDS: Partial<Record<string, string>> = { int4: 'integer', int8: 'bigint', float8: 'double precision', numeric: 'numeric', bool: 'boolean', uuid: 'uuid' };
