import type http from 'node:http';
import type { IncomingMessage } from 'node:http';
import { isIP, type LookupFunction, type Socket } from 'node:net';
import type { Config, OutboundPurpose } from '../config.js';
import { EdgeError } from '../core/errors.js';
import { VERSION } from '../version.js';
import { blockedRange, isLoopback } from './address-guard.js';

/**
 * The one outbound HTTP client (webhooks, function `fetch`, push providers, OIDC discovery)
 * with the SSRF guard; docs/api.md "Outbound requests" is its contract.
 *
 * - `https://` to a public address; the loopback hosts `127.0.0.1`, `localhost`, `[::1]`
 *   (written so, over http:// or https://) only for the purposes in `outboundLoopback`.
 * - The host is resolved once and every address checked (address-guard.ts); the socket is
 *   pinned to the checked addresses by a `lookup` hook, so a name that changes its answer
 *   between the check and the connect (DNS rebinding) still reaches only what was checked.
 *   TLS SNI, certificate check and `Host` keep the name.
 * - No redirect is followed unless asked; each hop is checked again as a new URL.
 * - Connect and total timeouts, a cap on the response body.
 * - Connections are kept alive and reused per (purpose, scheme, host, port, checked address
 *   set): a keep-alive agent per such key, whose sockets were all opened through the pinned
 *   lookup of that very address set, so a reused socket goes to an address that was checked
 *   for this host (a new DNS answer is a new key, a fresh connection). Bounded: sockets per
 *   key, idle sockets per key, agents (the least recently used one is dropped), an idle
 *   timeout; `close()` ends them all.
 *
 * Errors are EdgeErrors (src/core/errors.ts holds the one error type every layer uses):
 * 400 `outbound_blocked` (refused by the policy, before any connection), 502
 * `provider_unreachable`, 504 `provider_timeout`, 502 `response_too_large`; `details.reason`
 * says which step failed, for callers that record deliveries.
 */

/** How a name is resolved: all its addresses. A test may inject answers (the real path runs with them). */
export type Resolver = (hostname: string) => Promise<readonly { address: string; family: number }[]>;

// note: node:http, node:https (with TLS) and node:dns load on the first outbound request, not at
// startup: a server that never calls out does not compile them (docs/benchmarks.md "Startup").
interface NodeClients {
  http: typeof import('node:http');
  https: typeof import('node:https');
}
let clients: NodeClients | null = null;
let clientsLoading: Promise<NodeClients> | null = null;
const loadClients = (): Promise<NodeClients> =>
  (clientsLoading ??= Promise.all([import('node:http'), import('node:https')]).then(([h, hs]) => (clients = { http: h.default, https: hs.default })));

const dnsLookupAll: Resolver = async (host) => (await import('node:dns/promises')).lookup(host, { all: true, verbatim: true });

export type OutboundSettings = Pick<Config, 'outboundLoopback' | 'outboundConnectTimeoutMs' | 'outboundTimeoutMs' | 'outboundMaxResponseBytes'>;

export interface OutboundRequest {
  purpose: OutboundPurpose;
  url: string;
  /** GET (default), HEAD, POST, PUT, PATCH, DELETE or OPTIONS. */
  method?: string;
  headers?: Readonly<Record<string, string>>;
  body?: string | Uint8Array;
  /** `manual` (default): a 3xx is the answer. `follow`: up to `maxRedirects` hops, each checked again. */
  redirect?: 'manual' | 'follow';
  maxRedirects?: number;
  /** Lower the server's limits for this request (never raise them). */
  timeoutMs?: number;
  connectTimeoutMs?: number;
  maxResponseBytes?: number;
  /** Past `maxResponseBytes`: `error` (default) fails with `response_too_large`; `truncate` answers with the bytes read so far (the status counts, the rest is not read). */
  overflow?: 'error' | 'truncate';
  signal?: AbortSignal;
  /**
   * The receiver takes a repeat (it de-duplicates, as a webhook receiver on `webhook-id`): a
   * request cut on a reused idle connection before any answer (the server closed it as we
   * sent) is sent once more on a fresh connection. Always so for GET, HEAD, OPTIONS, PUT, DELETE.
   */
  atLeastOnce?: boolean;
}

/** The connection pool's bounds (constructor option; the defaults suit every purpose). */
export interface PoolSettings {
  /** Sockets at once per key (further requests wait for one). */
  maxSockets: number;
  /** Idle sockets kept per key. */
  maxFreeSockets: number;
  /** An idle socket is closed after this long, ms (below the usual 5 s of a server's keep-alive). */
  idleMs: number;
  /** Keys (agents) kept; past it the least recently used one is dropped. */
  maxAgents: number;
}

