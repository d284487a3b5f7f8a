import { invalidField } from '../../core/errors.js';

/**
 * A webhook's `filter` (docs/api.md "Webhooks"): rows-API filter strings `field.op.value`,
 * all of which must hold (AND), evaluated on the changed row's wire form (`id`, `created_at`,
 * `updated_at`, else a field of `data`; dotted paths reach into JSON). Ops: eq neq gt gte lt
 * lte like ilike in is.
 */
export interface Condition {
  field: string;
  op: Op;
  value: string;
  /** `in`: the listed values. */
  list?: string[];
}

const OPS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'like', 'ilike', 'in', 'is'] as const;
type Op = (typeof OPS)[number];
const SPLIT = new RegExp(`^(.+?)\\.(${OPS.join('|')})\\.(.*)$`, 's');
const FIELD = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;
export const MAX_CONDITIONS = 20;
const ROW_FIELDS = new Set(['id', 'created_at', 'updated_at']);

/**
 * Parses and checks a filter. `columns`: the table's column names (relational tables), or
 * null (document tables: any field path of `data`).
 */
export function parseFilter(v: unknown, columns: ReadonlySet<string> | null): Condition[] {
  if (!Array.isArray(v) || v.length > MAX_CONDITIONS || v.some((s) => typeof s !== 'string' || s.length > 1000)) {
    throw invalidField('filter', `must be an array of at most ${MAX_CONDITIONS} strings field.op.value`);
  }
  return (v as string[]).map((s) => {
    const m = SPLIT.exec(s);
    if (!m) throw invalidField('filter', `"${s.slice(0, 100)}" is not field.op.value with an op of ${OPS.join(', ')}`);
    const [, field, op, value] = m as unknown as [string, string, Op, string];
    if (!FIELD.test(field)) throw invalidField('filter', `invalid field name "${field.slice(0, 100)}"`);
    const head = field.split('.')[0]!;
    if (columns !== null && !ROW_FIELDS.has(field) && !columns.has(head)) {
      throw invalidField('filter', `unknown column "${head}"`);
    }
    if (op === 'is' && !['null', 'true', 'false'].includes(value)) throw invalidField('filter', 'is takes null, true or false');
    if (op === 'in') {
      const inner = /^\((.*)\)$/s.exec(value);
      if (!inner) throw invalidField('filter', 'in takes a list in parentheses: in.(a,b)');
      return { field, op, value, list: inner[1] === '' ? [] : inner[1]!.split(',') };
    }
    return { field, op, value };
  });
}

/** Whether the row (wire form) meets every condition. */
export function matches(conds: readonly Condition[], row: { id: unknown; data: Record<string, unknown>; created_at?: string; updated_at?: string } | null): boolean {
  if (conds.length === 0) return true;
  if (row === null) return false;
  return conds.every((c) => holds(c, pick(row, c.field)));
}

function pick(row: { id: unknown; data: Record<string, unknown>; created_at?: string; updated_at?: string }, field: string): unknown {
  if (field === 'id') return row.id;
  if (field === 'created_at') return row.created_at;
  if (field === 'updated_at') return row.updated_at;
  let v: unknown = row.data;
  for (const k of field.split('.')) {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

function holds(c: Condition, v: unknown): boolean {
  if (c.op === 'is') return c.value === 'null' ? v === null || v === undefined : v === (c.value === 'true');
  if (v === null || v === undefined) return false;
  switch (c.op) {
    case 'eq':
      return compare(v, c.value) === 0;
    case 'neq':
      return compare(v, c.value) !== 0;
    case 'gt':
      return compare(v, c.value) > 0;
    case 'gte':
      return compare(v, c.value) >= 0;
    case 'lt':
      return compare(v, c.value) < 0;
    case 'lte':
      return compare(v, c.value) <= 0;
    case 'in':
      return c.list!.some((x) => compare(v, x) === 0);
    case 'like':
    case 'ilike':
      return typeof v === 'string' && likeRegex(c.value, c.op === 'ilike').test(v);
  }
}

/** Compares a value with the filter's text: numbers as numbers, booleans as true/false, others as text. */
function compare(v: unknown, s: string): number {
  if (typeof v === 'number') {
    const n = Number(s);
    if (s.trim() === '' || !Number.isFinite(n)) return NaN;
    return v === n ? 0 : v < n ? -1 : 1;
  }
  if (typeof v === 'boolean') return String(v) === s ? 0 : NaN;
  const t = typeof v === 'string' ? v : JSON.stringify(v);
  return t === s ? 0 : t < s ? -1 : 1;
}

function likeRegex(pattern: string, ci: boolean): RegExp {
  let re = '';
  for (const ch of pattern) re += ch === '%' || ch === '*' ? '.*' : ch === '_' ? '.' : ch.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${re}$`, ci ? 'is' : 's');
}
