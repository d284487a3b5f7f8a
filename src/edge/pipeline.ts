import { performance } from 'node:perf_hooks';
import type { Config } from '../config.js';
import type { CredentialCache, ResolvedKey } from '../control/keys.js';
import type { EventBus } from '../events/bus.js';
import type { ProjectLease, ProjectRegistry } from '../project/registry.js';
import { ClientIp } from './client-ip.js';
import { corsHeaders, preflight } from './cors.js';
import { EdgeError, notFound, payloadTooLarge, toHttp, unauthorized, methodNotAllowed } from './errors.js';
import { parseJsonBody } from './json-body.js';
import { RateLimiter, type LimitCheck } from './rate-limit.js';
import { newRequestId } from './request-id.js';
import type { AuthContext, EdgeRequest, EdgeResponse, HandlerRequest, RateLimitRule, RouteDef, Scope, UserClaims, WsHandlers } from './route.js';
import { SCOPES } from './route.js';
import { Router, split } from './router.js';
import { TopicHub } from './ws-topics.js';
import { requireScope } from './scopes.js';

/** Verifies a user access token (`lca_…`) for a project; filled by the auth service. */
export type BearerVerifier = (projectId: string, token: string) => UserClaims | Promise<UserClaims>;

export interface Geo {
  lat: number | null;
  lon: number | null;
  country: string | null;
}

/** What the pipeline reports about each answered request (live log, public traffic). */
export interface RequestRecord {
  projectId: string | null;
  method: string;
  route: string;
  status: number;
  durationMs: number;
  geo: Geo | null;
}

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

interface DispatchState {
  readonly t0: number;
  readonly requestId: string;
  route: RouteDef | null;
  projectId: string | null;
  lease: ProjectLease | null;
  /** The `RateLimit-*` headers of a rate-limited route, sent with its answer (errors included). */
  limit: Record<string, string> | null;
}

const ALL_SCOPES: ReadonlySet<Scope> = new Set(SCOPES);
const EMPTY_QUERY = new URLSearchParams();
const UNMATCHED = '(unmatched)';
/** The body a route that reads none accepts (and ignores), bytes; past it, 413 (docs/api.md "Request bodies"). */
export const NO_BODY_LIMIT = 1024;
/** The path and query string together, characters at most; past it, 414 (docs/api.md "Limits of a request"). */
export const MAX_URL_LENGTH = 16 * 1024;

/** Why a request that waited for its turn did not run: its client had closed the connection (never sent). */
const clientGone = (): EdgeError => new EdgeError('invalid_request', 'the client closed the connection before the request ran');