export const DEFAULT_POOL: PoolSettings = { maxSockets: 64, maxFreeSockets: 64, idleMs: 4000, maxAgents: 256 };
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

export interface OutboundResponse {
  status: number;
  /** Lower-case names; repeated headers joined with `, `. */
  headers: Record<string, string>;
  body: Buffer;
  /** The URL that answered (after redirects). */
  url: string;
  redirects: number;
}

export const DEFAULT_MAX_REDIRECTS = 5;
export const MAX_REDIRECTS = 10;
export const MAX_URL_LENGTH = 8192;

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);
// Set by the client from the request itself; a caller's value is dropped.
const OWN_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer', 'expect', 'proxy-connection']);
// Not sent to another origin after a redirect (as fetch does).
const CREDENTIAL_HEADERS = new Set(['authorization', 'cookie', 'proxy-authorization']);

export type BlockReason = 'url' | 'scheme' | 'userinfo' | 'host' | 'address' | 'method';

const blocked = (reason: BlockReason, message: string, range?: string): EdgeError =>
  new EdgeError('outbound_blocked', message, { details: range === undefined ? { reason } : { reason, range } });
const unreachable = (reason: string, message: string, cause?: unknown): EdgeError =>
  new EdgeError('provider_unreachable', message, { details: { reason }, cause });

/** A URL the policy allows, before its name is resolved. */
export interface CheckedUrl {
  url: URL;
  /** The host to connect to, without IPv6 brackets. */
  host: string;
  /** One of the loopback hosts, allowed by `outboundLoopback` for this purpose. */
  loopback: boolean;
}

export class OutboundClient {
  readonly #settings: OutboundSettings;
  readonly #resolve: Resolver;
  readonly #pool: PoolSettings;
  /** Keep-alive agents by (purpose, scheme, host, port, checked addresses), least recently used first. */
  readonly #agents = new Map<string, http.Agent>();
  #closed = false;

  constructor(settings: OutboundSettings, opts: { resolve?: Resolver; pool?: Partial<PoolSettings> } = {}) {
    this.#settings = settings;
    this.#resolve = opts.resolve ?? dnsLookupAll;
    this.#pool = { ...DEFAULT_POOL, ...opts.pool };
  }

