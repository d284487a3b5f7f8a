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

/** A cached variant found before for one object and query string (and `Accept` when it may matter). */
interface VariantHit {
  readonly served: Served;
  readonly bytes: () => Buffer | null;
  /** Whether the variant is still in the transform's cache (then it counts as used now). */
  readonly stillCached: () => boolean;
}
/**
 * The variants answered for an object kept by the short-id cache (the same `ReadableObject` until
 * it changes), by query string: a repeated read of a cached variant skips parsing the query,
 * normalising and hashing the parameters; the transform's cache still decides it is cached.
 */
const variantHits = new WeakMap<ReadableObject, Map<string, VariantHit>>();
// note: bounded per object and by key length (a key may hold `Accept`): at most the short-id cache's 10,000 objects × 16 × 512 characters.
const VARIANT_HITS_PER_OBJECT = 16;
const VARIANT_KEY_MAX = 512;

/**
 * The key of a read's variant among an object's: the raw query string, and `Accept` when the query
 * may say `format=auto` (literally or percent-encoded), as `Accept` then picks the format.
 */
export const variantMemoKey = (req: HandlerRequest): string =>
  req.rawQuery.includes('auto') || req.rawQuery.includes('%') ? `${req.rawQuery}\n${req.headers.accept ?? ''}` : req.rawQuery;

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
  if (req.rawQuery === '') return plainAnswer(storage, req, plain, row.ref);
  // note: the variant answered for this object and query string before, while it stays cached: no query parsing, no hashing.
  const hits = variantHits.get(obj);
  if (hits !== undefined) {
    const k = variantMemoKey(req);
    const h = hits.get(k);
    if (h !== undefined) {
      if (h.stillCached()) return answer(req, h.served, h.bytes);
      hits.delete(k);
    }
  }
  if (!asksTransform(req.query)) return plainAnswer(storage, req, plain, row.ref);
  const source = plain;
  // note: a variant already cached is answered at once, like the stored bytes.
  const hit = storage.transformerCached === null ? null : storage.transformerCached(obj, req);
  if (hit !== null) {
    // note: a variant file never changes under its path (same ref, same parameters), so small ones are kept in memory by path.
    let v = preparedVariants.get(hit);
    if (v === undefined) preparedVariants.set(hit, (v = served(hit.path, hit.size, hit.contentType, hit.etag, row.updated_at, row.key, obj.publicBucket, hit.headers)));
    const bytes = (): Buffer | null => storage.cache.bytes(hit.path, hit.path, hit.size);
    // note: remembered only for an object the short-id cache keeps (its identity lasts); other reads build a fresh object each time.
    const k = variantMemoKey(req);
    if (hit.stillCached !== undefined && k.length <= VARIANT_KEY_MAX && storage.cache.object(row.short_id) === obj) {
      let m = hits;
      if (m === undefined) variantHits.set(obj, (m = new Map()));
      if (m.size >= VARIANT_HITS_PER_OBJECT) m.delete(m.keys().next().value!);
      m.set(k, { served: v, bytes, stillCached: hit.stillCached });
    }
    return answer(req, v, bytes);
  }
  // note: the read routes answer at once (`awaits: false`); a transform waits, so it starts on the next turn.
  return later().then(async () => {
    const v: TransformedBody | null = await transformRead(storage, obj, source.path, req);
    if (v === null) return answer(req, source, null);
    return answer(req, served(v.path, v.size, v.contentType, v.etag, row.updated_at, row.key, obj.publicBucket, v.headers), null);
  });
}

/** The stored bytes: a small object goes out from memory in one write (no file opened per request); ranges go through the file answer. */
function plainAnswer(storage: StorageService, req: HandlerRequest, p: Served, ref: string): EdgeResponse {
  return answer(req, p, () => storage.cache.bytes(ref, p.path, p.size));
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
