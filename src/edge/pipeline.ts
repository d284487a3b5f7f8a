import type { Config } from '../config.js';
import type { CredentialCache } from '../control/keys.js';
import type { EventBus } from '../events/bus.js';
import type { ProjectRegistry } from '../project/registry.js';
import { authenticate, type AuthDeps, type BearerVerifier } from './authenticate.js';
import { ClientIp } from './client-ip.js';
import { corsHeaders, mergeVary, preflight } from './cors.js';
import { EdgeError, notFound, payloadTooLarge, toHttp, methodNotAllowed } from '../core/errors.js';
import { Ctx, emptyStream, HandlerReq, type DispatchState } from './handler-context.js';
import { parseJsonBody } from './json-body.js';
import { holdLease, holdLeaseWs } from './lease-hold.js';
import { clientGone, nextTurn } from './next-turn.js';
import { RateLimiter, type LimitCheck } from './rate-limit.js';
import { geoOf, type RequestRecord } from './request-record.js';
import { decodeParams, pathSegments } from './request-path.js';
import { newRequestId } from './request-id.js';
import type { EdgeRequest, EdgeResponse, RateLimitRule, RouteDef } from './route.js';
import type { AuthContext } from '../core/auth-context.js';
import { Router, split, type Match } from './router.js';
import { StorageFullLog } from './storage-full-log.js';
import { TopicHub } from './ws-topics.js';

export interface PipelineDeps {
  config: Config;
  routes: readonly RouteDef[];
  credentials: CredentialCache;
  projects: ProjectRegistry;
  bus: EventBus;
  projectExists: (id: string) => boolean;
  onRecord?: (r: RequestRecord) => void;
  logError?: (msg: string, err: unknown) => void;
  /** The rate limiter's clock (tests); `Date.now` by default. */
  now?: () => number;
  /** The server's WebSocket topics (a fresh hub when not given). */
  topics?: TopicHub;
}

const UNMATCHED = '(unmatched)';

/** Whether a request names anyone (a `key?` route without credentials runs anonymous, route.ts AuthMode). */
function sendsCredentials(req: EdgeRequest, route: RouteDef): boolean {
  const h = req.headers;
  if (h['x-service-key'] !== undefined || h.authorization !== undefined || h['x-service-project'] !== undefined) return true;
  if (route.credentials !== 'query' || req.rawQuery === '') return false;
  const q = new URLSearchParams(req.rawQuery);
  return q.has('apikey') || q.has('access_token') || q.has('project');
}
/** The body a route that reads none accepts (and ignores), bytes; past it, 413 (docs/api.md "Request bodies"). */
export const NO_BODY_LIMIT = 1024;
/** The path and query string together, characters at most; past it, 414 (docs/api.md "Limits of a request"). */
export const MAX_URL_LENGTH = 16 * 1024;

/**
 * The socket-free core: `dispatch(EdgeRequest) → EdgeResponse` (docs/architecture.md "One request's path").
 * Route → key/operator → project → scope → bearer → body → handler, and every
 * failure through `toHttp`. Both HTTP backends and the tests call this.
 */
export class Pipeline {
  readonly #d: PipelineDeps;
  readonly #router: Router;
  /** Every geo header name, to tell at once that a request carries none. */
  readonly #geoNames: readonly string[];
  readonly #clientIp: ClientIp;
  /** One limiter for every route with a `rateLimit`; each rule names its own window. */
  readonly #limiter: RateLimiter;
  /** What authenticate() consults; the bearer verifier is set later (setBearerVerifier). */
  readonly #auth: AuthDeps;
  #lastLimit: { method: string; path: string; limit: number; stream: boolean } | null = null;
  /** The operator's storage-full line, rate-limited across requests. */
  readonly #fullLog: StorageFullLog;
  /** Routes whose handler may wait: async handlers, `awaits: true`, and any seen returning a promise. */
  readonly #awaiting = new WeakSet<RouteDef>();
  readonly topics: TopicHub;

