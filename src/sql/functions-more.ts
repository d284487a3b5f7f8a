import type Database from 'better-sqlite3';

/**
 * The SQLite functions behind src/sql/pg/catalog/more.ts: Unicode case mapping, format(),
 * translate(), ascii(), the text[] functions (arrays are stored as JSON arrays) and
 * jsonb_pretty. Registered next to registerEveryday on every worker connection and inline lease.
 *
 * note: registered in the SQL worker (src/sql/worker/entry.ts) and inline (query.ts), like registerFunctions.
 * An error a caller can cause is thrown as `pe_invalid_input: …`.
 */
export function registerMore(db: Database.Database): void {
  const det = { deterministic: true };
  const fail = (msg: string): never => {
    throw new Error(`pe_invalid_input: ${msg}`);
  };
  const str = (v: unknown): string | null => (v === null || v === undefined ? null : typeof v === 'string' ? v : String(v));
  const arr = (v: unknown): Array<string | null> => {
    const s = String(v).trim();
    if (s.startsWith('[')) {
      const a = JSON.parse(s) as unknown;
      if (Array.isArray(a)) return a.map((x) => (x === null ? null : typeof x === 'string' ? x : JSON.stringify(x)));
    }
    if (s.startsWith('{') && s.endsWith('}')) {
      const inner = s.slice(1, -1).trim();
      return inner === '' ? [] : inner.split(',').map((x) => x.trim()).map((x) => (x.toUpperCase() === 'NULL' ? null : x.replace(/^"(.*)"$/, '$1')));
    }
    return fail(`malformed array literal: "${s}"`);
  };
  const out = (a: Array<string | null>): string => JSON.stringify(a);

  // note: character by character, as Postgres' lower/upper: no 'ß' → 'SS', no final-sigma rule.
  const each = (s: string, f: (c: string) => string, table: CaseTable): string =>
    [...s]
      .map((c) => {
        const cp = c.codePointAt(0)!;
        const m = table.map.get(cp);
        if (m !== undefined) return String.fromCodePoint(m);
        if (table.keep.some(([a, b]) => cp >= a && cp <= b)) return c;
        return /^[\x20-\x7e]$/.test(c) ? f(c) : [...f(c)].length === 1 ? f(c) : c;
      })
      .join('');
  db.function('pe_lower', det, (s: unknown) => (s === null ? null : /^[\x00-\x7f]*$/.test(String(s)) ? String(s).toLowerCase() : each(String(s), (c) => c.toLowerCase(), LOWER)));
  db.function('pe_upper', det, (s: unknown) => (s === null ? null : /^[\x00-\x7f]*$/.test(String(s)) ? String(s).toUpperCase() : each(String(s), (c) => c.toUpperCase(), UPPER)));
  // note: the ordered-set aggregates over the group's values (a JSON array; NULLs skipped), as Postgres computes them.
  const cmp = (a: unknown, b: unknown): number => (typeof a === 'number' && typeof b === 'number' ? a - b : String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0);
  db.function('pe_ordered_set', det, (values: unknown, kind: unknown, fraction: unknown, desc: unknown) => {
    const xs = (JSON.parse(String(values ?? '[]')) as unknown[]).filter((x) => x !== null).sort(cmp);
    if (desc) xs.reverse();
    if (kind !== 'mode') {
      if (fraction === null) return null;
      const f = Number(fraction);
      if (!(f >= 0 && f <= 1)) fail(`percentile value ${String(fraction)} is not between 0 and 1`);
      if (xs.length === 0) return null;
      if (kind === 'disc') return xs[Math.max(Math.ceil(f * xs.length) - 1, 0)] as number | string;
      const at = f * (xs.length - 1);
      const lo = Number(xs[Math.floor(at)]);
      const hi = Number(xs[Math.ceil(at)]);
      return lo + (hi - lo) * (at - Math.floor(at));
    }
    let best: unknown = null;
    let bestN = 0;
    for (let i = 0; i < xs.length; ) {
      let j = i;
      while (j < xs.length && cmp(xs[j], xs[i]) === 0) j++;
      if (j - i > bestN) [best, bestN] = [xs[i], j - i];
      i = j;
    }
    return best as number | string | null;
  });
  db.function('pe_string_agg_distinct', det, (values: unknown, sep: unknown) => {
    const xs = [...new Set((JSON.parse(String(values ?? '[]')) as unknown[]).filter((x) => x !== null).map(String))].sort(cmp);
    return xs.length === 0 ? null : xs.join(String(sep ?? ''));
  });
  db.function('pe_ascii', det, (s: unknown) => (s === null ? null : (String(s).codePointAt(0) ?? 0)));
  db.function('pe_chr', det, (n: unknown) => {
    if (n === null) return null;
    const c = Number(n);
    if (!Number.isInteger(c) || c <= 0 || c > 0x10ffff) return fail(c === 0 ? 'null character not permitted' : `requested character too large for encoding: ${c}`);
    return String.fromCodePoint(c);
  });
  db.function('pe_translate', det, (s: unknown, from: unknown, to: unknown) => {
    if (s === null || from === null || to === null) return null;
    const f = [...String(from)];
    const t = [...String(to)];
    return [...String(s)]
      .map((ch) => {
        const i = f.indexOf(ch);
        return i < 0 ? ch : i < t.length ? t[i]! : '';
      })
      .join('');
  });
  // note: Postgres' quote_ident: bare when a lower-case identifier, else double-quoted.
  const ident = (v: string): string => (/^[a-z_][a-z0-9_$]*$/.test(v) ? v : `"${v.replaceAll('"', '""')}"`);
  const literal = (v: string): string => (v.includes('\\') ? ` E'${v.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`.trim() : `'${v.replaceAll("'", "''")}'`);
  db.function('pe_format', { deterministic: true, varargs: true }, (fmt: unknown, ...args: unknown[]) => {
    if (fmt === null) return null;
    let next = 0;
    return String(fmt).replace(/%(?:(\d+)\$)?(-?\d*)?([sIL%])?/g, (_m, pos: string | undefined, _w: string | undefined, kind: string | undefined) => {
      if (kind === '%') return '%';
      if (!kind) return fail('unterminated format() type specifier');
      const i = pos ? Number(pos) - 1 : next;
      next = i + 1;
      if (i < 0 || i >= args.length) return fail('too few arguments for format()');
      const v = str(args[i]);
      if (kind === 's') return v ?? '';
      if (kind === 'I') return v === null ? fail('null values cannot be formatted as an SQL identifier') : ident(v);
      return v === null ? 'NULL' : literal(v);
    });
  });

  // ---- numeric: a double rounded to 15 significant digits, the most it holds exactly (0.1 + 0.2 → 0.3).
  // note: an integral double is exact (past 2^53 it has no fraction to tidy): rounding it to 15 digits would only lose digits.
  db.function('pe_num15', det, (v: unknown) => (typeof v === 'number' && Number.isFinite(v) && !Number.isInteger(v) ? Number(v.toPrecision(15)) : v));

  // ---- text[] (JSON arrays)
  db.function('pe_array_to_string', { deterministic: true, varargs: true }, (a: unknown, sep: unknown, nul?: unknown) => {
    if (a === null || sep === null) return null;
    const xs = arr(a);
    return xs.flatMap((x) => (x === null ? (nul === undefined || nul === null ? [] : [String(nul)]) : [x])).join(String(sep));
  });
  db.function('pe_string_to_array', { deterministic: true, varargs: true }, (s: unknown, sep: unknown, nul?: unknown) => {
    if (s === null) return null;
    const t = String(s);
    if (t === '') return '[]';
    const parts = sep === null ? [...t] : String(sep) === '' ? [t] : t.split(String(sep));
    return out(parts.map((x) => (nul !== undefined && nul !== null && x === String(nul) ? null : x)));
  });
  db.function('pe_array_append', det, (a: unknown, x: unknown) => out([...(a === null ? [] : arr(a)), str(x)]));
  db.function('pe_array_prepend', det, (x: unknown, a: unknown) => out([str(x), ...(a === null ? [] : arr(a))]));
  db.function('pe_array_cat', det, (a: unknown, b: unknown) => (a === null && b === null ? null : out([...(a === null ? [] : arr(a)), ...(b === null ? [] : arr(b))])));
  db.function('pe_array_remove', det, (a: unknown, x: unknown) => (a === null ? null : out(arr(a).filter((y) => y !== str(x)))));
  db.function('pe_array_position', det, (a: unknown, x: unknown) => {
    if (a === null) return null;
    const i = arr(a).indexOf(str(x));
    return i < 0 ? null : i + 1;
  });

  // ---- jsonb
  // note: jsonb_pretty indents by four spaces, as Postgres does.
  const pretty = (v: unknown, pad: string): string => {
    if (v === null || typeof v !== 'object') return JSON.stringify(v);
    const inner = `${pad}    `;
    const items = Array.isArray(v) ? v.map((x) => inner + pretty(x, inner)) : Object.entries(v).map(([k, x]) => `${inner}${JSON.stringify(k)}: ${pretty(x, inner)}`);
    const [open, close] = Array.isArray(v) ? ['[', ']'] : ['{', '}'];
    return items.length ? `${open}\n${items.join(',\n')}\n${pad}${close}` : `${open}\n${pad}${close}`;
  };
  db.function('pe_jsonb_pretty', det, (j: unknown) => (j === null ? null : pretty(JSON.parse(String(j)), '')));
}