/**
 * The socket-free core: `dispatch(EdgeRequest) → EdgeResponse` (STYLE.md 3.2).
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
  #bearer: BearerVerifier | null = null;
  #lastLimit: { method: string; path: string; limit: number; stream: boolean } | null = null;
  #fullLoggedAt = -Infinity;
  #fullSuppressed = 0;
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
  }

  setBearerVerifier(v: BearerVerifier): void {
    this.#bearer = v;
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
    if (req.method === 'OPTIONS') return preflight(this.#d.config, req.headers);
    const m = this.#router.match(req.method, pathSegments(req.path));
    if (m.kind === 'none') throw notFound('route', `${req.method} ${req.path}`);
    if (m.kind === 'method') throw methodNotAllowed(m.allowed);
    const route = (st.route = m.route);
    if (route.websocket === true && req.upgrade !== true) {
      throw new EdgeError('upgrade_required', 'this route is a WebSocket: send a WebSocket upgrade request', { headers: { upgrade: 'websocket', connection: 'Upgrade' } });
    }
    if (route.websocket !== true && req.upgrade === true) throw new EdgeError('invalid_request', 'this route does not take a WebSocket upgrade');
    // note: every route has a limit (routes without a body too); the adapter only flags the overflow.
    if (req.bodyTooLarge) throw payloadTooLarge(this.#limitOf(route));
    if (this.#awaits(route)) return nextTurn(req).then(() => this.#authorized(req, st, route, m.params));
    return this.#authorized(req, st, route, m.params);
  }

  #authorized(req: EdgeRequest, st: DispatchState, route: RouteDef, params: Record<string, string>): EdgeResponse | Promise<EdgeResponse> {
    if (route.auth === 'none') return this.#handle(req, st, route, params, null);
    const auth = this.#authenticate(req, route);
    if (auth instanceof Promise) {
      return auth.then((a) => {
        if (req.signal.aborted) throw clientGone();
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
    } else if (h.status === 507) this.#logFull(err, st);
    return { status: h.status, headers: h.headers, json: h.body };
  }

  /**
   * One line for the operator when a write meets a full disk or a project's size cap (at most
   * one per 10 s, with how many more were refused meanwhile), never naming the body.
   */
  #logFull(err: unknown, st: DispatchState): void {
    const now = performance.now();
    if (now - this.#fullLoggedAt < 10_000) {
      this.#fullSuppressed++;
      return;
    }
    const cause = (err instanceof EdgeError ? err.cause : err) as { code?: unknown } | undefined;
    const code = typeof cause?.code === 'string' ? cause.code : 'SQLITE_FULL';
    const more = this.#fullSuppressed > 0 ? ` (${this.#fullSuppressed} more since the last report)` : '';
    this.#fullLoggedAt = now;
    this.#fullSuppressed = 0;
    this.#d.logError?.(
      `storage full: a write to project ${st.projectId ?? '(none)'} failed with ${code} (request ${st.requestId}${more}); ` +
        'free disk space in the data folder or raise PLATFORM_EDGE_MAX_PROJECT_DB_BYTES; writes answer 507 until then',
      undefined,
    );
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
      if (cors !== undefined) for (const k in cors) headers[k] = cors[k]!;
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

  #authenticate(req: EdgeRequest, route: RouteDef): AuthContext | Promise<AuthContext> {
    const { credentials } = this.#d;
    let authz = req.headers.authorization;
    let keyHeader = req.headers['x-service-key'];
    let projectHeader = req.headers['x-service-project'];
    const fromQuery = route.credentials === 'query';
    if (fromQuery && req.rawQuery !== '') {
      // note: only routes that opt in read credentials from the query string (EventSource cannot
      // send headers); a header, when sent, wins. Elsewhere these parameters are ignored.
      const q = new URLSearchParams(req.rawQuery);
      keyHeader ??= q.get('apikey') ?? undefined;
      if (authz === undefined) {
        const token = q.get('access_token');
        if (token !== null) authz = `Bearer ${token}`;
      }
      projectHeader ??= q.get('project') ?? undefined;
    }
    const bearer = authz !== undefined && /^bearer /i.test(authz) ? authz.slice(7).trim() : null;
    let auth: AuthContext;
    if (route.auth === 'operator' || (keyHeader === undefined && bearer?.startsWith('lcd_'))) {
      const op = bearer?.startsWith('lcd_') ? credentials.operator(bearer) : null;
      if (!op) throw unauthorized('missing or invalid operator session');
      const projectId = projectHeader ?? '';
      if (route.auth !== 'operator' && !this.#d.projectExists(projectId)) {
        throw unauthorized(fromQuery ? 'X-Service-Project (or ?project=) must name an existing project' : 'X-Service-Project must name an existing project');
      }
      auth = {
        projectId,
        keyId: null,
        scopes: ALL_SCOPES,
        role: 'service_role',
        operator: { id: op.id, email: op.email },
        user: null,
      };
      return auth;
    }
    if (keyHeader === undefined || keyHeader === '') {
      throw unauthorized(fromQuery ? 'missing X-Service-Key header (or apikey query parameter)' : 'missing X-Service-Key header');
    }
    const key = credentials.key(keyHeader);
    if (!key) throw unauthorized('invalid API key');
    if (route.scope !== undefined) requireScope(key.scopes, route.scope);
    // note: only routes that use a user verify the token, so a stale Authorization header
    // cannot break key-only calls such as POST /auth/refresh.
    if (route.auth !== 'key' && authz !== undefined && authz !== '') {
      if (bearer !== null && bearer.startsWith('lca_')) {
        if (!this.#bearer) throw unauthorized('access tokens are not accepted here');
        const user = this.#bearer(key.projectId, bearer);
        return user instanceof Promise ? user.then((u) => keyAuth(key, u)) : keyAuth(key, user);
      }
      // note: a header that names no user (`Bearer abc`, an API key as the bearer, a bare token,
      // `Basic …`) is refused rather than served as anonymous; an operator session sent with a
      // key is the one exception (the key wins, see docs/api.md).
      if (bearer === null || !bearer.startsWith('lcd_')) {
        throw unauthorized('malformed Authorization header: expected "Bearer <access token>" (lca_…)');
      }
    }
    if (route.auth === 'bearer') throw unauthorized('this request needs Authorization: Bearer <access token>');
    return keyAuth(key, null);
  }
}

