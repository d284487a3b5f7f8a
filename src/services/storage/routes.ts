import type { Config } from '../../config.js';
import { EdgeError, invalidBody, notFound, unauthorized } from '../../edge/errors.js';
import { json, noContent, route, type AuthContext, type HandlerRequest, type RouteDef } from '../../edge/route.js';
import { objectAnswer } from './read.js';
import { transformQuery } from './signing.js';
import { declaredLength, objectKey, paging, RESERVED_TOP_LEVEL, uploadContentType } from './rules.js';
import type { Caller, StorageService } from './storage.js';

/** The absolute base of public URLs: `--public-url`, else the request's `Host` over http. */
export function baseUrl(config: Config, req: HandlerRequest): string {
  if (config.publicUrl !== null) return config.publicUrl;
  const host = req.headers.host ?? `${config.host}:${config.port}`;
  return `http://${host}`;
}

export const callerOf = (auth: AuthContext): Caller => ({ serviceRole: auth.role === 'service_role', userId: auth.user?.id ?? null });

const object = (body: unknown): Record<string, unknown> => {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidBody('expected a JSON object');
  return body as Record<string, unknown>;
};

/**
 * Storage: buckets (service role), objects (PUT streamed, list, read, delete), public reads by
 * short id (`/storage/objects/{bucket}/{shortId}` without credentials, `/{shortId}`).
 */
export function storageRoutes(storage: StorageService, config: Config): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/storage/buckets',
      auth: 'key',
      scope: 'storage:read',
      handler: (_req, ctx) => json({ buckets: storage.listBuckets(ctx.project) }),
    }),
    route({
      method: 'POST',
      path: '/storage/buckets',
      auth: 'key',
      scope: 'storage:write',
      role: 'service_role',
      body: 'json',
      handler: (req, ctx) => json(storage.createBucket(ctx.project, object(req.json)), 201),
    }),
    route({
      method: 'DELETE',
      path: '/storage/buckets/:bucket',
      auth: 'key',
      scope: 'storage:write',
      role: 'service_role',
      handler: async (req, ctx) => {
        const force = req.query.get('force');
        if (force !== null && force !== 'true' && force !== 'false') throw new EdgeError('invalid_field', 'force: must be true or false', { details: { field: 'force' } });
        await storage.deleteBucket(ctx.project, req.params.bucket!, force === 'true');
        return noContent();
      },
    }),
    route({
      method: 'GET',
      path: '/storage/objects/:bucket',
      auth: 'bearer?',
      scope: 'storage:read',
      handler: (req, ctx) => {
        const { limit, offset } = paging(req.query);
        const prefix = (req.query.get('prefix') ?? '').normalize('NFC');
        return json(storage.listObjects(ctx.project, callerOf(ctx.auth), req.params.bucket!, prefix, limit, offset, baseUrl(config, req)));
      },
    }),
    route({
      method: 'PUT',
      path: '/storage/objects/:bucket/*key',
      auth: 'bearer?',
      scope: 'storage:write',
      body: 'stream',
      maxBody: config.storageMaxObject,
      handler: async (req, ctx) => {
        const caller = callerOf(ctx.auth);
        const plan = storage.planUpload(
          ctx.project,
          caller,
          req.params.bucket!,
          objectKey(req.params.key!),
          uploadContentType(req.headers['content-type']),
          declaredLength(req.headers['content-length']),
        );
        const { record, created } = await storage.putObject(ctx.project, caller, plan, req.stream!, baseUrl(config, req));
        return json(record, created ? 201 : 200);
      },
    }),
    route({
      // note: `rest` is a short id when the index holds it for this bucket, else a key (docs/api.md "Storage").
      method: 'GET',
      path: '/storage/objects/:bucket/*key',
      auth: 'key?',
      scope: 'storage:read',
      awaits: false,
      handler: (req, ctx) => {
        const bucket = req.params.bucket!;
        const rest = req.params.key!;
        if (ctx.auth === null) {
          const obj = storage.readPublic(rest, bucket);
          if (obj !== undefined) return objectAnswer(storage, obj, req, () => ctx.later());
          // note: without credentials only a public bucket's short id is served; a key path needs a key.
          if (storage.isShortId(rest)) throw notFound('object', rest);
          throw unauthorized('missing X-Service-Key header (only public objects are served by short id without one)');
        }
        const obj = storage.readForCaller(ctx.project, callerOf(ctx.auth), bucket, rest, () => objectKey(rest));
        return objectAnswer(storage, obj, req, () => ctx.later());
      },
    }),
    route({
      method: 'DELETE',
      path: '/storage/objects/:bucket/*key',
      auth: 'bearer?',
      scope: 'storage:write',
      handler: async (req, ctx) => {
        await storage.deleteObject(ctx.project, callerOf(ctx.auth), req.params.bucket!, objectKey(req.params.key!));
        return noContent();
      },
    }),
    route({
      method: 'POST',
      path: '/storage/signed/:bucket/*key',
      auth: 'bearer?',
      scope: 'storage:read',
      body: 'json',
      handler: (req, ctx) =>
        json(storage.sign(ctx.project, callerOf(ctx.auth), req.params.bucket!, objectKey(req.params.key!), object(req.json ?? {}), baseUrl(config, req))),
    }),
    route({
      // note: no credentials: the token is the grant (docs/api.md "Signed URLs").
      method: 'GET',
      path: '/storage/signed/:bucket/*key',
      auth: 'none',
      awaits: false,
      handler: (req, ctx) => {
        const q = req.query;
        const obj = storage.readSigned(req.params.bucket!, objectKey(req.params.key!), q.get('token'), transformQuery((n) => q.get(n)));
        return objectAnswer(storage, obj, req, () => ctx.later());
      },
    }),
    route({
      // note: the legacy short URL; only a 10-character base62 segment the index holds is one,
      // every other one-segment path answers the 404 of an unknown path (never 405: `fallback`).
      method: 'GET',
      path: '/:shortId',
      auth: 'none',
      fallback: true,
      awaits: false,
      handler: (req, ctx) => {
        const id = req.params.shortId!;
        const obj = RESERVED_TOP_LEVEL.has(id) ? undefined : storage.readPublic(id, null);
        if (obj === undefined) throw notFound('route', `${req.method} ${req.path}`);
        return objectAnswer(storage, obj, req, () => ctx.later());
      },
    }),
  ];
}
