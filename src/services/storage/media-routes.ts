import type { Config } from '../../config.js';
import type { ResolvedKey } from '../../control/keys.js';
import { EdgeError, invalidBody } from '../../core/errors.js';
import { json, noContent, route, type EdgeResponse, type HandlerRequest, type RouteDef } from '../../edge/route.js';
import { pageParams, uploadErrorPage, uploadPage } from './upload-page.js';
import { MAX_PART_SIZE, type TusState, type UploadService } from './uploads.js';
import { baseUrl, callerOf } from './routes.js';
import { declaredLength, objectKey } from './rules.js';

const TUS_VERSION = '1.0.0';
const TUS_EXTENSIONS = 'creation,termination,expiration';

const object = (body: unknown): Record<string, unknown> => {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidBody('expected a JSON object');
  return body as Record<string, unknown>;
};

/** Headers every TUS answer carries, errors included. */
function tusHeaders(maxSize: number): Record<string, string> {
  return { 'tus-resumable': TUS_VERSION, 'tus-version': TUS_VERSION, 'tus-extension': TUS_EXTENSIONS, 'tus-max-size': String(maxSize), 'cache-control': 'no-store' };
}

const httpDate = (iso: string): string => new Date(iso).toUTCString();

/**
 * A TUS handler: a request naming another protocol version is 412; every answer and error
 * carries `Tus-Resumable` (TUS 1.0 core).
 */
function tus(maxSize: number, fn: (req: HandlerRequest) => Promise<EdgeResponse> | EdgeResponse): (req: HandlerRequest) => Promise<EdgeResponse> {
  return async (req) => {
    const h = tusHeaders(maxSize);
    const asked = req.headers['tus-resumable'];
    if (asked !== undefined && asked !== TUS_VERSION) {
      return { status: 412, headers: h, json: { error: { code: 'unsupported_version', message: `only TUS ${TUS_VERSION} is spoken here` } } };
    }
    try {
      const r = await fn(req);
      return { ...r, headers: { ...h, ...r.headers } };
    } catch (err) {
      if (err instanceof EdgeError) throw new EdgeError(err.code, err.message, { details: err.details, headers: { ...h, ...err.headers }, cause: err.cause });
      throw err;
    }
  };
}

function tusProgress(s: TusState): Record<string, string> {
  return { 'upload-offset': String(s.offset), 'upload-length': String(s.length), 'upload-expires': httpDate(s.expiresAt) };
}

/**
 * Multipart uploads, TUS 1.0 and the upload iframe (docs/api.md "Multipart and TUS", "Upload
 * iframe"). `resolveKey` reads an API key for the iframe page, which must refuse a service-role
 * key before it puts the key in a page; the page's own requests go through the pipeline.
 */
