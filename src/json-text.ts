// note: matches what JSON.stringify would escape (quote, backslash, control characters) and any
// surrogate (lone ones are escaped by JSON.stringify); strings without any take the fast path.
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * `JSON.stringify(v)` for one value, exactly, but cheaper for the primitives of a row:
 * JSON.stringify is a C++ builtin with a fixed cost per call, while plain strings,
 * numbers, booleans and null are written here. `undefined` becomes `null` (a column value).
 */
export function jsonValue(v: unknown): string {
  switch (typeof v) {
    case 'string':
      return NEEDS_ESCAPE.test(v) ? JSON.stringify(v) : `"${v}"`;
    case 'number':
      return Number.isFinite(v) ? String(v) : 'null';
    case 'boolean':
      return v ? 'true' : 'false';
    case 'undefined':
      return 'null';
    default:
      return v === null ? 'null' : JSON.stringify(v);
  }
}
