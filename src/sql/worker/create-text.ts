/**
 * Edits of one column's definition in a table's CREATE TABLE text, as SQLite keeps it
 * (sqlite_master.sql), for the table rebuild (rebuild.ts). A small scanner of SQLite's text:
 * quoted names and strings, comments, and the parentheses' depth, so only the column's own
 * definition is edited (never a CHECK's text, a string or another column).
 */

/** What changes in the column: each field given is set; an absent one is kept. */
export interface ColumnEdit {
  /** SQLite's DEFAULT expression text (without DEFAULT), or null to drop the default. */
  default?: string | null;
  notNull?: boolean;
  /** A new declared type and the CHECKs that come with it (the old type's own CHECKs go). */
  type?: { decl: string; checks: string[] };
}

interface Tok {
  text: string;
  start: number;
  end: number;
  depth: number;
}

function scan(sql: string): Tok[] | null {
  const toks: Tok[] = [];
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
  return toks;
}

const ident = (t: string): string => (/^["`[]/.test(t) ? t.slice(1, -1).replace(/""/g, '"') : t).toLowerCase();
const quoteIdent = (s: string): string => `"${s.replaceAll('"', '""')}"`;
const STARTS = new Set(['CONSTRAINT', 'PRIMARY', 'NOT', 'NULL', 'UNIQUE', 'CHECK', 'DEFAULT', 'COLLATE', 'REFERENCES', 'GENERATED', 'AS']);

interface Clause {
  kind: string;
  /** The constraint's name when `CONSTRAINT name` leads it. */
  name: string | null;
  from: number;
  to: number;
}

/** The column's definition: its tokens' range, the type's range and its clauses; null when it is not there. */
function columnOf(toks: Tok[], column: string): { open: number; at: number; last: number; type: [number, number]; clauses: Clause[] } | null {
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
  let last = at;
  while (last + 1 < toks.length && toks[last + 1]!.depth >= 1 && !(toks[last + 1]!.depth === 1 && toks[last + 1]!.text === ',')) last++;
  const word = (i: number) => (toks[i]!.depth === 1 ? toks[i]!.text.toUpperCase() : '');
  let i = at + 1;
  while (i <= last && !STARTS.has(word(i))) i++;
  const type: [number, number] = [at + 1, i - 1];
  const clauses: Clause[] = [];
  while (i <= last) {
    const from = i;
    let name: string | null = null;
    if (word(i) === 'CONSTRAINT') {
      name = ident(toks[i + 1]?.text ?? '');
      i += 2;
    }
    const kind = word(i);
    i++;
    if (kind === 'NOT' && word(i) === 'NULL') i++;
    if (kind === 'DEFAULT') {
      // note: one value: a parenthesised expression, or a literal with its sign.
      if (toks[i]?.text === '-' || toks[i]?.text === '+') i++;
      if (toks[i]?.text === '(') while (i <= last && !(toks[i]!.depth === 1 && toks[i]!.text === ')')) i++;
      i++;
    } else {
      // note: ON DELETE SET NULL and NOT DEFERRABLE are a REFERENCES clause's own words.
      while (i <= last && !(STARTS.has(word(i)) && !(kind === 'REFERENCES' && ((word(i) === 'NULL' && word(i - 1) === 'SET') || (word(i) === 'NOT' && word(i + 1) !== 'NULL'))))) i++;
    }
    clauses.push({ kind, name, from, to: Math.min(i, last + 1) - 1 });
  }
  return { open, at, last, type, clauses };
}

/** The CHECKs the translator and the rows API add per type (ddl.ts, store.ts), for this column. */
function typeCheck(c: Clause, toks: Tok[], sql: string, column: string): boolean {
  if (c.kind !== 'CHECK') return false;
  if (c.name !== null) return /^pe_(varchar|bpchar|array)_/.test(c.name);
  const q = quoteIdent(column);
  const text = sql.slice(toks[c.from]!.start, toks[c.to]!.end).replace(/\s+/g, ' ');
  return [`CHECK (${q} IN (0, 1))`, `CHECK (json_valid(${q}))`, `CHECK (json_valid(${q}) AND json_type(${q}) = 'array')`].includes(text);
}

/**
 * The table's CREATE text under another name with the column's definition edited; null when
 * the column is not found (or, with `strict`, when nothing would change).
 */
export function editColumn(sql: string, column: string, name: string, edit: ColumnEdit, strict = false): string | null {
  const toks = scan(sql);
  if (!toks) return null;
  const col = columnOf(toks, column);
  if (!col) return null;
  const cuts: Array<[number, number, string]> = [];
  const drop = (c: Clause) => cuts.push([toks[c.from]!.start, toks[c.to]!.end, '']);
  if (edit.notNull !== undefined) for (const c of col.clauses) if (c.kind === 'NOT') drop(c);
  if (edit.default !== undefined) for (const c of col.clauses) if (c.kind === 'DEFAULT') drop(c);
  if (edit.type) {
    for (const c of col.clauses) if (typeCheck(c, toks, sql, column)) drop(c);
    const [a, b] = col.type;
    if (b >= a) cuts.push([toks[a]!.start, toks[b]!.end, edit.type.decl]);
    else cuts.push([toks[col.at]!.end, toks[col.at]!.end, ` ${edit.type.decl}`]);
  }
  if (strict && cuts.length === 0) return null;
  const added: string[] = [];
  if (edit.notNull === true) added.push('NOT NULL');
  if (typeof edit.default === 'string') added.push(`DEFAULT (${edit.default})`);
  if (edit.type) added.push(...edit.type.checks);
  const end = toks[col.last]!.end;
  if (added.length) cuts.push([end, end, ` ${added.join(' ')}`]);
  const nameTok = toks[col.open - 1]!;
  cuts.push([nameTok.start, nameTok.end, quoteIdent(name)]);
  cuts.sort((x, y) => y[0] - x[0] || y[1] - x[1]);
  let out = sql;
  for (const [s, e, t] of cuts) out = out.slice(0, s) + t + out.slice(e);
  return out;
}

/**
 * The table's CREATE text under another name with the column's NOT NULL left out (null when
 * the column is not found or has none).
 */
export function withoutNotNull(sql: string, column: string, name: string): string | null {
  return editColumn(sql, column, name, { notNull: false }, true);
}
