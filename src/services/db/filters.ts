import { EdgeError } from '../../edge/errors.js';
import { JSON_KEY } from '../../sql/quote.js';

/** Filter operators of DESIGN.md §6. */
export const FILTER_OPS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'like', 'ilike', 'in', 'is', 'contains'] as const;
export type FilterOp = (typeof FILTER_OPS)[number];

/** One value as written: `quoted` when it was wrapped in double quotes (always a string). */
export interface FilterValue {
  text: string;
  quoted: boolean;
}

export interface Filter {
  /** Path segments: `["address","city"]` for `address.city`. */
  field: string[];
  op: FilterOp;
  /** One value, or the items of `in.(…)`. */
  values: FilterValue[];
}

export interface OrderItem {
  field: string[];
  desc: boolean;
  nulls: 'first' | 'last' | null;
}

export interface ListQuery {
  filters: Filter[];
  /** Each `or=(…)` is one group; groups are AND-ed with the filters. */
  or: Filter[][];
  select: string[][] | null;
  order: OrderItem[];
  limit: number;
  offset: number;
  count: boolean;
}

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;
const MAX_FILTERS = 64;
const MAX_IN = 1000;
const MAX_OFFSET = 1_000_000_000;
const KNOWN_PARAMS = new Set(['filter', 'or', 'select', 'order', 'limit', 'offset', 'count']);
const OP_RE = new RegExp(`\\.(${FILTER_OPS.join('|')})\\.`);

const bad = (why: string): EdgeError => new EdgeError('invalid_request', why);

/** Parses a list request's query string (no table knowledge; names are checked later). */
export function parseListQuery(q: URLSearchParams): ListQuery {
  for (const k of q.keys()) if (!KNOWN_PARAMS.has(k)) throw bad(`unknown query parameter "${k}"`);
  const filters = q.getAll('filter').map(parseFilter);
  const or = q.getAll('or').map(parseOr);
  if (filters.length + or.reduce((n, g) => n + g.length, 0) > MAX_FILTERS) throw bad(`at most ${MAX_FILTERS} filters`);
  const select = q.get('select');
  const order = q.get('order');
  const count = q.get('count');
  if (count !== null && count !== 'exact') throw bad('count must be "exact"');
  return {
    filters,
    or,
    select: select === null || select === '*' ? null : parseSelect(select),
    order: order === null ? [] : order.split(',').map(parseOrderItem),
    limit: Math.min(parseCount('limit', q.get('limit'), DEFAULT_LIMIT), MAX_LIMIT),
    offset: Math.min(parseCount('offset', q.get('offset'), 0), MAX_OFFSET),
    count: count === 'exact',
  };
}

/** `<field>.<op>.<value>`: the field is the text before the first `.<op>.` */
export function parseFilter(s: string): Filter {
  const m = OP_RE.exec(s);
  if (!m) throw bad(`filter "${clip(s)}" must look like <field>.<op>.<value> with op one of ${FILTER_OPS.join(', ')}`);
  const field = parseField(s.slice(0, m.index));
  const op = m[1] as FilterOp;
  const raw = s.slice(m.index + m[0].length);
  if (op === 'in') {
    if (!raw.startsWith('(') || !raw.endsWith(')')) throw bad('in takes a list: in.(a,b,c)');
    const items = splitTop(raw.slice(1, -1)).map(parseValue);
    if (items.length === 0 || items.length > MAX_IN) throw bad(`in takes 1 to ${MAX_IN} values`);
    return { field, op, values: items };
  }
  const value = parseValue(raw);
  if (op === 'is' && (value.quoted || !['null', 'true', 'false'].includes(value.text))) {
    throw bad('is takes null, true or false');
  }
  return { field, op, values: [value] };
}

function parseOr(s: string): Filter[] {
  if (!s.startsWith('(') || !s.endsWith(')')) throw bad('or takes a list: or=(f.op.v,g.op.v)');
  const parts = splitTop(s.slice(1, -1));
  if (parts.length === 0) throw bad('or takes at least one filter');
  return parts.map(parseFilter);
}

function parseSelect(s: string): string[][] {
  const names = s.split(',').map((x) => parseField(x.trim()));
  if (names.length > 100) throw bad('select names at most 100 fields');
  return names;
}

function parseOrderItem(s: string): OrderItem {
  const parts = s.trim().split('.');
  let desc = false;
  let nulls: OrderItem['nulls'] = null;
  let seenDir = false;
  while (parts.length > 1) {
    const last = parts[parts.length - 1]!;
    if ((last === 'nullsfirst' || last === 'nullslast') && nulls === null && !seenDir) nulls = last === 'nullsfirst' ? 'first' : 'last';
    else if ((last === 'asc' || last === 'desc') && !seenDir) {
      desc = last === 'desc';
      seenDir = true;
    } else break;
    parts.pop();
  }
  return { field: parseField(parts.join('.')), desc, nulls };
}

/** A field name or dotted JSON path; each segment `[A-Za-z_][A-Za-z0-9_]*`. */
export function parseField(s: string): string[] {
  const segs = s.split('.');
  if (segs.length > 16 || !segs.every((x) => JSON_KEY.test(x))) throw bad(`invalid field name "${clip(s)}"`);
  return segs;
}

function parseValue(s: string): FilterValue {
  if (s.length >= 2 && s.startsWith('"') && s.endsWith('"')) {
    return { text: s.slice(1, -1).replace(/\\(.)/g, '$1'), quoted: true };
  }
  return { text: s, quoted: false };
}

/** Splits on commas outside parentheses and double quotes. */
function splitTop(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let inQ = false;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (inQ) {
      if (c === '\\') i++;
      else if (c === '"') inQ = false;
    } else if (c === '"') inQ = true;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      out.push(s.slice(start, i));
      start = i + 1;
    }
  }
  if (inQ || depth !== 0) throw bad('unbalanced quotes or parentheses');
  if (s.length > 0) out.push(s.slice(start));
  return out;
}

function parseCount(name: string, v: string | null, dflt: number): number {
  if (v === null) return dflt;
  if (!/^\d{1,12}$/.test(v)) throw bad(`${name} must be a non-negative integer`);
  return Number(v);
}

const clip = (s: string): string => (s.length > 60 ? `${s.slice(0, 60)}…` : s);
