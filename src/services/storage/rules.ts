import { intParam } from '../../core/query-params.js';
import { EdgeError, invalidField } from '../../core/errors.js';

// Names, keys and types of the storage service (docs/api.md "Storage"): what is accepted, and how objects are served.

/** A bucket name. */
export const BUCKET_NAME = /^[a-z0-9][a-z0-9_-]{1,62}$/;
/** A short id: 10 base62 characters. */
export const SHORT_ID = /^[0-9A-Za-z]{10}$/;
export const SHORT_ID_LENGTH = 10;
export const MAX_KEY_BYTES = 1024;

/** Top-level path names that are never short ids (services and further paths of the contract). */
export const RESERVED_TOP_LEVEL: ReadonlySet<string> = new Set([
  'auth', 'db', 'storage', 'realtime', 'functions', 'search', 'notifications', 'monitor', 'analytics', 'ai', 'webhooks', 'secrets',
  'health', 'live', 'public', 'upload', '_admin',
]);

/**
 * Checks an object key and returns it in NFC (so NFC and NFD spellings name one object):
 * 1-1024 UTF-8 bytes, no control character or `\`, no empty, `.` or `..` segment.
 */
export function objectKey(raw: string): string {
  if (/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(raw)) throw invalidField('key', 'must be valid Unicode');
  const key = raw.normalize('NFC');
  const bytes = Buffer.byteLength(key);
  if (bytes < 1 || bytes > MAX_KEY_BYTES) throw invalidField('key', `must be 1-${MAX_KEY_BYTES} bytes of UTF-8`);
  if (/[\u0000-\u001f\u007f-\u009f\\]/.test(key)) throw invalidField('key', 'must not contain a control character or "\\"');
  for (const seg of key.split('/')) {
    if (seg === '' || seg === '.' || seg === '..') throw invalidField('key', 'must not have an empty, "." or ".." segment (no leading, trailing or double "/")');
  }
  return key;
}

export function bucketName(raw: unknown, field = 'name'): string {
  if (typeof raw !== 'string' || !BUCKET_NAME.test(raw)) throw invalidField(field, 'must match [a-z0-9][a-z0-9_-]{1,62}');
  return raw;
}

const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const MEDIA_TYPE = new RegExp(`^${TOKEN}/${TOKEN}$`);
const CONTENT_TYPE = new RegExp(`^${TOKEN}/${TOKEN}(\\s*;\\s*${TOKEN}=(${TOKEN}|"[^"\\\\\\r\\n]*"))*$`);

/** The stored Content-Type of an upload: as sent (type and subtype lower-cased), else `application/octet-stream`. */
export function uploadContentType(header: string | undefined): string {
  if (header === undefined || header.trim() === '') return 'application/octet-stream';
  const v = header.trim();
  if (v.length > 255 || !CONTENT_TYPE.test(v)) throw invalidField('content-type', 'must be a media type such as "image/png" (with optional parameters)');
  const semi = v.indexOf(';');
  return semi === -1 ? v.toLowerCase() : v.slice(0, semi).toLowerCase() + v.slice(semi);
}

/** `type/subtype` of a Content-Type, lower-cased. */
export const essence = (contentType: string): string => contentType.split(';', 1)[0]!.trim().toLowerCase();

/** A bucket's `allowed_mime_types`: exact types or `type/*`, lower-cased; null allows any. */
export function allowedMimeTypes(raw: unknown): string[] | null {
  if (raw === undefined || raw === null) return null;
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > 100) throw invalidField('allowed_mime_types', 'must be a non-empty array of at most 100 media types');
  return raw.map((t) => {
    if (typeof t !== 'string') throw invalidField('allowed_mime_types', 'must hold strings');
    const v = t.trim().toLowerCase();
    if (!MEDIA_TYPE.test(v) || (v.includes('*') && !/^[^/*]+\/\*$/.test(v))) throw invalidField('allowed_mime_types', `"${t}" is not a media type or "type/*"`);
    return v;
  });
}

export function mimeAllowed(allowed: readonly string[] | null, contentType: string): boolean {
  if (allowed === null) return true;
  const e = essence(contentType);
  const type = e.slice(0, e.indexOf('/'));
  return allowed.some((a) => a === e || a === `${type}/*`);
}

/**
 * Types a browser would run or render as a document (HTML, SVG, XML, JavaScript): served as
 * `attachment` so an object can never act as a page of this origin.
 */
export function servedAsAttachment(contentType: string): boolean {
  const e = essence(contentType);
  return (
    e === 'text/html' ||
    e === 'application/xhtml+xml' ||
    e === 'image/svg+xml' ||
    e === 'text/xml' ||
    e === 'application/xml' ||
    e.endsWith('+xml') ||
    e === 'text/javascript' ||
    e === 'application/javascript' ||
    e === 'application/x-javascript' ||
    e === 'text/ecmascript' ||
    e === 'application/ecmascript' ||
    e === 'text/xsl' ||
    e === 'application/wasm'
  );
}

/** `Content-Disposition: attachment` naming the key's last segment (RFC 6266 `filename*`). */
export function attachment(key: string): string {
  const name = key.slice(key.lastIndexOf('/') + 1);
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

/** Parses `?limit=&offset=` of a list (default 100, at most 1000). */
export function paging(q: URLSearchParams): { limit: number; offset: number } {
  const limit = intParam(q, 'limit', 100, 1, 1000);
  const offset = intParam(q, 'offset', 0, 0, Number.MAX_SAFE_INTEGER);
  return { limit, offset };
}

/** The declared `Content-Length`, or null (chunked, or none). */
export function declaredLength(header: string | undefined): number | null {
  if (header === undefined) return null;
  if (!/^\d{1,16}$/.test(header.trim())) throw new EdgeError('invalid_request', 'malformed Content-Length');
  return Number(header.trim());
}
