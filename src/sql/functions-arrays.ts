import type Database from 'better-sqlite3';

/**
 * Arrays other than text[] (docs/sql.md "Arrays"): int4[], int8[], float8[], numeric[], bool[]
 * and uuid[] are stored as canonical JSON arrays (numbers, true/false, lower-case uuid strings,
 * null). Here: reading a Postgres array literal (`'{1,2,NULL}'`) or a JSON array into that
 * form, each element checked as Postgres checks it (22P02/22003 with Postgres' words). Pure
 * functions, also used when DDL is translated (defaults), and registered on the worker
 * connections as `pe_<elem>_array`.
 */

export type ArrayElement = 'int4' | 'int8' | 'float8' | 'numeric' | 'bool' | 'uuid';
export const ARRAY_ELEMENTS: readonly ArrayElement[] = ['int4', 'int8', 'float8', 'numeric', 'bool', 'uuid'];

const invalid = (msg: string): Error => new Error(`pe_invalid_input: ${msg}`);
const WORDS: Record<ArrayElement, string> = { int4: 'integer', int8: 'bigint', float8: 'double precision', numeric: 'numeric', bool: 'boolean', uuid: 'uuid' };

/** One element (text from a literal, or a JSON value) → its JSON text. */
function element(x: unknown, el: ArrayElement): string {
  if (x === null) return 'null';
  const bad = (): never => {
    throw invalid(`invalid input syntax for type ${WORDS[el]}: "${typeof x === 'string' ? x : JSON.stringify(x)}"`);
  };
  switch (el) {
    case 'int4':
    case 'int8': {
      let b: bigint;
      if (typeof x === 'number') {
        if (!Number.isFinite(x)) bad();
        b = BigInt(Math.round(x));
      } else if (typeof x === 'string' && /^\s*[+-]?\d+\s*$/.test(x)) b = BigInt(x.trim());
      else return bad();
      const max = el === 'int4' ? 2147483647n : 9223372036854775807n;
      if (b > max || b < -max - 1n) throw invalid(typeof x === 'string' ? `value "${x}" is out of range for type ${WORDS[el]}` : `${WORDS[el]} out of range`);
      return b.toString();
    }
    case 'float8':
    case 'numeric': {
      if (typeof x === 'number') return Number.isFinite(x) ? JSON.stringify(x) : bad();
      const s = typeof x === 'string' ? x.trim() : '';
      const n = Number(s);
      if (s === '' || !Number.isFinite(n) || !/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(s)) return bad();
      return JSON.stringify(n);
    }
    case 'bool': {
      if (typeof x === 'boolean') return x ? 'true' : 'false';
      const s = typeof x === 'string' ? x.trim().toLowerCase() : typeof x === 'number' ? String(x) : '';
      if (['t', 'true', 'y', 'yes', 'on', '1'].includes(s)) return 'true';
      if (['f', 'false', 'n', 'no', 'off', '0'].includes(s)) return 'false';
      return bad();
    }
    case 'uuid': {
      const s = typeof x === 'string' ? x.trim().toLowerCase() : '';
      if (!/^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/.test(s)) return bad();
      const h = s.replaceAll('-', '');
      return JSON.stringify(`${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`);
    }
  }
}

/**
 * A Postgres one-dimensional array literal's elements (`{a, "b,c", NULL}`): quoted elements,
 * backslash escapes, an unquoted NULL (any case) is null. Anything else: Postgres' 22P02
 * "malformed array literal".
 */
export function literalElements(text: string): Array<string | null> {
  const s = text.trim();
  const malformed = (): never => {
    throw invalid(`malformed array literal: "${text}"`);
  };
  if (!s.startsWith('{') || !s.endsWith('}')) return malformed();
  const inner = s.slice(1, -1);
  if (inner.trim() === '') return [];
  const out: Array<string | null> = [];
  let i = 0;
  while (i <= inner.length) {
    while (i < inner.length && /\s/.test(inner[i]!)) i++;
    let value = '';
    let quoted = false;
    if (inner[i] === '"') {
      quoted = true;
      i++;
      while (i < inner.length && inner[i] !== '"') {
        if (inner[i] === '\\') i++;
        value += inner[i] ?? '';
        i++;
      }
      if (inner[i] !== '"') return malformed();
      i++;
      while (i < inner.length && /\s/.test(inner[i]!)) i++;
    } else {
      while (i < inner.length && inner[i] !== ',') {
        const c = inner[i]!;
        if (c === '{' || c === '}' || c === '"') return malformed();
        if (c === '\\') i++;
        value += inner[i] ?? '';
        i++;
      }
      value = value.trim();
      if (value === '') return malformed();
    }
    out.push(!quoted && value.toLowerCase() === 'null' ? null : value);
    if (i >= inner.length) break;
    if (inner[i] !== ',') return malformed();
    i++;
  }
  return out;
}

