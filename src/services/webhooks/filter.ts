import { EdgeError, invalidField } from '../../core/errors.js';
import type { TableInfo } from '../../sql/table-model.js';
import { parseListQuery, type ListQuery } from '../db/filters.js';
import { buildWhere } from '../db/list-query.js';

/**
 * A webhook's `filter` (docs/api.md "Webhooks"): the `filter=` and `or=` parameters of a rows-API
 * list, parsed by the rows API's parser and compiled by its compiler (`buildWhere`), so a webhook
 * filter means exactly what it means on `GET /db/tables/{t}/rows` (and on a realtime stream). The
 * compiled terms run in SQLite on the change log's stored row image (as realtime does).
 *
 * Two written forms: a string, the query-string text of a list (`"filter=qty.gte.10&or=(a.eq.1,b.eq.2)"`,
 * percent-decoded as a URL's), or an array of `field.op.value` strings (each one `filter=` term,
 * taken as written; the older form). Stored and shown as given.
 */
export type WhereQuery = Pick<ListQuery, 'filters' | 'or'>;

const GRAMMAR = 'the filter= and or= parameters of a rows-API list, e.g. "filter=status.eq.done&or=(qty.gt.10,urgent.is.true)", or an array of field.op.value strings';
export const MAX_FILTER_CHARS = 8192;

/** Parses a written filter (no table knowledge yet); null for none. Throws 400 `invalid_field`. */
export function parseFilter(v: unknown): WhereQuery | null {
  if (v === null || v === undefined) return null;
  const params = new URLSearchParams();
  if (typeof v === 'string') {
    if (v.length > MAX_FILTER_CHARS) throw invalidField('filter', `must be at most ${MAX_FILTER_CHARS} characters`);
    for (const [k, val] of new URLSearchParams(v)) {
      if (k !== 'filter' && k !== 'or') throw invalidField('filter', `"${k.slice(0, 40)}" is not filter or or; write ${GRAMMAR}`);
      params.append(k, val);
    }
  } else if (Array.isArray(v)) {
    for (const s of v) {
      if (typeof s !== 'string' || s.length > MAX_FILTER_CHARS) throw invalidField('filter', `must be ${GRAMMAR}`);
      params.append('filter', s);
    }
  } else throw invalidField('filter', `must be ${GRAMMAR}`);
  try {
    const q = parseListQuery(params);
    return q.filters.length + q.or.length === 0 ? null : { filters: q.filters, or: q.or };
  } catch (err) {
    throw asField(err);
  }
}

/** The filter's WHERE terms on the table: every name checked (an unknown column is 400 `invalid_field`). */
export function compileFilter(t: TableInfo, q: WhereQuery): { where: string[]; params: unknown[] } {
  try {
    return buildWhere(t, q, null);
  } catch (err) {
    throw asField(err);
  }
}

function asField(err: unknown): unknown {
  return err instanceof EdgeError && err.code === 'invalid_request' ? invalidField('filter', err.message) : err;
}
