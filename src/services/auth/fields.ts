import { conflict } from '../../core/errors.js';
import type { ProjectLease } from '../../project/registry.js';
import * as store from './store.js';
import type { FieldType, UserField } from './types.js';
import { fieldDefinitions, type Body } from './validate.js';

/**
 * Replaces the user field schema and alters `profiles` to match, in one transaction:
 * new fields are added as columns, removed ones dropped, and a changed type rewrites
 * the column after checking every stored value converts (409 naming the field if not).
 */
export function putUserFields(p: ProjectLease, body: Body): UserField[] {
  const next = fieldDefinitions(body);
  store.tx(p, () => {
    const current = new Map(store.userFields(p).map((f) => [f.name, f]));
    const columns = store.profileColumns(p);
    for (const f of next) {
      const old = current.get(f.name);
      if (!old) {
        if (columns.has(f.name)) throw conflict(`profiles already has a column "${f.name}" that is not a user field`);
        store.addProfileColumn(p, f.name, f.type);
      } else if (old.type !== f.type) {
        const values = store.profileValues(p, f.name).map((r) => ({ id: r.id, v: convert(f.name, r.v, old.type, f.type) }));
        store.retypeProfileColumn(p, f.name, f.type, values);
      }
    }
    const keep = new Set(next.map((f) => f.name));
    for (const name of current.keys()) if (!keep.has(name) && columns.has(name)) store.dropProfileColumn(p, name);
    store.replaceUserFields(p, next);
  });
  return store.userFields(p);
}

/** A stored value as the new type, or 409 when it has no faithful conversion. */
function convert(field: string, v: unknown, from: FieldType, to: FieldType): string | number {
  const fail = (): never => {
    throw conflict(`profiles.${field} holds ${JSON.stringify(v)}, which cannot become ${to}; clear it first`);
  };
  switch (to) {
    case 'text':
      return from === 'bool' ? (v === 1 ? 'true' : 'false') : String(v);
    case 'bool':
      if (v === 1 || v === 0) return v;
      if (typeof v === 'string' && /^(true|t|1)$/i.test(v)) return 1;
      if (typeof v === 'string' && /^(false|f|0)$/i.test(v)) return 0;
      return fail();
    case 'int8': {
      const n = typeof v === 'string' && /^-?\d+(\.0+)?$/.test(v.trim()) ? Number(v) : v;
      return typeof n === 'number' && Number.isSafeInteger(n) ? n : fail();
    }
    case 'float8': {
      const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
      return typeof n === 'number' && Number.isFinite(n) ? n : fail();
    }
    case 'timestamptz': {
      const t = typeof v === 'string' && /^\d{4}-\d{2}-\d{2}/.test(v) ? Date.parse(v) : NaN;
      return Number.isNaN(t) ? fail() : new Date(t).toISOString();
    }
  }
}