  /** Pooled keys and their sockets (open and idle), for tests and the live view. */
  get poolStats(): { agents: number; sockets: number; idle: number } {
    let sockets = 0;
    let idle = 0;
    for (const a of this.#agents.values()) {
      for (const list of Object.values(a.sockets)) sockets += list?.length ?? 0;
      for (const list of Object.values(a.freeSockets)) idle += list?.length ?? 0;
    }
    return { agents: this.#agents.size, sockets, idle };
  }

  /** Ends every pooled connection; later requests open their own, unpooled (server close). */
  close(): void {
    this.#closed = true;
    for (const a of this.#agents.values()) a.destroy();
    this.#agents.clear();
  }

  /** The keep-alive agent of this key (made on first use); false (a connection of its own) after close. */
  #agent(purpose: OutboundPurpose, target: CheckedUrl, addresses: readonly { address: string; family: number }[]): http.Agent | false {
    if (this.#closed) return false;
    const u = target.url;
    const key = [purpose, u.protocol, target.host, u.port, addresses.map((a) => a.address).join(',')].join(' ');
    let agent = this.#agents.get(key);
    if (agent !== undefined) {
      // note: most recently used last, so the first is the one to drop.
      this.#agents.delete(key);
      this.#agents.set(key, agent);
      return agent;
    }
    const p = this.#pool;
    const opts = { keepAlive: true, maxSockets: p.maxSockets, maxFreeSockets: p.maxFreeSockets, timeout: p.idleMs, scheduling: 'lifo' as const };
    agent = u.protocol === 'https:' ? new clients!.https.Agent(opts) : new clients!.http.Agent(opts);
    if (this.#agents.size >= p.maxAgents) {
      const [oldKey, old] = this.#agents.entries().next().value as [string, http.Agent];
      this.#agents.delete(oldKey);
      // note: its idle sockets go now; those in use finish their request, then time out idle.
      for (const list of Object.values(old.freeSockets)) for (const sock of list ?? []) sock.destroy();
    }
    this.#agents.set(key, agent);
    return agent;
  }

  /**
   * The URL half of the policy, without resolving or connecting: what a service checks
   * when a URL is registered (a webhook), and the first step of every request. Throws
   * `outbound_blocked`.
   */
  checkUrl(purpose: OutboundPurpose, raw: string): CheckedUrl {
    if (typeof raw !== 'string' || raw.length > MAX_URL_LENGTH) throw blocked('url', `the URL must be a string of at most ${MAX_URL_LENGTH} characters`);
    // note: the URL parser drops tabs and newlines anywhere and reads `\` as `/`, so a URL
    // could mean another host than its text shows; such text is refused, not repaired.
    if (/[\u0000-\u0020\u007f\\]/.test(raw)) throw blocked('url', 'the URL contains white space, a control character or a backslash');
    const authority = /^(https?):\/\/([^/?#]*)/i.exec(raw);
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw blocked('url', 'not an absolute URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw blocked('scheme', `the scheme ${url.protocol.slice(0, -1)}: is not allowed; use https://`);
    if (authority === null) throw blocked('url', 'the URL must begin with http:// or https:// and the host');
    const written = authority[2]!;
    if (written.includes('@') || url.username !== '' || url.password !== '') throw blocked('userinfo', 'a URL with credentials (user@host) is not allowed');
    // The host as written (without the port) must be the parsed host: `2130706433`, `0x7f.1`,
    // `127.1`, `%6c%6fcalhost` and the like name 127.0.0.1 or localhost in disguise.
    const writtenHost = (written.startsWith('[') ? written.slice(0, written.indexOf(']') + 1) : written.replace(/:\d*$/, '')).toLowerCase();
    const canonical = writtenHost === url.hostname;
    const loopbackHost = LOOPBACK_HOSTS.has(url.hostname);
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    if (loopbackHost && canonical && this.#settings.outboundLoopback.includes(purpose)) return { url, host, loopback: true };
    if (url.protocol === 'http:') {
      if (loopbackHost && canonical) {
        throw blocked('host', `requests of purpose ${purpose} may not go to the server's own host (PLATFORM_EDGE_OUTBOUND_LOOPBACK)`);
      }
      throw blocked('scheme', 'only https:// URLs are allowed (http:// only to a host written 127.0.0.1, localhost or [::1])');
    }
    if (isIP(host) !== 0) {
      const range = blockedRange(host);
      if (range !== null) throw blocked('address', `the address ${host} is not public (${range})`, range);
    } else if (host === 'localhost' || host.endsWith('.localhost') || host === 'localhost.' || host.endsWith('.localhost.')) {
      throw blocked('host', `the host ${host} is the server itself`, 'loopback');
    }
    return { url, host, loopback: false };
  }

  /** Sends one request under the policy of `req.purpose`. */
  async request(req: OutboundRequest): Promise<OutboundResponse> {
    const method = (req.method ?? 'GET').toUpperCase();
    if (!METHODS.has(method)) throw blocked('method', `the method ${req.method} is not allowed`);
    let target = this.checkUrl(req.purpose, req.url);
    const s = this.#settings;
    const totalMs = lower(req.timeoutMs, Math.min(s.outboundTimeoutMs, MAX_TIMER_MS));
    const limits = {
      connectMs: lower(req.connectTimeoutMs, Math.min(s.outboundConnectTimeoutMs, MAX_TIMER_MS)),
      maxBytes: lower(req.maxResponseBytes, s.outboundMaxResponseBytes),
      truncate: req.overflow === 'truncate',
    };
    const maxRedirects = req.redirect === 'follow' ? Math.max(0, Math.min(req.maxRedirects ?? DEFAULT_MAX_REDIRECTS, MAX_REDIRECTS)) : 0;
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(new EdgeError('provider_timeout', `the request took longer than ${totalMs} ms`, { details: { reason: 'timeout' } })), totalMs);
    const onCallerAbort = (): void => ac.abort(unreachable('aborted', 'the request was aborted'));
    req.signal?.addEventListener('abort', onCallerAbort, { once: true });
    if (req.signal?.aborted) onCallerAbort();
    let headers = ownHeaders(req.headers);
    let body = req.body === undefined ? undefined : typeof req.body === 'string' ? Buffer.from(req.body) : req.body;
    let m = method;
    try {
      for (let hop = 0; ; hop++) {
        const addresses = await this.#addresses(target, ac.signal);
        if (clients === null) await loadClients();
        const agent = this.#agent(req.purpose, target, addresses);
        let res: Omit<OutboundResponse, 'url' | 'redirects'>;
        try {
          res = await send(target, addresses, m, headers, body, limits, req.redirect === 'follow', ac.signal, agent);
        } catch (err) {
          // note: the server closed an idle kept-alive connection as this request went out on it:
          // nothing was answered; a request that may be repeated goes once more, on a fresh connection.
          if (!(err instanceof StaleSocket)) throw err;
          if (!(req.atLeastOnce === true || IDEMPOTENT.has(m))) throw err.error;
          res = await send(target, addresses, m, headers, body, limits, req.redirect === 'follow', ac.signal, false);
        }
        const location = res.headers.location;
        if (req.redirect !== 'follow' || !isRedirect(res.status) || location === undefined) {
          return { ...res, url: target.url.href, redirects: hop };
        }
        if (hop >= maxRedirects) throw unreachable('redirects', `more than ${maxRedirects} redirects`);
        const next = this.checkUrl(req.purpose, nextUrl(location, target.url));
        if (next.url.origin !== target.url.origin) headers = Object.fromEntries(Object.entries(headers).filter(([k]) => !CREDENTIAL_HEADERS.has(k)));
        // note: as fetch: 303 (and 301/302 after POST) turn into a GET without a body.
        if (res.status === 303 || ((res.status === 301 || res.status === 302) && m === 'POST')) {
          if (m !== 'HEAD') m = 'GET';
          body = undefined;
          headers = Object.fromEntries(Object.entries(headers).filter(([k]) => k !== 'content-type'));
        }
        target = next;
      }
    } finally {
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onCallerAbort);
    }
  }

  /** Resolves the host once and checks every address; a literal address is not resolved. */
  async #addresses(target: CheckedUrl, signal: AbortSignal): Promise<{ address: string; family: number }[]> {
    const family = isIP(target.host);
    if (family !== 0) return [{ address: target.host, family }];
    let answers: readonly { address: string; family: number }[];
    try {
      answers = await abortable(this.#resolve(target.host), signal);
    } catch (err) {
      if (err instanceof EdgeError) throw err;
      throw unreachable('dns', `could not resolve the host ${target.host}`, err);
    }
    if (answers.length === 0) throw unreachable('dns', `could not resolve the host ${target.host}`);
    for (const a of answers) {
      if (target.loopback) {
        // note: `localhost` must stay on this machine whatever the resolver says.
        if (!isLoopback(a.address)) throw blocked('address', `the host ${target.host} resolves to an address that is not loopback`, blockedRange(a.address) ?? 'public');
        continue;
      }
      const range = blockedRange(a.address);
      if (range !== null) throw blocked('address', `the host ${target.host} resolves to an address that is not public (${range})`, range);
    }
    return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
  }
}

// note: setTimeout fires at once past 2^31-1 ms, so a larger setting means this.
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A caller's limit, if it is a positive number below the server's; else the server's. */
const lower = (v: number | undefined, max: number): number => (typeof v === 'number' && v > 0 ? Math.min(v, max) : max);

function ownHeaders(h: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const out: Record<string, string> = { 'user-agent': `platform-edge/${VERSION}` };
  for (const [k, v] of Object.entries(h ?? {})) {
    const name = k.toLowerCase();
    if (!OWN_HEADERS.has(name)) out[name] = v;
  }
  return out;
}

const isRedirect = (status: number): boolean => status === 301 || status === 302 || status === 303 || status === 307 || status === 308;

/** The next hop's URL as text, so checkUrl sees a host as the server wrote it. */
function nextUrl(location: string, base: URL): string {
  if (/[\u0000-\u0020\u007f\\]/.test(location)) throw blocked('url', 'the redirect location contains white space, a control character or a backslash');
  if (/^[a-z][a-z0-9+.-]*:/i.test(location)) return location;
  if (location.startsWith('//')) return `${base.protocol}${location}`;
  // A path on the same host: the host was checked already and stays as written.
  return new URL(location, base).href;
}

function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e as Error);
      },
    );
  });
}

