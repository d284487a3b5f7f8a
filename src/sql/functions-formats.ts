import type Database from 'better-sqlite3';

/**
 * The SQLite functions that format and measure time and numbers as Postgres does:
 * `to_char` (the common date and number patterns), `age`, timestamp − timestamp and the
 * fields of an interval (`extract(epoch from …)`). Intervals travel as Postgres' own text
 * (`1 year 2 mons 3 days 04:05:06`), the form its clients print.
 */
export function registerFormats(db: Database.Database): void {
  const det = { deterministic: true };
  const fail = (msg: string): never => {
    throw new Error(`pe_invalid_input: ${msg}`);
  };
  const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
  const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
  const z = (n: number, w: number): string => String(Math.abs(n)).padStart(w, '0');
  const time = (v: unknown): Date => {
    const s = String(v).trim();
    const d = new Date(/^\d{4}-\d\d-\d\d$/.test(s) ? `${s}T00:00:00Z` : /[zZ]|[+-]\d\d(:?\d\d)?$/.test(s) ? s.replace(' ', 'T') : `${s.replace(' ', 'T')}Z`);
    return Number.isNaN(d.getTime()) ? fail(`invalid input syntax for type timestamp with time zone: "${s}"`) : d;
  };

  /** to_char(timestamp, pattern): the patterns of docs/sql.md; FM drops padding; "…" is literal text. */
  db.function('pe_to_char_ts', det, (v: unknown, f: unknown) => {
    if (v === null || f === null) return null;
    const d = time(v);
    const y = d.getUTCFullYear();
    const mo = d.getUTCMonth();
    const day = d.getUTCDate();
    const h = d.getUTCHours();
    const dow = d.getUTCDay();
    const doy = Math.floor((Date.UTC(y, mo, day) - Date.UTC(y, 0, 1)) / 86400000) + 1;
    const cased = (word: string, tok: string): string => (tok === tok.toUpperCase() ? word.toUpperCase() : tok[0] === tok[0]!.toLowerCase() ? word.toLowerCase() : word);
    const text = (word: string, tok: string, width: number, fm: boolean): string => {
      const w = cased(word, tok);
      return fm ? w : w.padEnd(width, ' ');
    };
    // note: ISO 8601 week-numbering (IYYY, IW, ID, IDDD): weeks start on Monday, week 1 holds the year's first Thursday.
    const iso = (): { year: number; week: number } => {
      const thu = new Date(Date.UTC(y, mo, day + 3 - ((dow + 6) % 7)));
      const year = thu.getUTCFullYear();
      return { year, week: 1 + Math.floor((thu.getTime() - Date.UTC(year, 0, 1)) / (7 * 86400000)) };
    };
    const isoDay = (dow + 6) % 7 + 1;
    const nums: Array<[string, () => number, number]> = [
      ['IYYY', () => iso().year, 4], ['IYY', () => iso().year % 1000, 3], ['IY', () => iso().year % 100, 2],
      ['IW', () => iso().week, 2], ['IDDD', () => (iso().week - 1) * 7 + isoDay, 3], ['ID', () => isoDay, 1],
      ['WW', () => Math.floor((doy - 1) / 7) + 1, 2], ['W', () => Math.floor((day - 1) / 7) + 1, 1],
      ['CC', () => (y > 0 ? Math.floor((y - 1) / 100) + 1 : -Math.floor(-y / 100) - 1), 2], ['J', () => Date.UTC(y, mo, day) / 86400000 + 2440588, 1],
      ['SSSSS', () => h * 3600 + d.getUTCMinutes() * 60 + d.getUTCSeconds(), 1], ['SSSS', () => h * 3600 + d.getUTCMinutes() * 60 + d.getUTCSeconds(), 1],
      ['YYYY', () => y, 4], ['YYY', () => y % 1000, 3], ['YY', () => y % 100, 2], ['Y', () => y % 10, 1],
      ['HH24', () => h, 2], ['HH12', () => h % 12 || 12, 2], ['HH', () => h % 12 || 12, 2], ['MI', () => d.getUTCMinutes(), 2],
      ['SS', () => d.getUTCSeconds(), 2], ['MS', () => d.getUTCMilliseconds(), 3], ['US', () => d.getUTCMilliseconds() * 1000, 6],
      ['DDD', () => doy, 3], ['DD', () => day, 2], ['D', () => dow + 1, 1], ['MM', () => mo + 1, 2], ['Q', () => Math.floor(mo / 3) + 1, 1],
    ];
    const pat = String(f);
    let out = '';
    let i = 0;
    while (i < pat.length) {
      let fm = false;
      if (pat.slice(i, i + 2).toUpperCase() === 'FM') {
        fm = true;
        i += 2;
      }
      const rest = pat.slice(i);
      const up = rest.toUpperCase();
      if (rest[0] === '"') {
        const end = pat.indexOf('"', i + 1);
        out += end < 0 ? pat.slice(i + 1) : pat.slice(i + 1, end);
        i = end < 0 ? pat.length : end + 1;
        continue;
      }
      const word = (['MONTH', 'MON', 'DAY', 'DY'] as const).find((t) => up.startsWith(t));
      if (word) {
        const tok = rest.slice(0, word.length);
        if (word === 'MONTH') out += text(MONTHS[mo]!, tok, 9, fm);
        else if (word === 'MON') out += cased(MONTHS[mo]!.slice(0, 3), tok);
        else if (word === 'DAY') out += text(DAYS[dow]!, tok, 9, fm);
        else out += cased(DAYS[dow]!.slice(0, 3), tok);
        i += word.length;
        continue;
      }
      const mer = (['A.M.', 'P.M.', 'AM', 'PM'] as const).find((t) => up.startsWith(t));
      if (mer) {
        const tok = rest.slice(0, mer.length);
        const m = (h < 12 ? 'AM' : 'PM').split('').join(mer.includes('.') ? '.' : '') + (mer.includes('.') ? '.' : '');
        out += tok === tok.toLowerCase() ? m.toLowerCase() : m;
        i += mer.length;
        continue;
      }
      // note: the offset patterns of the session zone, UTC here.
      const zone = (['TZH', 'TZM', 'OF'] as const).find((t) => up.startsWith(t));
      if (zone) {
        out += zone === 'TZM' ? '00' : zone === 'TZH' ? '+00' : '+00';
        i += zone.length;
        continue;
      }
      if (up.startsWith('RM')) {
        const roman = ROMAN[mo]!;
        out += (rest[0] === 'r' ? roman.toLowerCase() : roman).padEnd(fm ? 0 : 4, ' ');
        i += 2;
        continue;
      }
      if (up.startsWith('TZ')) {
        out += rest[0] === 't' ? 'utc' : 'UTC';
        i += 2;
        continue;
      }
      const n = nums.find(([t]) => up.startsWith(t));
      if (n) {
        const v = n[1]();
        out += fm ? String(v) : z(v, n[2]);
        i += n[0].length;
        // note: TH / th after a number is its ordinal suffix (1st, 22ND), as Postgres writes it.
        const suffix = pat.slice(i, i + 2);
        if (suffix === 'TH' || suffix === 'th') {
          const ord = v % 100 >= 11 && v % 100 <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][v % 10] ?? 'th');
          out += suffix === 'TH' ? ord.toUpperCase() : ord;
          i += 2;
        }
        continue;
      }
      if (rest[0] === '\\' && rest.length > 1) {
        out += rest[1];
        i += 2;
        continue;
      }
      out += rest[0] ?? '';
      i += 1;
    }
    return out;
  });

  /** to_char(number, pattern): 9 (digit or blank), 0 (digit), . and D, , and G, FM, S, a leading sign. */
  db.function('pe_to_char_num', det, (v: unknown, f: unknown) => {
    if (v === null || f === null) return null;
    const n = Number(v);
    let pat = String(f);
    const fm = /FM/i.test(pat);
    pat = pat.replace(/FM/gi, '');
    const explicitSign = /^S/i.test(pat);
    pat = pat.replace(/^S/i, '').replace(/D/gi, '.').replace(/G/gi, ',');
    if (/[^90.,]/.test(pat)) return fail(`to_char: unsupported number pattern "${String(f)}"`);
    const dot = pat.indexOf('.');
    const intPat = dot < 0 ? pat : pat.slice(0, dot);
    const fracPat = dot < 0 ? '' : pat.slice(dot + 1).replace(/,/g, '');
    const intSlots = intPat.replace(/,/g, '').length;
    const scale = fracPat.length;
    // note: half away from zero on the shortest decimal text, as numeric rounds.
    const abs = Math.abs(n);
    const fixed = (() => {
      const [ip, fp = ''] = (/e/.test(String(abs)) ? abs.toFixed(20) : String(abs)).split('.');
      const digits = ip! + fp.padEnd(scale + 1, '0');
      const keep = ip!.length + scale;
      let b = BigInt(digits.slice(0, keep) || '0');
      if (digits[keep]! >= '5') b += 1n;
      const s = b.toString().padStart(scale + 1, '0');
      return { int: s.slice(0, s.length - scale).replace(/^0+(?=\d)/, ''), frac: s.slice(s.length - scale) };
    })();
    const neg = n < 0 && (fixed.int !== '0' || /[1-9]/.test(fixed.frac));
    const intDigits = fixed.int === '0' ? '' : fixed.int;
    if (intDigits.length > intSlots) {
      const hashes = (explicitSign || !fm ? ' ' : '') + pat.replace(/[90]/g, '#');
      return fm ? hashes.trim() : hashes;
    }
    // Integer part, right to left over the pattern; a 0 forces zeros from its position on.
    const firstZero = intPat.replace(/,/g, '').indexOf('0');
    let body = '';
    let slot = intSlots - 1;
    let started = false;
    const digitsR = intDigits.split('').reverse();
    const zeroIntShown = intDigits === '' && scale === 0;
    const chars: string[] = [];
    for (let k = intPat.length - 1; k >= 0; k--) {
      const c = intPat[k]!;
      const idx = intSlots - 1 - slot;
      if (c === ',') {
        chars.push(',');
        continue;
      }
      const digit = digitsR[idx];
      const forced = firstZero >= 0 && slot >= firstZero;
      if (digit !== undefined) chars.push(digit);
      else if (forced || (zeroIntShown && idx === 0)) chars.push('0');
      else chars.push(' ');
      slot--;
    }
    // Separators with no digit before them are blank; the sign sits right before the first digit.
    const left = chars.reverse();
    for (let k = 0; k < left.length; k++) {
      if (left[k] === ',' && !started) left[k] = ' ';
      if (/\d/.test(left[k]!)) started = true;
    }
    const firstDigit = left.findIndex((c) => /\d/.test(c));
    const sign = neg ? '-' : explicitSign ? '+' : ' ';
    if (firstDigit < 0) body = ' '.repeat(left.length) + sign;
    else body = left.slice(0, firstDigit).join('') + sign + left.slice(firstDigit).join('');
    if (firstDigit < 0) body = body.slice(0, left.length) + sign;
    if (dot >= 0) {
      let frac = '';
      for (let k = 0; k < fracPat.length; k++) frac += fixed.frac[k];
      if (fm) {
        // note: FM drops trailing zeros where the pattern says 9, keeping those a 0 asks for.
        const lastZero = fracPat.lastIndexOf('0');
        while (frac.length > lastZero + 1 && frac.endsWith('0')) frac = frac.slice(0, -1);
      }
      body += `.${frac}`;
    }
    if (fm) body = body.replace(/^ +/, '').replace(/^([-+ ]?) +/, '$1').replace(/^ /, '');
    return body;
  });

  // ---- intervals as Postgres prints them (IntervalStyle postgres)
  const plural = (n: number, unit: string): string => `${n} ${unit}${n === 1 ? '' : 's'}`;
  const showTime = (ms: number): string => {
    const neg = ms < 0;
    let t = Math.abs(ms);
    const hh = Math.floor(t / 3600000);
    t -= hh * 3600000;
    const mm = Math.floor(t / 60000);
    t -= mm * 60000;
    const ss = Math.floor(t / 1000);
    const frac = t - ss * 1000;
    return `${neg ? '-' : ''}${z(hh, 2)}:${z(mm, 2)}:${z(ss, 2)}${frac ? `.${z(Math.round(frac), 3).replace(/0+$/, '')}` : ''}`;
  };
  const showInterval = (years: number, months: number, days: number, ms: number): string => {
    const parts: string[] = [];
    if (years) parts.push(plural(years, 'year'));
    if (months) parts.push(plural(months, 'mon'));
    if (days) parts.push(plural(days, 'day'));
    if (ms || !parts.length) parts.push(showTime(ms));
    return parts.join(' ');
  };
  /** age(a, b): years, months and days apart by the calendar, borrowing as Postgres does. */
  db.function('pe_age', det, (a: unknown, b: unknown) => {
    if (a === null || b === null) return null;
    const x = time(a);
    const y = time(b);
    const neg = x.getTime() < y.getTime();
    const [hi, lo] = neg ? [y, x] : [x, y];
    let ms = hi.getUTCMilliseconds() - lo.getUTCMilliseconds();
    let sec = hi.getUTCSeconds() - lo.getUTCSeconds();
    let min = hi.getUTCMinutes() - lo.getUTCMinutes();
    let hour = hi.getUTCHours() - lo.getUTCHours();
    let day = hi.getUTCDate() - lo.getUTCDate();
    let mon = hi.getUTCMonth() - lo.getUTCMonth();
    let year = hi.getUTCFullYear() - lo.getUTCFullYear();
    if (ms < 0) { ms += 1000; sec--; }
    if (sec < 0) { sec += 60; min--; }
    if (min < 0) { min += 60; hour--; }
    if (hour < 0) { hour += 24; day--; }
    if (day < 0) { day += new Date(Date.UTC(lo.getUTCFullYear(), lo.getUTCMonth() + 1, 0)).getUTCDate(); mon--; }
    if (mon < 0) { mon += 12; year--; }
    const k = neg ? -1 : 1;
    return showInterval(k * year, k * mon, k * day, k * (((hour * 60 + min) * 60 + sec) * 1000 + ms));
  });
  /** timestamp − timestamp: whole days and the time left over (Postgres' justified hours). */
  db.function('pe_ts_diff', det, (a: unknown, b: unknown) => {
    if (a === null || b === null) return null;
    const diff = time(a).getTime() - time(b).getTime();
    const days = Math.trunc(diff / 86400000);
    return showInterval(0, 0, days, diff - days * 86400000);
  });

  /** Interval text ('1 year 2 mons 3 days 04:05:06', '2 hours', '-1 days -00:30:00') → its parts. */
  const parseInterval = (v: unknown): { months: number; days: number; ms: number } => {
    const s = String(v).trim().toLowerCase();
    const units: Record<string, [number, number, number]> = {
      millennium: [12000, 0, 0], century: [1200, 0, 0], decade: [120, 0, 0], year: [12, 0, 0], mon: [1, 0, 0], month: [1, 0, 0], week: [0, 7, 0], day: [0, 1, 0],
      hour: [0, 0, 3600000], minute: [0, 0, 60000], min: [0, 0, 60000], second: [0, 0, 1000], sec: [0, 0, 1000], millisecond: [0, 0, 1], msec: [0, 0, 1], microsecond: [0, 0, 0.001],
    };
    const r = { months: 0, days: 0, ms: 0 };
    const re = /([+-]?)(\d+):(\d\d)(?::(\d\d(?:\.\d+)?))?|([+-]?\d+(?:\.\d+)?)\s*([a-z]+)|(\S)/g;
    let m: RegExpExecArray | null;
    let any = false;
    while ((m = re.exec(s)) !== null) {
      if (m[7] !== undefined) return fail(`invalid input syntax for type interval: "${String(v)}"`);
      any = true;
      if (m[2] !== undefined) {
        const sign = m[1] === '-' ? -1 : 1;
        r.ms += sign * (Number(m[2]) * 3600000 + Number(m[3]) * 60000 + Number(m[4] ?? 0) * 1000);
        continue;
      }
      let unit = m[6]!;
      if (unit.endsWith('s') && !units[unit]) unit = unit.slice(0, -1);
      const f = units[unit] ?? (unit === 'ago' ? null : fail(`invalid input syntax for type interval: "${String(v)}"`));
      if (!f) continue;
      const n = Number(m[5]);
      r.months += n * f[0];
      r.days += n * f[1];
      r.ms += n * f[2];
    }
    return any ? r : fail(`invalid input syntax for type interval: "${String(v)}"`);
  };
  /** extract / date_part of an interval: epoch counts a year as 365.25 days and a month as 30. */
  db.function('pe_interval_part', det, (field: unknown, v: unknown) => {
    if (field === null || v === null) return null;
    const iv = parseInterval(v);
    const f = String(field).toLowerCase();
    const years = Math.trunc(iv.months / 12);
    const secs = iv.ms / 1000;
    switch (f) {
      case 'epoch': return years * 365.25 * 86400 + (iv.months - years * 12) * 30 * 86400 + iv.days * 86400 + secs;
      case 'year': return years;
      case 'month': return iv.months - years * 12;
      case 'day': return iv.days;
      case 'hour': return Math.trunc(secs / 3600);
      case 'minute': return Math.trunc((secs % 3600) / 60);
      case 'second': return secs % 60;
      case 'milliseconds': return (secs % 60) * 1000;
    }
    return fail(`unit "${f}" not supported for type interval`);
  });
  /** An interval's place in Postgres' ordering: months of 30 days, days of 24 hours, in seconds. */
  db.function('pe_interval_key', det, (v: unknown) => {
    if (v === null) return null;
    const iv = parseInterval(v);
    return (iv.months * 30 + iv.days) * 86400 + iv.ms / 1000;
  });
  /** interval * number as Postgres' interval_mul: a fraction of a month spills into days of 30, of a day into hours of 24. */
  db.function('pe_interval_mul', det, (v: unknown, factor: unknown) => {
    if (v === null || factor === null) return null;
    const iv = parseInterval(v);
    const k = Number(factor);
    const months = iv.months * k;
    const wholeMonths = Math.trunc(months);
    const days = iv.days * k + (months - wholeMonths) * 30;
    const wholeDays = Math.trunc(days);
    const ms = Math.round(iv.ms * k + (days - wholeDays) * 86400000);
    const years = Math.trunc(wholeMonths / 12);
    return showInterval(years, wholeMonths - years * 12, wholeDays, ms);
  });
  /** date_bin(stride, ts, origin): the start of ts's bin of width stride counted from origin (no months or years in the stride). */
  db.function('pe_date_bin', det, (stride: unknown, v: unknown, origin: unknown) => {
    if (stride === null || v === null || origin === null) return null;
    const iv = parseInterval(stride);
    if (iv.months) return fail('timestamps cannot be binned into intervals containing months or years');
    const width = iv.days * 86400000 + iv.ms;
    if (width <= 0) return fail('stride must be greater than zero');
    const o = time(origin).getTime();
    return new Date(o + Math.floor((time(v).getTime() - o) / width) * width).toISOString();
  });
  /** justify_days: each 30 days a month; justify_hours: each 24 hours a day (Postgres keeps the signs of the parts together). */
  db.function('pe_justify', det, (v: unknown, what: unknown) => {
    if (v === null) return null;
    const iv = parseInterval(v);
    let { months, days, ms } = iv;
    if (what === 'days') {
      months += Math.trunc(days / 30);
      days -= Math.trunc(days / 30) * 30;
      if (months > 0 && days < 0) [months, days] = [months - 1, days + 30];
      else if (months < 0 && days > 0) [months, days] = [months + 1, days - 30];
    } else {
      days += Math.trunc(ms / 86400000);
      ms -= Math.trunc(ms / 86400000) * 86400000;
      if (days > 0 && ms < 0) [days, ms] = [days - 1, ms + 86400000];
      else if (days < 0 && ms > 0) [days, ms] = [days + 1, ms - 86400000];
    }
    const years = Math.trunc(months / 12);
    return showInterval(years, months - years * 12, days, ms);
  });
  db.function('pe_width_bucket', det, (x: unknown, lo: unknown, hi: unknown, n: unknown) => {
    if (x === null || lo === null || hi === null || n === null) return null;
    const [v, a, b, k] = [Number(x), Number(lo), Number(hi), Number(n)];
    if (k <= 0) return fail('count must be greater than zero');
    if (a === b) return fail('lower bound cannot equal upper bound');
    if (a < b) return v < a ? 0 : v >= b ? k + 1 : Math.floor(((v - a) / (b - a)) * k) + 1;
    return v > a ? 0 : v <= b ? k + 1 : Math.floor(((a - v) / (a - b)) * k) + 1;
  });
  db.function('pe_interval_text', det, (v: unknown) => {
    if (v === null) return null;
    const iv = parseInterval(v);
    const years = Math.trunc(iv.months / 12);
    return showInterval(years, iv.months - years * 12, iv.days, iv.ms);
  });
}

const ROMAN = ['I', 'II', 'III', 'IV', 'V', 'VI', 'VII', 'VIII', 'IX', 'X', 'XI', 'XII'];

