import { EdgeError, invalidField } from '../../core/errors.js';
import { parseJsonBody } from '../../edge/json-body.js';
import { json, noContent, route, type HandlerRequest, type RouteDef } from '../../edge/route.js';
import type { Config } from '../../config.js';
import { MAX_SOURCE_BYTES, type DeployInput, type FunctionsService } from './functions.js';

/** The deploy body limit: a source of `MAX_SOURCE_BYTES` as a JSON string with room for escapes and options. */
export const DEPLOY_MAX_BODY = 3 * MAX_SOURCE_BYTES;
const utf8 = new TextDecoder('utf-8', { fatal: true });
const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8' };

/**
 * The functions endpoints (docs/api.md "Functions and jobs"): deploy, list, get and delete
 * need the service role; invoke needs `functions:invoke` and the function's own `access`.
 */
export function functionsRoutes(fns: FunctionsService): RouteDef[] {
  return [
    route({ method: 'GET', path: '/functions/runtime', auth: 'key', scope: 'functions:invoke', handler: () => json(fns.runtime()) }),
    route({ method: 'GET', path: '/functions', auth: 'key', scope: 'functions:invoke', role: 'service_role', handler: (_r, c) => json(fns.list(c.project)) }),
    route({
      method: 'GET',
      path: '/functions/:name',
      auth: 'key',
      scope: 'functions:invoke',
      role: 'service_role',
      handler: (r, c) => json(fns.get(c.project, r.params.name!)),
    }),
    route({
      method: 'PUT',
      path: '/functions/:name',
      auth: 'key',
      scope: 'functions:invoke',
      role: 'service_role',
      body: 'raw',
      maxBody: DEPLOY_MAX_BODY,
      handler: async (r, c) => {
        const { fn, created } = await fns.deploy(c.project, r.params.name!, deployInput(r, c.config));
        return json(fn, created ? 201 : 200);
      },
    }),
    route({
      method: 'DELETE',
      path: '/functions/:name',
      auth: 'key',
      scope: 'functions:invoke',
      role: 'service_role',
      handler: (r, c) => {
        fns.delete(c.project, r.params.name!);
        return noContent();
      },
    }),
    route({
      method: 'POST',
      path: '/functions/:name',
      auth: 'bearer?',
      scope: 'functions:invoke',
      body: 'json',
      jsonAny: true,
      handler: async (r, c) => ({ status: 200, bytes: await fns.invokeText(c.project, r.params.name!, r.json ?? null, c.auth, { version: versionParam(r) }), headers: JSON_TYPE }),
    }),
  ];
}

function versionParam(r: HandlerRequest): number | undefined {
  const v = r.query.get('version');
  if (v === null) return undefined;
  if (!/^[1-9]\d{0,8}$/.test(v)) throw invalidField('version', 'must be a positive integer');
  return Number(v);
}

const JS_TYPES = new Set(['application/javascript', 'text/javascript', 'application/x-javascript']);
const TS_TYPES = new Set(['application/typescript', 'text/typescript', 'application/x-typescript']);

/** The deploy body: JSON `{source (or code), language?, ...options}`, or the raw source (docs/api.md "Deploy"). */
function deployInput(r: HandlerRequest, config: Config): DeployInput {
  const type = (r.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (JS_TYPES.has(type) || TS_TYPES.has(type)) {
    const body = r.body ?? Buffer.alloc(0);
    if (body.length > MAX_SOURCE_BYTES) throw new EdgeError('payload_too_large', `the source is over ${MAX_SOURCE_BYTES} bytes`);
    let source: string;
    try {
      source = utf8.decode(body);
    } catch {
      throw new EdgeError('invalid_body', 'the source is not valid UTF-8');
    }
    return { source, language: TS_TYPES.has(type) ? 'ts' : 'js', options: {} };
  }
  if (type !== '' && type !== 'application/json') {
    throw new EdgeError('unsupported_media_type', 'the body must be application/json, application/javascript or application/typescript');
  }
  const b = parseJsonBody(r, { ...config, maxJsonBody: DEPLOY_MAX_BODY }) as Record<string, unknown>;
  for (const k in b) if (!FIELDS.has(k)) throw invalidField(k, 'unknown field');
  if (b.source !== undefined && b.code !== undefined) throw invalidField('code', 'give "source" or its alias "code", not both');
  const source = b.source ?? b.code;
  if (typeof source !== 'string') throw invalidField('source', 'must be a string');
  const language = b.language ?? 'js';
  if (language !== 'js' && language !== 'ts') throw invalidField('language', 'must be "js" or "ts"');
  const { source: _s, code: _c, language: _l, ...options } = b;
  return { source, language, options };
}

const FIELDS = new Set(['source', 'code', 'language', 'timeout_ms', 'memory_mb', 'access', 'secrets', 'schedules', 'triggers']);