interface CaseTable {
  map: Map<number, number>;
  keep: Array<[number, number]>;
}
const ranges = (list: string): Array<[number, number]> =>
  list.split(' ').map((r) => {
    const [a, b] = r.split('-').map((x) => parseInt(x, 16));
    return [a!, b ?? a!];
  });
/**
 * Where Postgres' per-character case mapping (PGlite's, the corpus' oracle: its C library's
 * tables) differs from JavaScript's simple mapping, measured over every code point below
 * U+20000 (docs/sql.md "Late differences"): 'ß' upper is 'ẞ', 'İ' lower is 'i', Greek
 * letters with ypogegrammeni take the titlecase form, and letters newer than its Unicode
 * tables (circled Latin letters among them) stay as they are.
 */
const UPPER: CaseTable = {
  map: new Map<number, number>([
    [0xdf, 0x1e9e],
    ...[0x1f80, 0x1f90, 0x1fa0].flatMap((b) => Array.from({ length: 8 }, (_, i): [number, number] => [b + i, b + 8 + i])),
    [0x1fb3, 0x1fbc],
    [0x1fc3, 0x1fcc],
    [0x1ff3, 0x1ffc],
  ]),
  keep: ranges('19b 264 1c8a 24d0-24e9 2c5f a7c1 a7c8 a7ca a7cd a7cf a7d1 a7d3 a7d5 a7d7 a7d9 a7db a7f6 10597-105a1 105a3-105b1 105b3-105b9 105bb-105bc 10d70-10d85 16ebb-16ed3'),
};
const LOWER: CaseTable = {
  map: new Map([[0x130, 0x69]]),
  keep: ranges('1c89 24b6-24cf 2c2f a7c0 a7c7 a7c9 a7cb-a7cc a7ce a7d0 a7d2 a7d4 a7d6 a7d8 a7da a7dc a7f5 10570-1057a 1057c-1058a 1058c-10592 10594-10595 10d50-10d65 16ea0-16eb8'),
};
