import type Database from 'better-sqlite3';

/**
 * The SQLite functions the Postgres translator emits (src/sql/pg/), registered on the
 * worker connections that run caller-supplied SQL (src/sql/worker/).
 *
 * note: the worker thread imports it (src/sql/worker/entry.ts, its own bundle entry).
 */
export function registerFunctions(db: Database.Database, deadline: { at: number; n: number }): void {
  const det = { deterministic: true };
  // Called from every emitted WHERE: ends a runaway statement once past its time limit.
  db.function('pe_tick', { deterministic: false, varargs: true }, () => {
    if ((++deadline.n & 255) === 0 && Date.now() > deadline.at) throw new Error('pe_statement_timeout');
    return 1;
  });

  const pad = (n: number, w = 2): string => String(n).padStart(w, '0');
  /** Parses a Postgres-style timestamp text as UTC unless it names an offset. */
  const parseTs = (v: unknown): Date | null => {
    if (v === null || v === undefined) return null;
    if (typeof v === 'number' || typeof v === 'bigint') return null;
    let s = String(v).trim();
    const low = s.toLowerCase();
    if (low === 'now') return new Date();
    if (low === 'epoch') return new Date(0);
    // note: a field past its range (month 13, February 30, hour 25) is Postgres' 22008, never a rolled-over date.
    const inRange = (y: number, mo: number, d: number, h = 0, mi = 0, sec = 0): void => {
      const t = new Date(Date.UTC(y, mo - 1, d));
      if (t.getUTCMonth() !== mo - 1 || t.getUTCDate() !== d || h > 23 || mi > 59 || sec > 59) throw new Error(`pe_invalid_input: date/time field value out of range: "${s}"`);
    };
    let m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
    if (m) {
      inRange(+m[1]!, +m[2]!, +m[3]!);
      return new Date(Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!));
    }
    m = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?$/.exec(s);
    if (!m) {
      s = s.replace(' ', 'T');
      const d = new Date(s);
      return Number.isNaN(d.getTime()) ? null : d;
    }
    inRange(+m[1]!, +m[2]!, +m[3]!, +m[4]!, +m[5]!, m[6] ? +m[6] : 0);
    const ms = m[7] ? Math.round(Number(`0.${m[7]}`) * 1000) : 0;
    let t = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, m[6] ? +m[6] : 0, ms);
    const off = m[8];
    if (off && off.toUpperCase() !== 'Z') {
      const sign = off[0] === '-' ? -1 : 1;
      const digits = off.slice(1).replace(':', '');
      const mins = Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2) || '0');
      t -= sign * mins * 60000;
    }
    return new Date(t);
  };
  const iso = (d: Date): string => d.toISOString();
  const bad = (what: string, v: unknown): never => {
    throw new Error(`pe_invalid_input: invalid input syntax for type ${what}: "${String(v)}"`);
  };

  /** text → the stored timestamptz form (ISO-8601 UTC with milliseconds). */
  db.function('pe_ts', det, (v: unknown) => {
    if (v === null) return null;
    const d = parseTs(v);
    if (!d) return bad('timestamp with time zone', v);
    return iso(d);
  });
  db.function('pe_date', det, (v: unknown) => {
    if (v === null) return null;
    const d = parseTs(v);
    if (!d) return bad('date', v);
    return iso(d).slice(0, 10);
  });

  /** Postgres interval text ('1 day', '2 hours 30 minutes', '1 mon') → {months, ms}. */
  const parseInterval = (s: string): { months: number; ms: number } => {
    const units: Record<string, [number, number]> = {
      microsecond: [0, 0.001], millisecond: [0, 1], second: [0, 1000], minute: [0, 60000], hour: [0, 3600000],
      day: [0, 86400000], week: [0, 604800000], month: [1, 0], mon: [1, 0], year: [12, 0], decade: [120, 0], century: [1200, 0],
    };
    let months = 0;
    let ms = 0;
    const re = /([+-]?\d+(?:\.\d+)?)\s*([a-z]+)|([+-]?)(\d+):(\d{2})(?::(\d{2}(?:\.\d+)?))?/gi;
    let rest = s.trim();
    let m: RegExpExecArray | null;
    let any = false;
    while ((m = re.exec(s)) !== null) {
      any = true;
      rest = rest.replace(m[0], '');
      if (m[2]) {
        let u = m[2].toLowerCase();
        if (u.endsWith('s') && u !== 's') u = u.slice(0, -1);
        const alias: Record<string, string> = { sec: 'second', min: 'minute', hr: 'hour', h: 'hour', d: 'day', y: 'year', yr: 'year', ms: 'millisecond', w: 'week', m: 'minute', s: 'second' };
        u = alias[u] ?? u;
        const f = units[u];
        if (!f) return bad('interval', s);
        const n = Number(m[1]);
        months += n * f[0];
        ms += n * f[1];
      } else {
        const sign = m[3] === '-' ? -1 : 1;
        ms += sign * ((+m[4]!) * 3600000 + (+m[5]!) * 60000 + (m[6] ? Number(m[6]) * 1000 : 0));
      }
    }
    if (!any || rest.replace(/[\s,]/g, '') !== '') return bad('interval', s);
    return { months, ms };
  };
  /** timestamptz ± interval; months move the calendar like Postgres (clamped to the month's end). */
  db.function('pe_ts_add', det, (ts: unknown, interval: unknown, sign: unknown) => {
    if (ts === null || interval === null) return null;
    const d = parseTs(ts);
    if (!d) return bad('timestamp with time zone', ts);
    const iv = parseInterval(String(interval));
    const k = Number(sign);
    let t = d.getTime();
    if (iv.months) {
      const y = d.getUTCFullYear();
      const mo = d.getUTCMonth() + k * iv.months;
      const target = new Date(Date.UTC(y, mo, 1));
      const last = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
      target.setUTCDate(Math.min(d.getUTCDate(), last));
      target.setUTCHours(d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds());
      t = target.getTime();
    }
    return iso(new Date(t + k * iv.ms));
  });

  db.function('pe_date_trunc', det, (unit: unknown, ts: unknown) => {
    if (unit === null || ts === null) return null;
    const d = parseTs(ts);
    if (!d) return bad('timestamp with time zone', ts);
    const u = String(unit).toLowerCase();
    const y = d.getUTCFullYear();
    const mo = d.getUTCMonth();
    const day = d.getUTCDate();
    let t: number;
    switch (u) {
      case 'millennium': t = Date.UTC(Math.floor((y - 1) / 1000) * 1000 + 1, 0, 1); break;
      case 'century': t = Date.UTC(Math.floor((y - 1) / 100) * 100 + 1, 0, 1); break;
      case 'decade': t = Date.UTC(Math.floor(y / 10) * 10, 0, 1); break;
      case 'year': t = Date.UTC(y, 0, 1); break;
      case 'quarter': t = Date.UTC(y, Math.floor(mo / 3) * 3, 1); break;
      case 'month': t = Date.UTC(y, mo, 1); break;
      case 'week': {
        const dow = (d.getUTCDay() + 6) % 7;
        t = Date.UTC(y, mo, day - dow);
        break;
      }
      case 'day': t = Date.UTC(y, mo, day); break;
      case 'hour': t = Date.UTC(y, mo, day, d.getUTCHours()); break;
      case 'minute': t = Date.UTC(y, mo, day, d.getUTCHours(), d.getUTCMinutes()); break;
      case 'second': t = Date.UTC(y, mo, day, d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds()); break;
      case 'milliseconds': case 'millisecond': case 'microseconds': t = d.getTime(); break;
      default: throw new Error(`pe_invalid_input: unit "${u}" not recognized for date_trunc`);
    }
    return iso(new Date(t));
  });

  db.function('pe_extract', det, (field: unknown, ts: unknown) => {
    if (field === null || ts === null) return null;
    const d = parseTs(ts);
    if (!d) return bad('timestamp with time zone', ts);
    const f = String(field).toLowerCase();
    switch (f) {
      case 'year': return d.getUTCFullYear();
      case 'month': return d.getUTCMonth() + 1;
      case 'day': return d.getUTCDate();
      case 'hour': return d.getUTCHours();
      case 'minute': return d.getUTCMinutes();
      case 'second': return d.getUTCSeconds() + d.getUTCMilliseconds() / 1000;
      case 'milliseconds': return d.getUTCSeconds() * 1000 + d.getUTCMilliseconds();
      case 'dow': return d.getUTCDay();
      case 'isodow': return d.getUTCDay() === 0 ? 7 : d.getUTCDay();
      case 'doy': return Math.floor((d.getTime() - Date.UTC(d.getUTCFullYear(), 0, 1)) / 86400000) + 1;
      case 'quarter': return Math.floor(d.getUTCMonth() / 3) + 1;
      case 'epoch': return d.getTime() / 1000;
      case 'week': {
        const t = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
        const dn = (t.getUTCDay() + 6) % 7;
        t.setUTCDate(t.getUTCDate() - dn + 3);
        const firstThu = new Date(Date.UTC(t.getUTCFullYear(), 0, 4));
        return 1 + Math.round(((t.getTime() - firstThu.getTime()) / 86400000 - 3 + ((firstThu.getUTCDay() + 6) % 7)) / 7);
      }
      case 'decade': return Math.floor(d.getUTCFullYear() / 10);
      case 'century': return Math.ceil(d.getUTCFullYear() / 100);
    }
    throw new Error(`pe_invalid_input: unit "${f}" not recognized for extract`);
  });
  db.function('pe_ts_text', det, (ts: unknown) => {
    if (ts === null) return null;
    const d = parseTs(ts);
    if (!d) return String(ts);
    const ms = d.getUTCMilliseconds();
    return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}${ms ? `.${pad(ms, 3).replace(/0+$/, '')}` : ''}+00`;
  });

  db.function('pe_ts_json', det, (ts: unknown) => {
    if (ts === null) return null;
    const d = parseTs(ts);
    return d ? iso(d).replace('Z', '+00:00').replace('.000+', '+') : String(ts);
  });
  db.function('pe_float_text', det, (v: unknown) => (v === null ? null : String(Number(v))));

  /** Postgres LIKE / ILIKE (backslash escapes; case-sensitive unless ci). */
  const likeCache = new Map<string, RegExp>();
  db.function('pe_like', det, (s: unknown, p: unknown, ci: unknown) => {
    if (s === null || p === null) return null;
    const key = `${ci ? 'i' : 'c'}${String(p)}`;
    let re = likeCache.get(key);
    if (!re) {
      let src = '';
      const pat = String(p);
      for (let i = 0; i < pat.length; i++) {
        const c = pat[i]!;
        if (c === '\\' && i + 1 < pat.length) src += pat[++i]!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
        else if (c === '%') src += '[\\s\\S]*';
        else if (c === '_') src += '[\\s\\S]';
        else src += c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      }
      re = new RegExp(`^${src}$`, ci ? 'iu' : 'u');
      if (likeCache.size > 500) likeCache.clear();
      likeCache.set(key, re);
    }
    return re.test(String(s)) ? 1 : 0;
  });

  /** greatest/least ignore NULLs like Postgres (SQLite's multi-argument max/min return NULL). */
  const cmp = (a: unknown, b: unknown): number => {
    const na = typeof a === 'number' || typeof a === 'bigint';
    const nb = typeof b === 'number' || typeof b === 'bigint';
    if (na && nb) return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
    if (na !== nb) return na ? -1 : 1;
    const sa = String(a);
    const sb = String(b);
    return sa < sb ? -1 : sa > sb ? 1 : 0;
  };
  const pick = (sign: number) => (...args: unknown[]) => {
    let best: unknown = null;
    for (const a of args) if (a !== null && (best === null || cmp(a, best) * sign > 0)) best = a;
    return best;
  };
  db.function('pe_greatest', { deterministic: true, varargs: true, safeIntegers: true }, pick(1));
  db.function('pe_least', { deterministic: true, varargs: true, safeIntegers: true }, pick(-1));

  // jsonb operators. Arguments are JSON text (or numbers SQLite kept as numbers).
  const parse = (v: unknown): unknown => {
    if (v === null || v === undefined) return undefined;
    if (typeof v === 'number' || typeof v === 'bigint') return Number(v);
    try {
      return JSON.parse(String(v));
    } catch {
      // note: Postgres' wording (22P02) names no value; its detail names the token.
      throw new Error('pe_invalid_input: invalid input syntax for type json');
    }
  };
  const step = (j: unknown, k: unknown): unknown => {
    if (j === undefined || j === null || typeof j !== 'object') return undefined;
    if (Array.isArray(j)) {
      if (typeof k !== 'number' && !(typeof k === 'bigint') && !/^-?\d+$/.test(String(k))) return undefined;
      let i = Number(k);
      if (i < 0) i += j.length;
      return j[i];
    }
    if (typeof k === 'number' || typeof k === 'bigint') return undefined;
    return Object.prototype.hasOwnProperty.call(j, String(k)) ? (j as Record<string, unknown>)[String(k)] : undefined;
  };
  const asText = (v: unknown): string | null => {
    if (v === undefined || v === null) return null;
    if (typeof v === 'string') return v;
    return JSON.stringify(v);
  };
  const asJson = (v: unknown): string | null => (v === undefined ? null : JSON.stringify(v));
  const pathOf = (p: unknown): string[] => {
    const s = String(p).trim();
    // note: a text[] value (ARRAY[…], a text[] column) is stored as a JSON array; a literal is '{a,b}'.
    if (s.startsWith('[')) {
      try {
        const a = JSON.parse(s) as unknown;
        if (Array.isArray(a)) return a.map((x) => String(x));
      } catch {
        return bad('text[]', p);
      }
    }
    if (!s.startsWith('{') || !s.endsWith('}')) return bad('text[]', p);
    const inner = s.slice(1, -1).trim();
    return inner === '' ? [] : inner.split(',').map((x) => x.trim().replace(/^"(.*)"$/, '$1'));
  };
  db.function('pe_jget', { deterministic: true, safeIntegers: false }, (j: unknown, k: unknown) => asJson(step(parse(j), k)));
  db.function('pe_jgett', { deterministic: true, safeIntegers: false }, (j: unknown, k: unknown) => asText(step(parse(j), k)));
  const walk = (j: unknown, p: unknown): unknown => {
    let cur = parse(j);
    for (const k of pathOf(p)) cur = step(cur, Array.isArray(cur) ? k : k);
    return cur;
  };
  db.function('pe_jpath', det, (j: unknown, p: unknown) => (j === null || p === null ? null : asJson(walk(j, p))));
  db.function('pe_jpatht', det, (j: unknown, p: unknown) => (j === null || p === null ? null : asText(walk(j, p))));
  const contains = (a: unknown, b: unknown, top: boolean): boolean => {
    if (Array.isArray(a)) {
      if (Array.isArray(b)) return b.every((x) => a.some((y) => contains(y, x, false)));
      return top && (b === null || typeof b !== 'object') ? a.some((y) => contains(y, b, false)) : false;
    }
    if (a !== null && typeof a === 'object') {
      if (b === null || typeof b !== 'object' || Array.isArray(b)) return false;
      return Object.entries(b).every(([k, v]) => Object.prototype.hasOwnProperty.call(a, k) && contains((a as Record<string, unknown>)[k], v, false));
    }
    return a === b;
  };
  db.function('pe_jcontains', det, (a: unknown, b: unknown) => (a === null || b === null ? null : contains(parse(a), parse(b), true) ? 1 : 0));
  const has = (j: unknown, k: string): boolean => {
    if (Array.isArray(j)) return j.some((x) => x === k);
    if (j !== null && typeof j === 'object') return Object.prototype.hasOwnProperty.call(j, k);
    return typeof j === 'string' && j === k;
  };
  db.function('pe_jexists', det, (j: unknown, k: unknown) => (j === null || k === null ? null : has(parse(j), String(k)) ? 1 : 0));
  db.function('pe_jexists_any', det, (j: unknown, ks: unknown) => {
    if (j === null || ks === null) return null;
    const v = parse(j);
    return pathOf(ks).some((k) => has(v, k)) ? 1 : 0;
  });
  db.function('pe_jexists_all', det, (j: unknown, ks: unknown) => {
    if (j === null || ks === null) return null;
    const v = parse(j);
    return pathOf(ks).every((k) => has(v, k)) ? 1 : 0;
  });
  /** Normalises JSON text to Postgres jsonb's canonical form (key order by length then bytes, deduplicated). */
  const canon = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(canon);
    if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v).sort((a, b) => {
        const la = Buffer.byteLength(a);
        const lb = Buffer.byteLength(b);
        return la !== lb ? la - lb : Buffer.compare(Buffer.from(a), Buffer.from(b));
      });
      const out: Record<string, unknown> = {};
      for (const k of keys) out[k] = canon((v as Record<string, unknown>)[k]);
      return out;
    }
    return v;
  };
  db.function('pe_jsonb', det, (v: unknown) => (v === null ? null : JSON.stringify(canon(parse(v)))));
  db.function('pe_jtypeof', det, (v: unknown) => {
    if (v === null) return null;
    const j = parse(v);
    if (j === null) return 'null';
    if (Array.isArray(j)) return 'array';
    return typeof j === 'object' ? 'object' : typeof j;
  });
  db.function('pe_jarray_length', det, (v: unknown) => {
    if (v === null) return null;
    const j = parse(v);
    if (!Array.isArray(j)) throw new Error('pe_invalid_input: cannot get array length of a non-array');
    return j.length;
  });
  /** text[] literal ('{a,b}') or JSON array text → the stored JSON array. */
  db.function('pe_text_array', det, (v: unknown) => {
    if (v === null) return null;
    const s = String(v).trim();
    if (s.startsWith('[')) return JSON.stringify((parse(s) as unknown[]).map((x) => (x === null ? null : String(x))));
    return JSON.stringify(pathOf(s).map((x) => (x === 'NULL' ? null : x)));
  });
  db.function('pe_bool', det, (v: unknown) => {
    if (v === null) return null;
    if (typeof v === 'number' || typeof v === 'bigint') return Number(v) !== 0 ? 1 : 0;
    const s = String(v).trim().toLowerCase();
    if (['t', 'true', 'y', 'yes', 'on', '1'].includes(s)) return 1;
    if (['f', 'false', 'n', 'no', 'off', '0'].includes(s)) return 0;
    return bad('boolean', v);
  });
  /** text or a number → an integer of `bits` bits (Postgres' integer or bigint input and range). */
  const toInt = (v: unknown, bits: 32 | 64, what = bits === 32 ? 'integer' : 'bigint'): bigint | null => {
    if (v === null) return null;
    let b: bigint;
    if (typeof v === 'bigint') b = v;
    else if (typeof v === 'number') {
      if (!Number.isFinite(v)) return bad(what, v);
      b = BigInt(Math.round(v));
    } else {
      const s = String(v).trim();
      if (!/^[+-]?\d+$/.test(s)) return bad(what, v);
      b = BigInt(s);
    }
    // note: past 64 bits SQLite cannot hold it (better-sqlite3 would throw a RangeError, a 500): Postgres' 22003.
    const max = bits === 32 ? 2147483647n : 9223372036854775807n;
    if (b > max || b < -max - 1n) {
      // note: Postgres words text input and a number's conversion differently (both 22003).
      throw new Error(typeof v === 'string' ? `pe_invalid_input: value "${v}" is out of range for type ${what}` : `pe_invalid_input: ${what} out of range`);
    }
    return b;
  };
  // note: pe_int is a coercion from context (a comparison, an insert): Postgres names the column's type, mostly integer.
  db.function('pe_int', { deterministic: true, safeIntegers: true }, (v: unknown) => toInt(v, 64, 'integer'));
  db.function('pe_int8', { deterministic: true, safeIntegers: true }, (v: unknown) => toInt(v, 64));
  db.function('pe_int4', { deterministic: true, safeIntegers: true }, (v: unknown) => toInt(v, 32));
  db.function('pe_float', det, (v: unknown) => {
    if (v === null) return null;
    if (typeof v === 'number' || typeof v === 'bigint') return Number(v);
    const s = String(v).trim();
    const n = Number(s);
    if (s === '' || Number.isNaN(n)) return bad('double precision', v);
    return n;
  });
  const canonicalUuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
  db.function('pe_uuid', det, (v: unknown) => {
    if (v === null) return null;
    if (typeof v === 'string' && canonicalUuid.test(v)) return v;
    const s = String(v).trim().toLowerCase();
    if (!/^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/.test(s)) return bad('uuid', v);
    const h = s.replaceAll('-', '');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  });
  // note: numeric(p, s): a rounded value needs fewer than 10^(p - s) in magnitude (Postgres' "numeric field overflow").
  db.function('pe_numeric_fits', det, (v: unknown, intDigits: unknown) => {
    if (v === null) return null;
    if (Math.abs(Number(v)) >= 10 ** Number(intDigits)) throw new Error('pe_invalid_input: numeric field overflow');
    return v;
  });
  db.function('pe_error', { deterministic: false }, (msg: unknown) => {
    throw new Error(`pe_invalid_input: ${String(msg)}`);
  });
}
