import { invalidField } from './errors.js';

/**
 * A whole number from the query string (`?limit=`, `?offset=` of a list): absent or empty is
 * `dflt`; anything but decimal digits, or outside min..max, is 400 `invalid_field`. One parser
 * for every list of every service, so `limit` means the same everywhere (docs/api.md).
 */
export function intParam(q: URLSearchParams, name: string, dflt: number, min: number, max: number): number {
  const raw = q.get(name);
  if (raw === null || raw === '') return dflt;
  const n = /^\d{1,16}$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= min && n <= max)) throw invalidField(name, `must be an integer from ${min} to ${max}`);
  return n;
}