/** A `lookup` that answers every name with the checked addresses: the socket goes nowhere else. */
function pinned(addresses: readonly { address: string; family: number }[]): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) callback(null, addresses.map((a) => ({ address: a.address, family: a.family })));
    else callback(null, addresses[0]!.address, addresses[0]!.family);
  };
}

/** A request that failed on a reused idle socket before any answer (see `atLeastOnce`). */
class StaleSocket extends Error {
  constructor(readonly error: EdgeError) {
    super(error.message);
  }
}

function send(
  target: CheckedUrl,
  addresses: readonly { address: string; family: number }[],
  method: string,
  headers: Record<string, string>,
  body: Uint8Array | undefined,
  limits: { connectMs: number; maxBytes: number; truncate: boolean },
  redirectsFollowed: boolean,
  signal: AbortSignal,
  agent: http.Agent | false,
): Promise<Omit<OutboundResponse, 'url' | 'redirects'>> {
  return new Promise((resolve, reject) => {
    let done = false;
    let answered = false;
    let req: http.ClientRequest | undefined;
    const finish = (err: EdgeError | StaleSocket | null, value?: Omit<OutboundResponse, 'url' | 'redirects'>): void => {
      if (done) return;
      done = true;
      clearTimeout(connectTimer);
      signal.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else resolve(value!);
    };
    const fail = (err: EdgeError | StaleSocket): void => {
      finish(err);
      req?.destroy();
    };
    const connectTimer = setTimeout(
      () => fail(new EdgeError('provider_timeout', `could not connect within ${limits.connectMs} ms`, { details: { reason: 'connect_timeout' } })),
      limits.connectMs,
    );
    const onAbort = (): void => fail(signal.reason as EdgeError);
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    const u = target.url;
    try {
      req = (u.protocol === 'https:' ? clients!.https : clients!.http).request({
        protocol: u.protocol,
        host: target.host,
        port: u.port === '' ? undefined : Number(u.port),
        path: `${u.pathname}${u.search}`,
        method,
        headers: body === undefined ? headers : { ...headers, 'content-length': String(body.byteLength) },
        lookup: pinned(addresses),
        // note: the agent of exactly this checked address set (OutboundClient #agent): a socket it
        // reuses was opened through this same pinned lookup.
        agent,
        // note: SNI and the certificate check use the name, not the pinned address (node does
        // this for a name in `host`; an IP literal gets no SNI, as in a browser).
        ...(u.protocol === 'https:' && isIP(target.host) === 0 ? { servername: target.host.replace(/\.$/, '') } : {}),
      });
    } catch (err) {
      // node refuses a header name or value it cannot send (ERR_INVALID_HTTP_TOKEN, ERR_INVALID_CHAR).
      return finish(new EdgeError('invalid_request', `the outbound request is malformed: ${(err as Error).message}`, { cause: err }));
    }
    req.on('socket', (sock: Socket) => {
      if (!sock.connecting) clearTimeout(connectTimer);
      else sock.once('connect', () => clearTimeout(connectTimer));
    });
    req.on('error', (err) => {
      const e = networkError(err, target.host);
      fail(req?.reusedSocket === true && !answered && e.details?.reason === 'reset' ? new StaleSocket(e) : e);
    });
    req.on('response', (res: IncomingMessage) => {
      answered = true;
      clearTimeout(connectTimer);
      const status = res.statusCode ?? 0;
      const h = flatHeaders(res);
      if (redirectsFollowed && isRedirect(status) && h.location !== undefined) {
        finish(null, { status, headers: h, body: Buffer.alloc(0) });
        res.destroy();
        return;
      }
      const tooLarge = (): EdgeError =>
        new EdgeError('response_too_large', `the response body exceeds the limit of ${limits.maxBytes} bytes`, { details: { reason: 'too_large' } });
      const declared = Number(h['content-length']);
      if (!limits.truncate && Number.isFinite(declared) && declared > limits.maxBytes) return fail(tooLarge());
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        if (size + chunk.length > limits.maxBytes) {
          if (!limits.truncate) return fail(tooLarge());
          chunks.push(chunk.subarray(0, limits.maxBytes - size));
          finish(null, { status, headers: h, body: Buffer.concat(chunks, limits.maxBytes) });
          req?.destroy();
          return;
        }
        size += chunk.length;
        chunks.push(chunk);
      });
      res.on('end', () => finish(null, { status, headers: h, body: Buffer.concat(chunks, size) }));
      res.on('aborted', () => fail(unreachable('reset', 'the connection closed before the response ended')));
      res.on('error', (err) => fail(networkError(err, target.host)));
    });
    req.end(body);
  });
}

function flatHeaders(res: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

/** A socket, TLS or parser failure as `provider_unreachable`; the message names the step, never an address. */
function networkError(err: Error, host: string): EdgeError {
  const first = err instanceof AggregateError && err.errors.length > 0 ? (err.errors[0] as Error) : err;
  const code = String((first as NodeJS.ErrnoException).code ?? (err as NodeJS.ErrnoException).code ?? '');
  if (code === 'ECONNREFUSED') return unreachable('connect', `${host} refused the connection`, err);
  if (code === 'ECONNRESET' || code === 'EPIPE') return unreachable('reset', `${host} closed the connection`, err);
  if (['EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'EADDRNOTAVAIL', 'ENETDOWN'].includes(code)) return unreachable('connect', `${host} is unreachable`, err);
  if (code.startsWith('HPE_')) return unreachable('protocol', `${host} sent an invalid HTTP response`, err);
  if (code === 'EPROTO' || code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_') || /CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code)) {
    return unreachable('tls', `the TLS handshake with ${host} failed (${code})`, err);
  }
  return unreachable('network', `the request to ${host} failed`, err);
}