/** The auth context of an API key, with the user its Bearer token names (if any). */
function keyAuth(key: ResolvedKey, user: UserClaims | null): AuthContext {
  return {
    projectId: key.projectId,
    keyId: key.id,
    scopes: key.scopes,
    role: key.role === 'service_role' ? 'service_role' : (user?.role ?? 'anon'),
    operator: null,
    user,
  };
}

/** What a handler receives; a class so V8 keeps it fast (no literal getters). */
class HandlerReq implements HandlerRequest {
  readonly method: string;
  readonly path: string;
  readonly rawQuery: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer | null;
  readonly bodyTooLarge: boolean | undefined;
  stream: AsyncIterable<Uint8Array> | null;
  #query: URLSearchParams | null = null;
  readonly #req: EdgeRequest;
  readonly #clientIp: ClientIp;

  constructor(
    req: EdgeRequest,
    readonly params: Readonly<Record<string, string>>,
    readonly json: unknown,
    clientIp: ClientIp,
  ) {
    this.#req = req;
    this.#clientIp = clientIp;
    this.method = req.method;
    this.path = req.path;
    this.rawQuery = req.rawQuery;
    this.headers = req.headers;
    this.body = req.body;
    this.bodyTooLarge = req.bodyTooLarge;
    this.stream = req.stream ?? null;
  }

  /** The client's address (behind a trusted proxy: the one it forwards; see client-ip.ts). */
  get ip(): string {
    return this.#clientIp.of(this.#req.ip, this.headers);
  }

  get signal(): AbortSignal {
    return this.#req.signal;
  }

  get query(): URLSearchParams {
    return (this.#query ??= this.rawQuery ? new URLSearchParams(this.rawQuery) : EMPTY_QUERY);
  }
}

/** The handler context; the project lease is taken on first use and released by the pipeline. */
class Ctx {
  readonly config: Config;
  readonly bus: EventBus;
  readonly requestId: string;
  readonly user: UserClaims | null;
  readonly operator: AuthContext['operator'];
  readonly #deps: PipelineDeps;
  readonly #st: DispatchState;
  readonly #req: EdgeRequest;

  constructor(
    deps: PipelineDeps,
    st: DispatchState,
    readonly auth: AuthContext | null,
    req: EdgeRequest,
  ) {
    this.#deps = deps;
    this.#st = st;
    this.#req = req;
    this.config = deps.config;
    this.bus = deps.bus;
    this.requestId = st.requestId;
    this.user = auth?.user ?? null;
    this.operator = auth?.operator ?? null;
  }

  get project(): ProjectLease {
    if (!this.auth) throw new Error('route without auth has no project');
    return (this.#st.lease ??= this.#deps.projects.acquire(this.auth.projectId));
  }

  later(): Promise<void> {
    return nextTurn(this.#req);
  }
}

let deferred: (() => void)[] = [];
const runDeferred = (): void => {
  const batch = deferred;
  deferred = [];
  for (const go of batch) go();
};

/**
 * Resolves on the next check phase of the event loop (one setImmediate for every request
 * waiting), or rejects if the request's client has gone by then: the uWS backend closes a
 * connection on which another request arrives while one is pending, so a request pipelined
 * behind this one in the same read means this one will never be answered, and must not run
 * (docs/api.md, "HTTP/1.1 pipelining").
 */
function nextTurn(req: EdgeRequest): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (deferred.length === 0) setImmediate(runDeferred);
    deferred.push(() => (req.signal.aborted ? reject(clientGone()) : resolve()));
  });
}