  constructor(deps: PipelineDeps) {
    this.#d = deps;
    this.topics = deps.topics ?? new TopicHub();
    this.#router = new Router(deps.routes);
    for (const r of deps.routes) if (r.awaits ?? r.handler.constructor.name === 'AsyncFunction') this.#awaiting.add(r);
    const g = deps.config.geoHeaders;
    this.#geoNames = [...g.lat, ...g.lon, ...g.country];
    this.#clientIp = new ClientIp(deps.config.trustedProxies, deps.config.clientIpHeader);
    this.#limiter = new RateLimiter(deps.config.rateLimit, deps.now);
    this.#auth = { credentials: deps.credentials, projectExists: deps.projectExists, bearer: null };
    this.#fullLog = new StorageFullLog((msg, err) => this.#d.logError?.(msg, err));
  }

  setBearerVerifier(v: BearerVerifier): void {
    this.#auth.bearer = v;
  }

  /** The body limit for a request, known before its body is read (so oversize bodies are never buffered). */
  bodyLimit(method: string, path: string): number {
    return this.#bodyOf(method, path).limit;
  }

  /** Whether a request's route reads its body as a stream (`body: 'stream'`), known before reading it. */
  streamsBody(method: string, path: string): boolean {
    return this.#bodyOf(method, path).stream;
  }

  #bodyOf(method: string, path: string): { method: string; path: string; limit: number; stream: boolean } {
    // note: the last answer is kept: clients repeat the same POST path (a route match saved per body).
    const last = this.#lastLimit;
    if (last !== null && last.path === path && last.method === method) return last;
    const m = this.#router.match(method, split(path));
    const limit = m.kind === 'route' ? this.#limitOf(m.route) : NO_BODY_LIMIT;
    return (this.#lastLimit = { method, path, limit, stream: m.kind === 'route' && m.route.body === 'stream' });
  }

