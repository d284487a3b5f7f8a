import { createReadStream } from 'node:fs';
import type { EdgeResponse, HandlerRequest } from '../../edge/route.js';
import { attachment, servedAsAttachment } from './rules.js';
import { etagOf, type ReadableObject, type StorageService } from './storage.js';
import type { ObjectRow } from './store.js';
import { asksTransform, transformRead, type TransformedBody } from './transform.js';

/**
 * Headers every object answer carries (200, 206, 304, 416): nothing an object holds may run as a
 * page of this origin or be sniffed into another type.
 */
export const OBJECT_SAFETY_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': 'sandbox',
};

/** What an answer is built from: the bytes' file and the headers of a 200 and of a 304, built once per object version. */
interface Served {
  readonly path: string;
  readonly size: number;
  readonly contentType: string;
  readonly etag: string;
  readonly lastModified: string;
  /** `lastModified` as milliseconds, for `If-Modified-Since`. */
  readonly lastModifiedMs: number;
  /** Every header of a 200 (type, validators, caching, safety, disposition, Accept-Ranges); shared: never changed. */
  readonly headers: Readonly<Record<string, string>>;
  /** The headers of a 304 (no type, no disposition). */
  readonly notModifiedHeaders: Readonly<Record<string, string>>;
}

function served(path: string, size: number, contentType: string, etag: string, updatedAt: string, key: string, publicBucket: boolean, extra?: Readonly<Record<string, string>>): Served {
  const lastModifiedMs = Math.floor(Date.parse(updatedAt) / 1000) * 1000;
  const lastModified = new Date(lastModifiedMs).toUTCString();
  const common: Record<string, string> = {
    etag,
    'last-modified': lastModified,
    // note: public objects may be cached briefly (an overwrite keeps the URL); private ones revalidate every time.
    'cache-control': publicBucket ? 'public, max-age=60' : 'private, no-cache',
    ...OBJECT_SAFETY_HEADERS,
    ...extra,
  };
  const headers: Record<string, string> = { 'content-type': contentType, ...common, 'accept-ranges': 'bytes' };
  if (servedAsAttachment(contentType)) headers['content-disposition'] = attachment(key);
  return { path, size, contentType, etag, lastModified, lastModifiedMs, headers, notModifiedHeaders: common };
}

/** Prepared answers of the objects kept in memory (the short-id cache hands out the same row object until it changes). */
const prepared = new WeakMap<ObjectRow, Served>();
/** Prepared answers of cached image variants (the transform's lookup hands out the same body while it stays cached). */
const preparedVariants = new WeakMap<TransformedBody, Served>();

/**
 * Answers a read of an object (by key, by short id, signed): the stored bytes as a file answer
 * (ranges and HEAD by src/http/body-out.ts), or a variant when the request asks for a transform
 * (`transformRead`, the hook image resizing fills). Synchronous unless a transform is asked for.
 */
export function objectAnswer(storage: StorageService, obj: ReadableObject, req: HandlerRequest, later: () => Promise<void>): EdgeResponse | Promise<EdgeResponse> {
  const row = obj.row;
  let plain = prepared.get(row);
  if (plain === undefined) {
    const path = storage.filePath(obj);
    if (path === null) throw new Error('the object store keeps no local files (a streamed read is not wired yet)');
    plain = served(path, row.size, row.content_type, etagOf(row.sha256), row.updated_at, row.key, obj.publicBucket);
    prepared.set(row, plain);
  }
  if (req.rawQuery === '' || !asksTransform(req.query)) {
    // note: a small object goes out from memory in one write (no file opened per request); ranges go through the file answer.
    const p = plain;
    return answer(req, p, () => storage.cache.bytes(row.ref, p.path, p.size));
  }
  const source = plain;
  // note: a variant already cached is answered at once, like the stored bytes.
  const hit = storage.transformerCached === null ? null : storage.transformerCached(obj, req);
  if (hit !== null) {
    // note: a variant file never changes under its path (same ref, same parameters), so small ones are kept in memory by path.
    let v = preparedVariants.get(hit);
    if (v === undefined) preparedVariants.set(hit, (v = served(hit.path, hit.size, hit.contentType, hit.etag, row.updated_at, row.key, obj.publicBucket, hit.headers)));
    return answer(req, v, () => storage.cache.bytes(hit.path, hit.path, hit.size));
  }
  // note: the read routes answer at once (`awaits: false`); a transform waits, so it starts on the next turn.
  return later().then(async () => {
    const v: TransformedBody | null = await transformRead(storage, obj, source.path, req);
    if (v === null) return answer(req, source, null);
    return answer(req, served(v.path, v.size, v.contentType, v.etag, row.updated_at, row.key, obj.publicBucket, v.headers), null);
  });
}

/** `data`: the whole body in memory (a small file, else null), sent as bytes when no range is asked for; called after the 304 check. */
function answer(req: HandlerRequest, s: Served, data: (() => Buffer | null) | null): EdgeResponse {
  if (notModified(req.headers, s.etag, s.lastModifiedMs)) return { status: 304, headers: s.notModifiedHeaders };
  const range = req.headers.range;
  const file = { path: s.path, size: s.size, contentType: s.contentType };
  if (range === undefined) {
    const bytes = data?.() ?? null;
    return bytes !== null ? { status: 200, headers: s.headers, bytes } : { status: 200, headers: s.headers, file };
  }
  // note: a Range with an If-Range that no longer matches gets the whole (new) body, never a part of it.
  if (rangeStillValid(req.headers['if-range'], s.etag, s.lastModified)) return { status: 200, headers: s.headers, file };
  const bytes = data?.() ?? null;
  if (bytes !== null) return { status: 200, headers: s.headers, bytes };
  return { status: 200, headers: s.headers, stream: createReadStream(s.path, { highWaterMark: 64 * 1024 }), length: s.size };
}

/** RFC 9110 §13.1.5: a range applies when `If-Range` is absent, or names the current strong ETag or the exact Last-Modified. */
function rangeStillValid(ifRange: string | undefined, etag: string, lastModified: string): boolean {
  if (ifRange === undefined) return true;
  const v = ifRange.trim();
  if (v.startsWith('"')) return v === etag;
  if (v.startsWith('W/')) return false;
  return v === lastModified;
}

/**
 * RFC 9110 §13.2.2: `If-None-Match` (weak comparison, `*`) decides when present; else
 * `If-Modified-Since` at one-second precision. Only for GET and HEAD (the read routes).
 */
export function notModified(h: Readonly<Record<string, string>>, etag: string, lastModifiedMs: number): boolean {
  const inm = h['if-none-match'];
  if (inm !== undefined) {
    if (inm === etag || inm.trim() === '*') return true;
    const bare = etag.replace(/^W\//, '');
    for (const t of inm.split(',')) if (t.trim().replace(/^W\//, '') === bare) return true;
    return false;
  }
  const ims = h['if-modified-since'];
  if (ims === undefined) return false;
  const since = Date.parse(ims);
  if (Number.isNaN(since)) return false;
  return lastModifiedMs <= since;
}