/** A literal, a JSON array (text) or null → the stored JSON array of `el` elements. */
export function toArray(v: unknown, el: ArrayElement): string | null {
  if (v === null || v === undefined) return null;
  const s = String(v).trim();
  let items: unknown[];
  if (s.startsWith('[')) {
    let j: unknown;
    try {
      j = JSON.parse(s);
    } catch {
      throw invalid(`malformed array literal: "${s}"`);
    }
    if (!Array.isArray(j)) throw invalid(`malformed array literal: "${s}"`);
    items = j;
    if (items.some((x) => Array.isArray(x) || (x !== null && typeof x === 'object'))) throw invalid(`malformed array literal: "${s}" (arrays here have one dimension)`);
  } else items = literalElements(s);
  return `[${items.map((x) => element(x, el)).join(',')}]`;
}

/** A stored array (JSON text) → its elements. */
function items(a: unknown): unknown[] {
  const j = JSON.parse(String(a)) as unknown;
  if (!Array.isArray(j)) throw invalid(`malformed array literal: "${String(a)}"`);
  return j;
}

/** A SQL value as an element of type `el` (`text`, or an ArrayElement), as it is kept in the JSON array. */
function asElement(x: unknown, el: string): unknown {
  if (x === null || x === undefined) return null;
  if (el === 'text') return typeof x === 'bigint' ? x.toString() : String(x);
  return JSON.parse(element(typeof x === 'bigint' ? x.toString() : x, el as ArrayElement)) as unknown;
}

/** An element as array_to_string prints it (booleans t/f, as Postgres). */
const printed = (x: unknown): string => (x === true ? 't' : x === false ? 'f' : String(x));

export function registerArrayFunctions(db: Database.Database): void {
  const det = { deterministic: true };
  for (const el of ARRAY_ELEMENTS) db.function(`pe_${el}_array`, det, (v: unknown) => toArray(v, el));
  // note: the array functions over arrays of any element type (src/sql/pg/arrays.ts); `el` names the element type.
  const out = (xs: unknown[]): string => JSON.stringify(xs);
  db.function('pe_jarr_append', det, (a: unknown, x: unknown, el: unknown) => out([...(a === null ? [] : items(a)), asElement(x, String(el))]));
  db.function('pe_jarr_prepend', det, (x: unknown, a: unknown, el: unknown) => out([asElement(x, String(el)), ...(a === null ? [] : items(a))]));
  db.function('pe_jarr_cat', det, (a: unknown, b: unknown) => (a === null && b === null ? null : out([...(a === null ? [] : items(a)), ...(b === null ? [] : items(b))])));
  db.function('pe_jarr_remove', det, (a: unknown, x: unknown, el: unknown) => {
    if (a === null) return null;
    const v = asElement(x, String(el));
    return out(items(a).filter((y) => y !== v));
  });
  db.function('pe_jarr_position', det, (a: unknown, x: unknown, el: unknown) => {
    if (a === null) return null;
    const i = items(a).indexOf(asElement(x, String(el)));
    return i < 0 ? null : i + 1;
  });
  // note: Postgres' text output of an array: elements that are empty, NULL-like or hold blanks, braces, commas, quotes or backslashes are quoted.
  const quoted = (x: string): string => (x === '' || /[\s{},"\\]/.test(x) || x.toUpperCase() === 'NULL' ? `"${x.replace(/["\\]/g, '\\$&')}"` : x);
  db.function('pe_array_text', det, (a: unknown) => {
    if (a === null) return null;
    return `{${items(a)
      .map((x) => (x === null ? 'NULL' : typeof x === 'string' ? quoted(x) : printed(x)))
      .join(',')}}`;
  });
  db.function('pe_jarr_to_string', det, (a: unknown, sep: unknown, nul: unknown) => {
    if (a === null || sep === null) return null;
    return items(a)
      .flatMap((x) => (x === null ? (nul === null ? [] : [String(nul)]) : [printed(x)]))
      .join(String(sep));
  });
}