  /** A route's body limit: its own, the JSON (or stream) default for routes that read a body, else NO_BODY_LIMIT. */
  #limitOf(route: RouteDef): number {
    if (route.maxBody !== undefined) return route.maxBody;
    if (route.body === 'stream') return this.#d.config.maxStreamBody;
    return route.body === 'json' || route.body === 'raw' ? this.#d.config.maxJsonBody : NO_BODY_LIMIT;
  }

  /**
   * Answers one request. Synchronous when nothing on the way needs to wait (the
   * common case), so the uWS adapter can reply while still corked.
   */
  dispatch(req: EdgeRequest): EdgeResponse | Promise<EdgeResponse> {
    const st: DispatchState = { t0: performance.now(), requestId: newRequestId(req.headers['x-request-id']), route: null, projectId: null, lease: null, limit: null };
    let out: EdgeResponse | Promise<EdgeResponse>;
    try {
      out = this.#route(req, st);
    } catch (err) {
      return this.#finish(req, st, this.#fail(err, st));
    }
    if (!(out instanceof Promise)) return this.#finish(req, st, out);
    return out.then(
      (r) => this.#finish(req, st, r),
      (err: unknown) => this.#finish(req, st, this.#fail(err, st)),
    );
  }

  /**
   * Answers a WebSocket upgrade request like any other (route, key, scope, bearer, role), before
   * any socket exists: a WebSocket route's `{ status: 101, ws }` accepts it, anything else is the
   * HTTP answer. A handshake the RFC 6455 way malformed is 400 before routing.
   */
  upgrade(req: EdgeRequest): EdgeResponse | Promise<EdgeResponse> {
    const h = req.headers;
    if (req.method !== 'GET' || h.upgrade?.toLowerCase() !== 'websocket' || !/^[A-Za-z0-9+/]{22}==$/.test(h['sec-websocket-key'] ?? '') || h['sec-websocket-version'] !== '13') {
      const st: DispatchState = { t0: performance.now(), requestId: newRequestId(h['x-request-id']), route: null, projectId: null, lease: null, limit: null };
      const err = new EdgeError('invalid_request', 'a WebSocket upgrade needs GET, Upgrade: websocket, a valid Sec-WebSocket-Key and Sec-WebSocket-Version: 13', {
        headers: { 'sec-websocket-version': '13' },
      });
      return this.#finish(req, st, this.#fail(err, st));
    }
    return this.dispatch(req);
  }

  #route(req: EdgeRequest, st: DispatchState): EdgeResponse | Promise<EdgeResponse> {
    if (req.path.length + req.rawQuery.length > MAX_URL_LENGTH) {
      throw new EdgeError('uri_too_long', `the path and query string exceed the limit of ${MAX_URL_LENGTH} characters`);
    }
    const m = this.#router.match(req.method, pathSegments(req.path));
    if (req.method === 'OPTIONS') return this.#options(req, st, m);
    if (m.kind === 'none') throw notFound('route', `${req.method} ${req.path}`);
    if (m.kind === 'method') throw methodNotAllowed(m.allowed);
    const route = (st.route = m.route);
    if (route.websocket === true && req.upgrade !== true) {
      throw new EdgeError('upgrade_required', 'this route is a WebSocket: send a WebSocket upgrade request', { headers: { upgrade: 'websocket', connection: 'Upgrade' } });
    }
    if (route.websocket !== true && req.upgrade === true) {
      // note: a fallback route (GET /:shortId) only stands in for unknown paths, so an upgrade there is the 404 of an unknown path.
      if (route.fallback === true) throw notFound('route', `${req.method} ${req.path}`);
      throw new EdgeError('invalid_request', 'this route does not take a WebSocket upgrade');
    }
    // note: every route has a limit (routes without a body too); the adapter only flags the overflow.
    if (req.bodyTooLarge) throw payloadTooLarge(this.#limitOf(route));
    if (this.#awaits(route)) return nextTurn(req).then(() => this.#authorized(req, st, route, m.params));
    return this.#authorized(req, st, route, m.params);
  }

  /**
   * `OPTIONS`: the CORS preflight answers it on any path; a route that declares `OPTIONS` (auth
   * `none`, e.g. TUS discovery) answers too, and a preflight there carries both sets of headers.
   */
  #options(req: EdgeRequest, st: DispatchState, m: Match): EdgeResponse | Promise<EdgeResponse> {
    const pre = preflight(this.#d.config, req.headers);
    if (m.kind !== 'route' || m.route.method !== 'OPTIONS' || m.route.auth !== 'none') return pre;
    st.route = m.route;
    const merge = (r: EdgeResponse): EdgeResponse => ({ ...r, headers: { ...r.headers, ...pre.headers } });
    const out = this.#handle(req, st, m.route, m.params, null);
    return out instanceof Promise ? out.then(merge) : merge(out);
  }

  #authorized(req: EdgeRequest, st: DispatchState, route: RouteDef, params: Record<string, string>): EdgeResponse | Promise<EdgeResponse> {
    if (route.auth === 'none' || (route.auth === 'key?' && !sendsCredentials(req, route))) return this.#handle(req, st, route, params, null);
    const auth = authenticate(this.#auth, req, route);
    if (auth instanceof Promise) {
      return auth.then((a) => {
        if (req.aborted ?? req.signal.aborted) throw clientGone();
        return this.#handle(req, st, route, params, a);
      });
    }
    return this.#handle(req, st, route, params, auth);
  }

  /**
   * Whether a route's handler may wait (`awaits: true`, else an async function or one seen
   * returning a promise, unless it says `awaits: false`). Such a request starts on the next
   * turn of the event loop, and not at all if its client is gone by then (nextTurn).
   */
  #awaits(route: RouteDef): boolean {
    return this.#awaiting.has(route);
  }

  #handle(req: EdgeRequest, st: DispatchState, route: RouteDef, params: Record<string, string>, auth: AuthContext | null): EdgeResponse | Promise<EdgeResponse> {
    st.projectId = auth?.projectId ?? null;
    if (route.role !== undefined && auth?.role !== route.role) {
      throw new EdgeError('forbidden', 'this request needs the service key or an operator session');
    }
    const hreq = new HandlerReq(req, decodeParams(params), route.body === 'json' ? parseJsonBody(req, this.#d.config, route.jsonAny === true) : undefined, this.#clientIp);
    // note: a request without a body reaches a streamed route with no stream from the backend (it skips the route lookup).
    if (route.body === 'stream' && hreq.stream === null) hreq.stream = emptyStream();
    if (route.rateLimit !== undefined) st.limit = this.#hitLimit(route.rateLimit, hreq, auth?.projectId ?? '');
    const ctx = new Ctx(this.#d, st, auth, req);
    const out = route.handler(hreq, ctx as never);
    // note: a route that says it never waits (`awaits: false`) defers its waiting part itself (ctx.later()).
    if (out instanceof Promise && route.awaits === undefined) this.#awaiting.add(route);
    return out;
  }

  /**
   * Counts one request against a route's buckets (per client address, and per body field when
   * the rule names one and the body carries it); over a limit, 429 `rate_limited`.
   */
  #hitLimit(rule: RateLimitRule, req: HandlerReq, projectId: string): Record<string, string> {
    const checks: LimitCheck[] = [{ key: `${rule.name}:ip:${projectId}:${req.ip}`, limit: rule.perAddress, windowS: rule.windowS }];
    const f = rule.perField;
    const body = req.json;
    if (f !== undefined && typeof body === 'object' && body !== null) {
      const v = (body as Record<string, unknown>)[f.field];
      if (typeof v === 'string' && v.trim() !== '') {
        checks.push({ key: `${rule.name}:${f.field}:${projectId}:${v.trim().toLowerCase()}`, limit: f.limit, windowS: rule.windowS });
      }
    }
    return this.#limiter.hit(checks);
  }

  #fail(err: unknown, st: DispatchState): EdgeResponse {
    const h = toHttp(err, st.requestId);
    if (h.internal !== undefined) {
      // note: an internal error answers without the RateLimit-* headers (as auth's own limiter did).
      st.limit = null;
      this.#d.logError?.(`request ${st.requestId} failed`, h.internal);
    } else if (h.status === 507) this.#fullLog.report(err, st.projectId, st.requestId);
    return { status: h.status, headers: h.headers, json: h.body };
  }

  #finish(req: EdgeRequest, st: DispatchState, res: EdgeResponse): EdgeResponse {
    // note: only a WebSocket route accepts an upgrade, and only an upgrade request gets a socket.
    if (res.ws !== undefined && (req.upgrade !== true || st.route?.websocket !== true)) {
      res = this.#fail(new EdgeError('internal', 'a WebSocket answer to a request that is no upgrade'), st);
    }
    if (st.lease) {
      if (res.sse) res = holdLease(res, st.lease);
      else if (res.ws) res = { ...res, ws: holdLeaseWs(res.ws, st.lease) };
      else st.lease.release();
      st.lease = null;
    }
    // note: a copy, so a handler returning a shared headers object never sees another request's headers.
    // Built from a literal and copied key by key: an object spread followed by a store made V8 build
    // a fresh hidden class on every request (perf showed Map::CopyWithField per request).
    const headers: Record<string, string> = { 'x-request-id': '' };
    const limit = st.limit;
    if (limit !== null) for (const k in limit) headers[k] = limit[k]!;
    const own = res.headers;
    if (own !== undefined) for (const k in own) headers[k] = own[k]!;
    headers['x-request-id'] = st.requestId;
    if (req.headers.origin !== undefined) {
      const cors = corsHeaders(this.#d.config, req.headers.origin);
      if (cors !== undefined) for (const k in cors) headers[k] = k === 'vary' ? mergeVary(headers.vary, cors.vary!) : cors[k]!;
    }
    res = res.ws === undefined ? { status: res.status, headers, json: res.json, bytes: res.bytes, sse: res.sse, stream: res.stream, length: res.length, file: res.file } : { status: 101, headers, ws: res.ws };
    const route = st.route;
    if (this.#d.onRecord && (!route || !route.unlogged)) {
      this.#d.onRecord({
        projectId: st.projectId,
        method: req.method,
        route: route ? route.path : UNMATCHED,
        status: res.status,
        durationMs: performance.now() - st.t0,
        geo: geoOf(this.#d.config, req.headers, this.#geoNames),
      });
    }
    return res;
  }
}
