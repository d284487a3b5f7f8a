import type Database from 'better-sqlite3';

/**
 * The SQLite functions behind the everyday catalog (src/sql/pg/catalog/everyday.ts):
 * checked integer arithmetic, numeric functions with Postgres' rounding, string functions
 * counted in characters, POSIX regular expressions, jsonb editing and text[] operators.
 * Registered next to registerFunctions on every worker connection and inline lease.
 *
 * note: an error a caller can cause is thrown as `pe_invalid_input: …`
 * (a 400 with Postgres' wording).
 */
export function registerEveryday(db: Database.Database): void {
  const det = { deterministic: true };
  const big = { deterministic: true, safeIntegers: true };
  const fail = (msg: string): never => {
    throw new Error(`pe_invalid_input: ${msg}`);
  };

  // ---- integers: Postgres raises on overflow where SQLite would turn to a float.
  const INT = { 32: [-2147483648n, 2147483647n, 'integer'], 64: [-9223372036854775808n, 9223372036854775807n, 'bigint'] } as const;
  const checked = (v: bigint, bits: unknown): bigint => {
    const [lo, hi, name] = INT[Number(bits) === 32 ? 32 : 64];
    if (v < lo || v > hi) fail(`${name} out of range`);
    return v;
  };
  const isInt = (v: unknown): v is bigint => typeof v === 'bigint';
  db.function('pe_iadd', big, (a: unknown, b: unknown, bits: unknown) => (a === null || b === null ? null : isInt(a) && isInt(b) ? checked(a + b, bits) : Number(a) + Number(b)));
  db.function('pe_isub', big, (a: unknown, b: unknown, bits: unknown) => (a === null || b === null ? null : isInt(a) && isInt(b) ? checked(a - b, bits) : Number(a) - Number(b)));
  db.function('pe_imul', big, (a: unknown, b: unknown, bits: unknown) => (a === null || b === null ? null : isInt(a) && isInt(b) ? checked(a * b, bits) : Number(a) * Number(b)));
  /** Integer division truncates toward zero (BigInt's rule, and Postgres'). */
  db.function('pe_idiv', big, (a: unknown, b: unknown, bits: unknown) => {
    if (a === null || b === null) return null;
    if (Number(b) === 0) return fail('division by zero');
    if (isInt(a) && isInt(b)) return checked(a / b, bits);
    return Math.trunc(Number(a) / Number(b));
  });
  /** mod / %: the sign of the dividend (Postgres' and JavaScript's rule); decimals kept. */
  db.function('pe_mod', big, (a: unknown, b: unknown) => {
    if (a === null || b === null) return null;
    if (Number(b) === 0) return fail('division by zero');
    if (isInt(a) && isInt(b)) return a % b;
    // note: numeric's remainder is exact in Postgres (99999999.99 % 1 = 0.99): computed on the decimal digits written, where they fit a double exactly.
    const [x, y] = [Number(a), Number(b)];
    const places = Math.max(...[x, y].map((v) => /\.(\d+)$/.exec(String(v))?.[1]?.length ?? (/e/.test(String(v)) ? 99 : 0)));
    const k = 10 ** places;
    if (places <= 15 && Math.abs(x) * k < 2 ** 53 && Math.abs(y) * k < 2 ** 53) return (Math.round(x * k) % Math.round(y * k)) / k;
    return x % y;
  });
  db.function('pe_div', big, (a: unknown, b: unknown) => {
    if (a === null || b === null) return null;
    if (Number(b) === 0) return fail('division by zero');
    if (isInt(a) && isInt(b)) return a / b;
    return Math.trunc(Number(a) / Number(b));
  });

  // ---- floating point and numeric
  const num = (v: unknown): number => Number(v);
  db.function('pe_power', det, (a: unknown, b: unknown) => {
    if (a === null || b === null) return null;
    const x = num(a);
    const y = num(b);
    if (x === 0 && y < 0) return fail('zero raised to a negative power is undefined');
    if (x < 0 && !Number.isInteger(y)) return fail('a negative number raised to a non-integer power yields a complex result');
    const r = x ** y;
    if (!Number.isFinite(r)) return fail('value out of range: overflow');
    return r;
  });
  db.function('pe_sqrt', det, (a: unknown) => (a === null ? null : num(a) < 0 ? fail('cannot take square root of a negative number') : Math.sqrt(num(a))));
  db.function('pe_cbrt', det, (a: unknown) => (a === null ? null : Math.cbrt(num(a))));
  db.function('pe_exp', det, (a: unknown) => {
    if (a === null) return null;
    const r = Math.exp(num(a));
    return Number.isFinite(r) ? r : fail('value out of range: overflow');
  });
  const logOf = (x: number, f: (n: number) => number): number => {
    if (x === 0) return fail('cannot take logarithm of zero');
    if (x < 0) return fail('cannot take logarithm of a negative number');
    return f(x);
  };
  db.function('pe_ln', det, (a: unknown) => (a === null ? null : logOf(num(a), Math.log)));
  db.function('pe_log10', det, (a: unknown) => (a === null ? null : logOf(num(a), Math.log10)));
  db.function('pe_logb', det, (b: unknown, x: unknown) => {
    if (b === null || x === null) return null;
    const lb = logOf(num(b), Math.log);
    const lx = logOf(num(x), Math.log);
    if (lb === 0) return fail('division by zero');
    return lx / lb;
  });
  db.function('pe_sign', det, (a: unknown) => (a === null ? null : Math.sign(num(a))));
  /**
   * Decimal rounding on the shortest decimal text of the value (so 2.675 is 2.675, not
   * 2.67499…): half away from zero (numeric) or half to even (float8), at `scale` places;
   * `trunc` drops the digits instead.
   */
  const decimal = (v: number, scale: number, mode: 'away' | 'even' | 'trunc'): number => {
    if (!Number.isFinite(v)) return v;
    const neg = v < 0;
    const s = Math.abs(v).toFixed(20).replace(/0+$/, '');
    const exact = String(Math.abs(v));
    const text = /e/.test(exact) ? s : exact;
    const [ip, fp = ''] = text.split('.');
    const digits = (ip! + fp).replace(/^0+(?=\d)/, '');
    const point = digits.length - fp.length;
    const keep = point + scale;
    if (keep >= digits.length) return v;
    if (keep < 0) return neg ? -0 : 0;
    const head = digits.slice(0, keep) || '0';
    const next = digits[keep] ?? '0';
    const rest = digits.slice(keep + 1);
    let up = false;
    if (mode === 'away') up = next >= '5';
    else if (mode === 'even') up = next > '5' || (next === '5' && (/[1-9]/.test(rest) || Number(head[head.length - 1]) % 2 === 1));
    let n = BigInt(head);
    if (up) n += 1n;
    const r = Number(`${n}e${-scale}`);
    return neg ? -r : r;
  };
  const intScale = (s: unknown): number => (s === null || s === undefined ? 0 : Math.trunc(Number(s)));
  db.function('pe_round', det, (a: unknown, s: unknown) => (a === null || s === null ? null : decimal(num(a), intScale(s), 'away')));
  db.function('pe_round_even', det, (a: unknown) => (a === null ? null : decimal(num(a), 0, 'even')));
  db.function('pe_trunc', det, (a: unknown, s: unknown) => (a === null || s === null ? null : decimal(num(a), intScale(s), 'trunc')));

  // ---- strings (counted in characters, as Postgres counts them)
  const chars = (v: unknown): string[] => Array.from(String(v));
  const count = (n: unknown): number => Math.trunc(Number(n));
  db.function('pe_left', det, (s: unknown, n: unknown) => {
    if (s === null || n === null) return null;
    const c = chars(s);
    const k = count(n);
    return (k >= 0 ? c.slice(0, k) : c.slice(0, Math.max(c.length + k, 0))).join('');
  });
  db.function('pe_right', det, (s: unknown, n: unknown) => {
    if (s === null || n === null) return null;
    const c = chars(s);
    const k = count(n);
    return (k >= 0 ? c.slice(Math.max(c.length - k, 0)) : c.slice(Math.min(-k, c.length))).join('');
  });
  const pad = (s: unknown, n: unknown, fill: unknown, left: boolean): string | null => {
    if (s === null || n === null || fill === null) return null;
    const c = chars(s);
    const k = count(n);
    if (k <= 0) return '';
    if (c.length >= k) return c.slice(0, k).join('');
    const f = chars(fill === undefined ? ' ' : fill);
    if (!f.length) return c.join('');
    const p: string[] = [];
    while (p.length < k - c.length) p.push(f[p.length % f.length]!);
    return left ? p.join('') + c.join('') : c.join('') + p.join('');
  };
  db.function('pe_lpad', { deterministic: true, varargs: true }, (s: unknown, n: unknown, f: unknown) => pad(s, n, f, true));
  db.function('pe_rpad', { deterministic: true, varargs: true }, (s: unknown, n: unknown, f: unknown) => pad(s, n, f, false));
  db.function('pe_repeat', det, (s: unknown, n: unknown) => {
    if (s === null || n === null) return null;
    const k = count(n);
    const str = String(s);
    if (k > 0 && str.length * k > 100_000_000) return fail('requested length too large');
    return k > 0 ? str.repeat(k) : '';
  });
  db.function('pe_reverse', det, (s: unknown) => (s === null ? null : chars(s).reverse().join('')));
  db.function('pe_split_part', det, (s: unknown, d: unknown, n: unknown) => {
    if (s === null || d === null || n === null) return null;
    const k = count(n);
    if (k === 0) return fail('field position must not be zero');
    const str = String(s);
    const parts = String(d) === '' ? (str === '' ? [] : [str]) : str.split(String(d));
    const i = k > 0 ? k - 1 : parts.length + k;
    return parts[i] ?? '';
  });
  db.function('pe_initcap', det, (s: unknown) => {
    if (s === null) return null;
    let out = '';
    let inWord = false;
    for (const ch of String(s)) {
      const word = /[\p{L}\p{N}]/u.test(ch);
      out += word ? (inWord ? ch.toLowerCase() : ch.toUpperCase()) : ch;
      inWord = word;
    }
    return out;
  });
  db.function('pe_md5', det, (s: unknown) => {
    if (s === null) return null;
    const crypto = process.getBuiltinModule('node:crypto') as typeof import('node:crypto');
    return crypto.createHash('md5').update(typeof s === 'string' ? s : s instanceof Uint8Array ? s : String(s)).digest('hex');
  });
  db.function('pe_concat_ws', { deterministic: true, varargs: true, safeIntegers: true }, (sep: unknown, ...xs: unknown[]) => {
    if (sep === null) return null;
    return xs.filter((x) => x !== null).map(String).join(String(sep));
  });

  // ---- POSIX regular expressions (Postgres' ARE, for the common subset JavaScript shares)
  const CLASSES: Record<string, string> = {
    alpha: 'a-zA-Z', digit: '0-9', alnum: 'a-zA-Z0-9', upper: 'A-Z', lower: 'a-z', space: '\\s', punct: '!-\\/:-@\\[-`{-~', xdigit: '0-9A-Fa-f', word: '\\w',
  };
  const cache = new Map<string, RegExp>();
  const regex = (p: unknown, flags: string): RegExp => {
    const key = `${flags}/${String(p)}`;
    let re = cache.get(key);
    if (re) return re;
    const src = String(p)
      .replace(/\[:(\w+):\]/g, (m, c: string) => CLASSES[c] ?? m)
      .replace(/\\m/g, '\\b(?=\\w)')
      .replace(/\\M/g, '\\b(?<=\\w)')
      .replace(/\\y/g, '\\b')
      .replace(/\\Y/g, '\\B');
    try {
      re = new RegExp(src, `${flags}s`);
    } catch (err) {
      return fail(`invalid regular expression: ${(err as Error).message.replace(/^Invalid regular expression: /, '')}`);
    }
    if (cache.size > 500) cache.clear();
    cache.set(key, re);
    return re;
  };
  const flagsOf = (f: unknown, allowGlobal: boolean): { js: string; global: boolean; quoted: boolean } => {
    let js = '';
    let global = false;
    let quoted = false;
    for (const c of f === null || f === undefined ? '' : String(f)) {
      if (c === 'g' && allowGlobal) global = true;
      else if (c === 'i') js = 'i';
      else if (c === 'c') js = '';
      else if (c === 'q') quoted = true;
      else if (c === 'g') return fail(`regexp_match() does not support the "global" option`);
      else return fail(`invalid regular expression option: "${c}"`);
    }
    return { js, global, quoted };
  };
  db.function('pe_regex', det, (s: unknown, p: unknown, ci: unknown) => (s === null || p === null ? null : regex(p, Number(ci) ? 'i' : '').test(String(s)) ? 1 : 0));
  db.function('pe_regexp_replace', { deterministic: true, varargs: true }, (s: unknown, p: unknown, r: unknown, f?: unknown) => {
    if (s === null || p === null || r === null || f === null) return null;
    const { js, global, quoted } = flagsOf(f, true);
    const re = regex(quoted ? String(p).replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : p, global ? `${js}g` : js);
    const repl = String(r);
    return String(s).replace(re, (...m: unknown[]) => {
      // note: the callback's arguments are the match, its groups, the offset and the input (and named groups when any).
      const g = m.slice(0, typeof m[m.length - 1] === 'object' ? -3 : -2) as Array<string | undefined>;
      return repl.replace(/\\(\d|&|\\)/g, (_all, k: string) => (k === '\\' ? '\\' : k === '&' ? g[0]! : (g[Number(k)] ?? '')));
    });
  });
  db.function('pe_regexp_match', { deterministic: true, varargs: true }, (s: unknown, p: unknown, f?: unknown) => {
    if (s === null || p === null || f === null) return null;
    const { js, quoted } = flagsOf(f, false);
    const m = regex(quoted ? String(p).replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : p, js).exec(String(s));
    if (!m) return null;
    return JSON.stringify(m.length > 1 ? m.slice(1).map((x) => x ?? null) : [m[0]]);
  });
  // ---- jsonb editing. Values are stored JSON text; results are written in jsonb's key order.
  const parse = (v: unknown): unknown => {
    if (typeof v === 'number' || typeof v === 'bigint') return Number(v);
    try {
      return JSON.parse(String(v));
    } catch {
      return fail(`invalid input syntax for type json: "${String(v)}"`);
    }
  };
  const canon = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(canon);
    if (v === null || typeof v !== 'object') return v;
    const keys = Object.keys(v).sort((a, b) => {
      const la = Buffer.byteLength(a);
      const lb = Buffer.byteLength(b);
      return la !== lb ? la - lb : Buffer.compare(Buffer.from(a), Buffer.from(b));
    });
    const out: Record<string, unknown> = {};
    for (const k of keys) out[k] = canon((v as Record<string, unknown>)[k]);
    return out;
  };
  const out = (v: unknown): string => JSON.stringify(canon(v));
  const isObj = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
  const pathOf = (p: unknown): string[] => {
    const t = String(p).trim();
    if (t.startsWith('[')) return (parse(t) as unknown[]).map(String);
    if (!t.startsWith('{') || !t.endsWith('}')) return fail(`malformed array literal: "${t}"`);
    const inner = t.slice(1, -1).trim();
    return inner === '' ? [] : inner.split(',').map((x) => x.trim().replace(/^"(.*)"$/, '$1'));
  };
  /** An array index of a path step (negative counts from the end), or null when it is not an integer. */
  const indexOf = (k: string, len: number): number | null => {
    if (!/^-?\d+$/.test(k)) return null;
    const i = Number(k);
    return i < 0 ? len + i : i;
  };
  db.function('pe_jconcat', det, (a: unknown, b: unknown) => {
    if (a === null || b === null) return null;
    const x = parse(a);
    const y = parse(b);
    if (isObj(x) && isObj(y)) return out({ ...x, ...y });
    const xs = Array.isArray(x) ? x : [x];
    const ys = Array.isArray(y) ? y : [y];
    return out([...xs, ...ys]);
  });
  db.function('pe_jdelete', det, (a: unknown, k: unknown, byIndex: unknown) => {
    if (a === null || k === null) return null;
    const x = parse(a);
    if (Number(byIndex)) {
      if (isObj(x)) return fail('cannot delete from object using integer index');
      if (!Array.isArray(x)) return fail('cannot delete from scalar');
      const i = indexOf(String(k), x.length);
      return out(i === null || i < 0 || i >= x.length ? x : x.filter((_, j) => j !== i));
    }
    if (isObj(x)) {
      const keys = new Set(String(k).startsWith('[') ? (JSON.parse(String(k)) as unknown[]).map(String) : [String(k)]);
      return out(Object.fromEntries(Object.entries(x).filter(([key]) => !keys.has(key))));
    }
    if (Array.isArray(x)) return out(x.filter((e) => e !== String(k)));
    return fail('cannot delete from scalar');
  });
  db.function('pe_jdelete_path', det, (a: unknown, p: unknown) => {
    if (a === null || p === null) return null;
    const x = parse(a);
    if (!isObj(x) && !Array.isArray(x)) return fail('cannot delete path in scalar');
    const path = pathOf(p);
    if (!path.length) return out(x);
    const del = (node: unknown, depth: number): unknown => {
      const k = path[depth]!;
      const last = depth === path.length - 1;
      if (Array.isArray(node)) {
        const i = indexOf(k, node.length);
        if (i === null) return fail(`path element at position ${depth + 1} is not an integer: "${k}"`);
        if (i < 0 || i >= node.length) return node;
        return last ? node.filter((_, j) => j !== i) : node.map((e, j) => (j === i ? del(e, depth + 1) : e));
      }
      if (isObj(node)) {
        if (!Object.prototype.hasOwnProperty.call(node, k)) return node;
        if (last) return Object.fromEntries(Object.entries(node).filter(([key]) => key !== k));
        return { ...node, [k]: del(node[k], depth + 1) };
      }
      return node;
    };
    return out(del(x, 0));
  });
  /** jsonb_set (insert: false) and jsonb_insert (insert: true, before or after an array position). */
  const setPath = (target: unknown, path: string[], value: unknown, create: boolean, insert: false | 'before' | 'after'): unknown => {
    const walk = (node: unknown, depth: number): unknown => {
      const k = path[depth]!;
      const last = depth === path.length - 1;
      if (Array.isArray(node)) {
        let i = indexOf(k, node.length);
        if (i === null) return fail(`path element at position ${depth + 1} is not an integer: "${k}"`);
        if (!last) return i >= 0 && i < node.length ? node.map((e, j) => (j === i ? walk(e, depth + 1) : e)) : node;
        if (insert) {
          if (i < 0) i = 0;
          const at = Math.min(insert === 'after' && i < node.length ? i + 1 : i, node.length);
          return [...node.slice(0, at), value, ...node.slice(at)];
        }
        if (i >= 0 && i < node.length) return node.map((e, j) => (j === i ? value : e));
        if (!create) return node;
        return i < 0 ? [value, ...node] : [...node, value];
      }
      if (isObj(node)) {
        const has = Object.prototype.hasOwnProperty.call(node, k);
        if (!last) return has ? { ...node, [k]: walk(node[k], depth + 1) } : node;
        if (insert && has) return fail('cannot replace existing key');
        if (!has && !create && !insert) return node;
        return { ...node, [k]: value };
      }
      if (depth === 0) return fail(insert ? 'cannot set path in scalar' : 'cannot set path in scalar');
      return node;
    };
    return path.length ? walk(target, 0) : target;
  };
  db.function('pe_jsonb_set', { deterministic: true, varargs: true }, (t: unknown, p: unknown, v: unknown, c?: unknown) => {
    if (t === null || p === null || v === null || c === null) return null;
    return out(setPath(parse(t), pathOf(p), parse(v), c === undefined || Number(c) !== 0, false));
  });
  db.function('pe_jsonb_insert', { deterministic: true, varargs: true }, (t: unknown, p: unknown, v: unknown, after?: unknown) => {
    if (t === null || p === null || v === null || after === null) return null;
    return out(setPath(parse(t), pathOf(p), parse(v), true, after !== undefined && Number(after) !== 0 ? 'after' : 'before'));
  });
  const strip = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(strip);
    if (!isObj(v)) return v;
    return Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null).map(([k, x]) => [k, strip(x)]));
  };
  db.function('pe_jsonb_strip_nulls', det, (a: unknown) => (a === null ? null : out(strip(parse(a)))));

  // ---- text[] (stored as a JSON array): containment and overlap compare non-NULL elements.
  const elems = (v: unknown): unknown[] => {
    const x = parse(v);
    return Array.isArray(x) ? x : fail(`malformed array literal: "${String(v)}"`);
  };
  db.function('pe_arr_contains', det, (a: unknown, b: unknown) => {
    if (a === null || b === null) return null;
    const xs = elems(a);
    return elems(b).every((e) => e !== null && xs.includes(e)) ? 1 : 0;
  });
  db.function('pe_arr_overlap', det, (a: unknown, b: unknown) => {
    if (a === null || b === null) return null;
    const xs = elems(a);
    return elems(b).some((e) => e !== null && xs.includes(e)) ? 1 : 0;
  });
}
