import type { HandlerRequest } from '../../edge/route.js';
import type { ReadableObject, StorageService } from './storage.js';

/** The query parameters of an image transform (docs/api.md "Storage", image resizing). */
export const TRANSFORM_PARAMS = ['w', 'h', 'g', 'fit', 'format', 'q'] as const;

/** A body that replaces the stored bytes on a read (an image variant). */
export interface TransformedBody {
  /** A local file holding the variant (served with ranges like the original). */
  readonly path: string;
  readonly size: number;
  readonly contentType: string;
  /** The variant's strong ETag (with quotes), derived from the object's and the normalised parameters. */
  readonly etag: string;
  /** Extra headers, e.g. `Vary: Accept` for `format=auto`. */
  readonly headers?: Readonly<Record<string, string>>;
  /** For a variant found in the cache: whether it is still there (then it counts as used now); the read path may remember it while true. */
  readonly stillCached?: () => boolean;
}

/** Whether a read asks for a transform at all (any of `w, h, g, fit, format, q`). */
export function asksTransform(q: URLSearchParams): boolean {
  for (const p of TRANSFORM_PARAMS) if (q.has(p)) return true;
  return false;
}

/**
 * The read path's transform hook (image resizing, filled in by the image service): given the
 * object about to be served (its record, project and bucket publicity), the path of its stored
 * file (`source`) and the request (its `w, h, g, fit, format, q` and `Accept`), the
 * variant to send instead, or null to send the stored bytes. Called only when `asksTransform`.
 * Validation errors throw `EdgeError`s (400 `invalid_field`, 503 `unavailable`, …).
 *
 * Filled by image resizing (`StorageService.transformer`, set in server.ts; image-read.ts);
 * without one the stored bytes are served.
 */
export function transformRead(storage: StorageService, obj: ReadableObject, _source: string, req: HandlerRequest): Promise<TransformedBody | null> | null {
  return storage.transformer === null ? null : storage.transformer(obj, req);
}
