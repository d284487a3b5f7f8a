import type { Config } from '../config.js';
import type { EdgeResponse } from './route.js';

// note: conditional reads (storage) and TUS 1.0 send headers outside the CORS safelist; TUS answers with its own.
const ALLOW_HEADERS =
  'authorization, content-type, x-service-key, x-service-project, x-request-id, last-event-id, range, if-none-match, if-modified-since, if-range, ' +
  'tus-resumable, upload-length, upload-offset, upload-metadata, upload-defer-length, upload-concat';
const EXPOSE_HEADERS =
  'x-request-id, retry-after, ratelimit-limit, ratelimit-remaining, ratelimit-reset, location, etag, content-range, content-length, ' +
  'upload-offset, upload-length, upload-expires, tus-resumable, tus-version, tus-extension, tus-max-size';
const ALLOW_METHODS = 'GET, POST, PUT, PATCH, DELETE, OPTIONS';

function allowedOrigin(config: Config, origin: string | undefined): string | null {
  if (origin === undefined) return null;
  if (config.corsOrigins.includes('*')) return '*';
  return config.corsOrigins.includes(origin) ? origin : null;
}

/** CORS headers for an actual response; none when the origin is absent or not allowed. */
export function corsHeaders(config: Config, origin: string | undefined): Record<string, string> | undefined {
  const allow = allowedOrigin(config, origin);
  if (allow === null) return undefined;
  const h: Record<string, string> = { 'access-control-allow-origin': allow, 'access-control-expose-headers': EXPOSE_HEADERS };
  if (allow !== '*') h.vary = 'Origin';
  return h;
}

/**
 * `Vary` with the CORS value added to what the answer already varies on (`Vary: Accept` of an
 * image transform stays): a comma list, each name once (case-insensitive), `*` absorbing all.
 */
export function mergeVary(own: string | undefined, add: string): string {
  if (own === undefined || own.trim() === '') return add;
  const names: string[] = [];
  const seen = new Set<string>();
  for (const part of `${own},${add}`.split(',')) {
    const n = part.trim();
    if (n === '' || seen.has(n.toLowerCase())) continue;
    seen.add(n.toLowerCase());
    names.push(n);
  }
  return seen.has('*') ? '*' : names.join(', ');
}

/** Answers a CORS preflight (`OPTIONS`): 204, with the allow headers only for an allowed origin. */
export function preflight(config: Config, headers: Readonly<Record<string, string>>): EdgeResponse {
  const allow = allowedOrigin(config, headers.origin);
  if (allow === null || headers['access-control-request-method'] === undefined) return { status: 204 };
  return {
    status: 204,
    headers: {
      'access-control-allow-methods': ALLOW_METHODS,
      'access-control-allow-headers': ALLOW_HEADERS,
      'access-control-max-age': '600',
    },
  };
}
