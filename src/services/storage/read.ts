import type { EdgeResponse, HandlerRequest } from '../../edge/route.js';
import { attachment, servedAsAttachment } from './rules.js';
import { etagOf, type ReadableObject, type StorageService } from './storage.js';
import { asksTransform, transformRead, type TransformedBody } from './transform.js';

/**
 * Headers every object answer carries (200, 206, 304, 416): nothing an object holds may run as a
 * page of this origin or be sniffed into another type.
 */
export const OBJECT_SAFETY_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': 'sandbox',
};

interface Served {
  readonly path: string;
  readonly size: number;
  readonly contentType: string;
  readonly etag: string;
  readonly lastModified: string;
  readonly key: string;
  readonly publicBucket: boolean;
  readonly extra?: Readonly<Record<string, string>>;
}

/**
 * Answers a read of an object (by key, by short id, signed): the stored bytes as a file answer
 * (ranges and HEAD by src/http/body-out.ts), or a variant when the request asks for a transform
 * (`transformRead`, the hook image resizing fills). Synchronous unless a transform is asked for.
 */
export function objectAnswer(storage: StorageService, obj: ReadableObject, req: HandlerRequest, later: () => Promise<void>): EdgeResponse | Promise<EdgeResponse> {
  const row = obj.row;
  const path = storage.filePath(obj);
  if (path === null) throw new Error('the object store keeps no local files (a streamed read is not wired yet)');
  const lastModified = new Date(row.updated_at).toUTCString();
  const plain: Served = { path, size: row.size, contentType: row.content_type, etag: etagOf(row.sha256), lastModified, key: row.key, publicBucket: obj.publicBucket };
  if (!asksTransform(req.query)) return answer(req, plain);
  // note: a variant already cached is answered at once, like the stored bytes.
  const hit = storage.transformerCached === null ? null : storage.transformerCached(obj, req);
  if (hit !== null) return answer(req, { ...plain, path: hit.path, size: hit.size, contentType: hit.contentType, etag: hit.etag, extra: hit.headers });
  // note: the read routes answer at once (`awaits: false`); a transform waits, so it starts on the next turn.
  return later().then(async () => {
    const v: TransformedBody | null = await transformRead(storage, obj, req);
    return v === null ? answer(req, plain) : answer(req, { ...plain, path: v.path, size: v.size, contentType: v.contentType, etag: v.etag, extra: v.headers });
  });
}

function answer(req: HandlerRequest, s: Served): EdgeResponse {
  const headers: Record<string, string> = {
    'content-type': s.contentType,
    etag: s.etag,
    'last-modified': s.lastModified,
    // note: public objects may be cached briefly (an overwrite keeps the URL); private ones revalidate every time.
    'cache-control': s.publicBucket ? 'public, max-age=60' : 'private, no-cache',
    ...OBJECT_SAFETY_HEADERS,
  };
  if (servedAsAttachment(s.contentType)) headers['content-disposition'] = attachment(s.key);
  if (s.extra !== undefined) Object.assign(headers, s.extra);
  if (notModified(req.headers, s.etag, s.lastModified)) {
    delete headers['content-type'];
    delete headers['content-disposition'];
    return { status: 304, headers };
  }
  return { status: 200, headers, file: { path: s.path, size: s.size, contentType: s.contentType } };
}

/**
 * RFC 9110 §13.2.2: `If-None-Match` (weak comparison, `*`) decides when present; else
 * `If-Modified-Since` at one-second precision. Only for GET and HEAD (the read routes).
 */
export function notModified(h: Readonly<Record<string, string>>, etag: string, lastModified: string): boolean {
  const inm = h['if-none-match'];
  if (inm !== undefined) {
    if (inm.trim() === '*') return true;
    const bare = etag.replace(/^W\//, '');
    for (const t of inm.split(',')) if (t.trim().replace(/^W\//, '') === bare) return true;
    return false;
  }
  const ims = h['if-modified-since'];
  if (ims === undefined) return false;
  const since = Date.parse(ims);
  if (Number.isNaN(since)) return false;
  return Date.parse(lastModified) <= since;
}
