import { EdgeError } from '../core/errors.js';
import { split } from './router.js';

/** Splits and validates the path: no `.`/`..` segments (path traversal), no NUL. */
export function pathSegments(path: string): string[] {
  const segs = split(path);
  for (const s of segs) {
    const d = s.includes('%') ? safeDecode(s) : s;
    if (d === '.' || d === '..' || d.includes('\0') || (d !== s && (d.includes('/') || d.includes('\\')))) {
      throw new EdgeError('invalid_request', 'the path contains a forbidden segment');
    }
  }
  return segs;
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new EdgeError('invalid_request', 'malformed percent-encoding in the path');
  }
}

/** Percent-decodes a route's path parameters in place; malformed encoding is 400. */
export function decodeParams(p: Record<string, string>): Record<string, string> {
  for (const k in p) {
    const v = p[k]!;
    if (v.includes('%')) {
      try {
        p[k] = decodeURIComponent(v);
      } catch {
        throw new EdgeError('invalid_request', `malformed percent-encoding in path parameter "${k}"`);
      }
    }
  }
  return p;
}
