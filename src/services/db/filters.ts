import { EdgeError } from '../../core/errors.js';
import { JSON_KEY } from '../../sql/quote.js';

/** Filter operators of the rows API (docs/api.md "Listing: `GET /db/tables/{t}/rows`"). */
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
// Caps on what one list request may ask the main thread to compile (docs/api.md, Listing).
const MAX_FILTERS = 64;
/** Values in `in.(…)` lists, per list and over the whole request. */
const MAX_IN = 1000;
/** Characters of one filter value (a JSON array given to `contains` included). */
export const MAX_VALUE_CHARS = 4096;
const MAX_ORDER = 32;
const MAX_SELECT = 100;
const MAX_OFFSET = 1_000_000_000;
const KNOWN_PARAMS = new Set(['filter', 'or', 'select', 'order', 'limit', 'offset', 'count']);
const OP_RE = new RegExp(`\\.(${FILTER_OPS.join('|')})\\.`);

const bad = (why: string): EdgeError => new EdgeError('invalid_request', why);

/** Parses a list request's query string (no table knowledge; names are checked later). */
export function parseListQuery(q: URLSearchParams): ListQuery {
  for (const k of q.keys()) if (!KNOWN_PARAMS.has(k)) throw bad(`unknown query parameter "${k}"`);
  // note: counted before parsing, so a flood of filters costs no parsing.
  const rawFilters = q.getAll('filter');
  const rawOr = q.getAll('or');
  if (rawFilters.length + rawOr.length > MAX_FILTERS) throw bad(`at most ${MAX_FILTERS} filters (or members included)`);
  const filters = rawFilters.map(parseFilter);
  const or = rawOr.map(parseOr);
  let n = filters.length;
  let inValues = 0;
  for (const f of filters) if (f.op === 'in') inValues += f.values.length;
  for (const g of or) {
    n += g.length;
    for (const f of g) if (f.op === 'in') inValues += f.values.length;
  }
  if (n > MAX_FILTERS) throw bad(`at most ${MAX_FILTERS} filters (or members included)`);
  if (inValues > MAX_IN) throw bad(`at most ${MAX_IN} in values in one request`);
  const select = q.get('select');
  const order = q.get('order');
  const count = q.get('count');
  if (count !== null && count !== 'exact') throw bad('count must be "exact"');
  return {
    filters,
    or,
    select: select === null || select === '*' ? null : parseSelect(select),
    order: order === null ? [] : parseOrder(order),
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
  if (parts.length > MAX_FILTERS) throw bad(`at most ${MAX_FILTERS} filters (or members included)`);
  return parts.map(parseFilter);
}

function parseSelect(s: string): string[][] {
  const parts = s.split(',');
  if (parts.length > MAX_SELECT) throw bad(`select names at most ${MAX_SELECT} fields`);
  return parts.map((x) => parseField(x.trim()));
}

function parseOrder(s: string): OrderItem[] {
  const parts = s.split(',');
  if (parts.length > MAX_ORDER) throw bad(`order names at most ${MAX_ORDER} fields`);
  return parts.map(parseOrderItem);
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
  if (s.length > MAX_VALUE_CHARS) throw bad(`a filter value has at most ${MAX_VALUE_CHARS} characters`);
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