async function* emptyStream(): AsyncGenerator<Uint8Array> {}

/** Splits and validates the path: no `.`/`..` segments (path traversal), no NUL. */
function pathSegments(path: string): string[] {
  const segs = split(path);
  for (const s of segs) {
    const d = s.includes('%') ? safeDecode(s) : s;
    if (d === '.' || d === '..' || d.includes('\0') || (d !== s && (d.includes('/') || d.includes('\\')))) {
      throw new EdgeError('invalid_request', 'the path contains a forbidden segment');
    }
  }
  return segs;
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new EdgeError('invalid_request', 'malformed percent-encoding in the path');
  }
}

function decodeParams(p: Record<string, string>): Record<string, string> {
  for (const k in p) {
    const v = p[k]!;
    if (v.includes('%')) {
      try {
        p[k] = decodeURIComponent(v);
      } catch {
        throw new EdgeError('invalid_request', `malformed percent-encoding in path parameter "${k}"`);
      }
    }
  }
  return p;
}

/** Keeps the project lease until an SSE stream closes (STYLE.md 3.5). */
function holdLease(res: EdgeResponse, lease: ProjectLease): EdgeResponse {
  const source = res.sse!;
  return {
    ...res,
    sse: (ch) => {
      const cleanup = source(ch);
      return () => {
        try {
          cleanup?.();
        } finally {
          lease.release();
        }
      };
    },
  };
}

/** Keeps the project lease until the socket closes, or the upgrade is abandoned. */
function holdLeaseWs(ws: WsHandlers, lease: ProjectLease): WsHandlers {
  let held = true;
  const release = (): void => {
    if (held) lease.release();
    held = false;
  };
  return {
    open: ws.open?.bind(ws),
    message: ws.message?.bind(ws),
    drain: ws.drain?.bind(ws),
    close: (sock, code, reason) => {
      try {
        ws.close?.(sock, code, reason);
      } finally {
        release();
      }
    },
    abort: () => {
      try {
        ws.abort?.();
      } finally {
        release();
      }
    },
  };
}

function firstHeader(headers: Readonly<Record<string, string>>, names: readonly string[]): string | undefined {
  for (const n of names) {
    const v = headers[n];
    if (v !== undefined && v !== '') return v;
  }
  return undefined;
}

/** The visitor's location from the fronting proxy's headers, rounded to 0.1° (about 11 km). */
function geoOf(config: Config, headers: Readonly<Record<string, string>>, names: readonly string[]): Geo | null {
  // note: most requests carry no geo header; one pass over the names answers those cheaply.
  let any = false;
  for (const n of names) if (headers[n] !== undefined) any = true;
  if (!any) return null;
  const rawLat = firstHeader(headers, config.geoHeaders.lat);
  const rawLon = firstHeader(headers, config.geoHeaders.lon);
  const country = firstHeader(headers, config.geoHeaders.country);
  const lat = Number(rawLat);
  const lon = Number(rawLon);
  const okLat = rawLat !== undefined && Number.isFinite(lat) && Math.abs(lat) <= 90;
  const okLon = rawLon !== undefined && Number.isFinite(lon) && Math.abs(lon) <= 180;
  const okCountry = country !== undefined && /^[A-Za-z]{2}$/.test(country);
  if (!okLat && !okLon && !okCountry) return null;
  const round = (x: number): number => Math.round(x * 10) / 10;
  return {
    lat: okLat && okLon ? round(lat) : null,
    lon: okLat && okLon ? round(lon) : null,
    country: okCountry ? country.toUpperCase() : null,
  };
}