export function mediaRoutes(uploads: UploadService, config: Config, resolveKey: (secret: string) => ResolvedKey | null): RouteDef[] {
  const maxSize = config.storageMaxObject;
  const keyOf = (raw: string): string => objectKey(raw);
  return [
    route({
      method: 'POST',
      path: '/storage/multipart',
      auth: 'bearer?',
      scope: 'storage:write',
      body: 'json',
      handler: async (req, ctx) => json(await uploads.startMultipart(ctx.project, callerOf(ctx.auth), object(req.json), keyOf), 201),
    }),
    route({
      method: 'PUT',
      path: '/storage/multipart/:id/:part',
      auth: 'bearer?',
      scope: 'storage:write',
      body: 'stream',
      maxBody: MAX_PART_SIZE,
      handler: async (req, ctx) =>
        json(await uploads.putPart(ctx.project, callerOf(ctx.auth), req.params.id!, req.params.part!, req.stream!, declaredLength(req.headers['content-length']))),
    }),
    route({
      method: 'GET',
      path: '/storage/multipart/:id',
      auth: 'bearer?',
      scope: 'storage:write',
      handler: (req, ctx) => json(uploads.info(ctx.project, callerOf(ctx.auth), req.params.id!)),
    }),
    route({
      method: 'POST',
      path: '/storage/multipart/:id/complete',
      auth: 'bearer?',
      scope: 'storage:write',
      handler: async (req, ctx) => {
        const { record, created } = await uploads.completeMultipart(ctx.project, callerOf(ctx.auth), req.params.id!, baseUrl(config, req));
        return json(record, created ? 201 : 200);
      },
    }),
    route({
      method: 'DELETE',
      path: '/storage/multipart/:id',
      auth: 'bearer?',
      scope: 'storage:write',
      handler: async (req, ctx) => {
        await uploads.abort(ctx.project, callerOf(ctx.auth), req.params.id!, 'multipart');
        return noContent();
      },
    }),
    // --- TUS 1.0: core, creation, termination, expiration
    route({
      method: 'POST',
      path: '/storage/tus',
      auth: 'bearer?',
      scope: 'storage:write',
      handler: (req, ctx) =>
        tus(maxSize, async () => {
          const base = baseUrl(config, req);
          const s = await uploads.tusCreate(ctx.project, callerOf(ctx.auth), req.headers['upload-length'], req.headers['upload-metadata'], keyOf, base);
          return { status: 201, headers: { location: `${base}/storage/tus/${s.id}`, ...tusProgress(s) } };
        })(req),
    }),
    route({
      // note: HEAD is answered by this route (the router falls back to GET), without a body.
      method: 'GET',
      path: '/storage/tus/:id',
      auth: 'bearer?',
      scope: 'storage:write',
      handler: (req, ctx) => tus(maxSize, () => ({ status: 200, headers: tusProgress(uploads.tusState(ctx.project, callerOf(ctx.auth), req.params.id!)) }))(req),
    }),
    route({
      method: 'PATCH',
      path: '/storage/tus/:id',
      auth: 'bearer?',
      scope: 'storage:write',
      body: 'stream',
      maxBody: maxSize,
      handler: (req, ctx) =>
        tus(maxSize, async () => {
          const ct = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
          if (ct !== 'application/offset+octet-stream') throw new EdgeError('unsupported_media_type', 'a PATCH body must be application/offset+octet-stream');
          const s = await uploads.tusPatch(ctx.project, callerOf(ctx.auth), req.params.id!, req.headers['upload-offset'], req.stream!, baseUrl(config, req));
          return { status: 204, headers: tusProgress(s) };
        })(req),
    }),
    route({
      method: 'DELETE',
      path: '/storage/tus/:id',
      auth: 'bearer?',
      scope: 'storage:write',
      handler: (req, ctx) =>
        tus(maxSize, async () => {
          await uploads.abort(ctx.project, callerOf(ctx.auth), req.params.id!, 'tus');
          return noContent();
        })(req),
    }),
    // note: TUS discovery (OPTIONS, TUS 1.0) needs no key; a browser's preflight here gets the CORS headers as well (src/edge/pipeline.ts).
    ...['/storage/tus', '/storage/tus/:id'].map((path) =>
      route({
        method: 'OPTIONS',
        path,
        auth: 'none',
        awaits: false,
        handler: () => ({ status: 204, headers: tusHeaders(maxSize) }),
      }),
    ),
    // --- the upload iframe
    route({
      method: 'GET',
      path: '/upload',
      auth: 'none',
      handler: (req) => {
        const secret = req.query.get('key') ?? '';
        const key = secret === '' ? null : resolveKey(secret);
        if (key === null) return uploadErrorPage(401, 'This upload form needs a valid publishable API key (?key=).');
        // note: a service-role key in a web page would hand every visitor the whole project.
        if (key.role === 'service_role') return uploadErrorPage(400, 'A service-role key may not be used in a web page; use the publishable key.');
        if (!key.scopes.has('storage:write')) return uploadErrorPage(401, 'This API key lacks the storage:write scope.');
        let params: ReturnType<typeof pageParams>;
        try {
          params = pageParams(req.query);
        } catch (err) {
          if (err instanceof EdgeError) return uploadErrorPage(400, err.message);
          throw err;
        }
        return uploadPage({ base: baseUrl(config, req), key: secret, ...params });
      },
    }),
  ];
}
