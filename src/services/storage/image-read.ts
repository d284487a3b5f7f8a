import type { HandlerRequest } from '../../edge/route.js';
import type { ObjectStore } from './object-store.js';
import { isRasterType, parseTransform } from './image-params.js';
import type { ImageTransformer } from './image-transform.js';
import { etagOf, type ReadableObject, type StorageService } from './storage.js';
import type { TransformedBody } from './transform.js';
import { variantMemoKey } from './read.js';

/**
 * The read path's transform (`StorageService.transformer`): the query's `w, h, g, fit, format, q`
 * validated, the object's variant made or taken from the cache. `format=auto` answers with
 * `Vary: Accept`.
 */
export function imageReadHook(images: ImageTransformer, storage: StorageService): (obj: ReadableObject, req: HandlerRequest) => Promise<TransformedBody | null> {
  return async (obj, req) => {
    const params = parseTransform(req.query);
    // note: only raster image types are transformed; any other object is served as stored.
    if (params === null || !isRasterType(obj.row.content_type)) return null;
    const file = storage.filePath(obj);
    if (file === null) return null;
    const v = await images.variant(
      { projectId: obj.projectId, ref: obj.row.ref, file, contentType: obj.row.content_type, etag: etagOf(obj.row.sha256) },
      params,
      req.headers.accept,
    );
    return { path: v.file, size: v.size, contentType: v.contentType, etag: v.etag, headers: v.negotiated ? { vary: 'Accept' } : undefined };
  };
}

/**
 * The read path's wait-free lookup (`StorageService.transformerCached`): the cached variant
 * when it can be found without the disk, else null (then `imageReadHook` runs). Bad parameters throw.
 */
export function imageCacheHook(images: ImageTransformer, storage: StorageService): (obj: ReadableObject, req: HandlerRequest) => TransformedBody | null {
  // note: the answers found for a (version, query string[, Accept]) are remembered, so a repeated
  // read of a cached variant skips parsing and hashing; the index still decides it is cached.
  const memo = new Map<string, { projectId: string; cacheKey: string; body: TransformedBody }>();
  return (obj, req) => {
    const mk = `${obj.projectId}\n${obj.row.ref}\n${variantMemoKey(req)}`;
    const m = memo.get(mk);
    if (m !== undefined) {
      if (images.stillCached(m.projectId, m.cacheKey)) return m.body;
      memo.delete(mk);
    }
    const params = parseTransform(req.query);
    // note: only raster image types are transformed; any other object is served as stored.
    if (params === null || !isRasterType(obj.row.content_type)) return null;
    const file = storage.filePath(obj);
    if (file === null) return null;
    const v = images.cached({ projectId: obj.projectId, ref: obj.row.ref, file, contentType: obj.row.content_type, etag: etagOf(obj.row.sha256) }, params, req.headers.accept);
    if (v === null) return null;
    const { projectId } = obj;
    const cacheKey = v.cacheKey;
    const body: TransformedBody = {
      path: v.file,
      size: v.size,
      contentType: v.contentType,
      etag: v.etag,
      headers: v.negotiated ? { vary: 'Accept' } : undefined,
      stillCached: () => images.stillCached(projectId, cacheKey),
    };
    if (memo.size >= MEMO_CAP) memo.delete(memo.keys().next().value!);
    memo.set(mk, { projectId: obj.projectId, cacheKey: v.cacheKey, body });
    return body;
  };
}

const MEMO_CAP = 10_000;

/** An ObjectStore whose deletes also drop the ref's cached variants (an overwrite or delete makes them stale). */
export function withVariantCleanup(files: ObjectStore, images: ImageTransformer): ObjectStore {
  return {
    put: (projectId, body, limit) => files.put(projectId, body, limit),
    get: (projectId, ref, range) => files.get(projectId, ref, range),
    path: (projectId, ref) => files.path(projectId, ref),
    async delete(projectId, ref) {
      await files.delete(projectId, ref);
      await images.dropRef(projectId, ref);
    },
    forget(projectId) {
      files.forget(projectId);
      images.forget(projectId);
    },
  };
}
