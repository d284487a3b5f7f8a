import { EdgeError, invalidField } from '../../core/errors.js';
import { toStored } from './column-values.js';
import { isSystemColumn, type TableInfo } from '../../sql/table-model.js';

/** The `data` object: must be a JSON object. */
export function dataOf(body: unknown, required = true): Record<string, unknown> {
  const d = (body as { data?: unknown }).data;
  if (d === undefined && !required) return {};
  if (d === null || typeof d !== 'object' || Array.isArray(d)) throw invalidField('data', 'must be a JSON object');
  for (const k of Object.keys(body as object)) {
    if (k !== 'data') throw invalidField(k, 'unknown field; send {"data": {…}}');
  }
  return d as Record<string, unknown>;
}

const NONE: ReadonlySet<string> = new Set();

/**
 * Validates relational `data` keys and values; returns column names and stored values. `filled`:
 * the NOT NULL columns a BEFORE trigger fills (triggers.ts triggerFilledColumns).
 */
export function relationalValues(t: TableInfo, data: Record<string, unknown>, insert: boolean, filled: ReadonlySet<string> = NONE): { cols: string[]; vals: unknown[] } {
  const cols: string[] = [];
  const vals: unknown[] = [];
  for (const [k, v] of Object.entries(data)) {
    if (isSystemColumn(t.def, k)) throw invalidField(k, 'is set by the server');
    const c = t.cols.get(k);
    if (!c) throw invalidField(k, `unknown column of table "${t.def.name}"`);
    cols.push(k);
    // note: a NOT NULL column a BEFORE trigger fills takes NULL until the trigger ran (the database checks it then, 23502).
    vals.push(toStored(filled.has(k) ? { ...c, nullable: true } : c, v));
  }
  if (insert) {
    for (const c of t.def.columns) {
      if (!c.nullable && (c.default === null || c.default === undefined) && !(c.name in data) && !t.system && !filled.has(c.name)) {
        throw invalidField(c.name, 'is required');
      }
    }
  }
  return { cols, vals };
}


export const rlsDenied = (op: string): EdgeError =>
  new EdgeError('rls_denied', `row-level security does not allow this ${op}`);
