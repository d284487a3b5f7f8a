import type { Readable } from 'node:stream';
import type { Config } from '../config.js';
import type { EventBus } from '../events/bus.js';
import type { ProjectLease } from '../project/registry.js';
import type { AuthContext, Operator, Scope, UserClaims } from '../core/auth-context.js';

/** A route's scope: one scope, or any one of a list (its operations then check their own, see scopes.ts). */
export type ScopeRule = Scope | readonly Scope[];

/**
 * How a route authenticates:
 * - `none`: no credentials, no project (health, public traffic).
 * - `key`: an API key (or an operator session with X-Service-Project) selects the project.
 * - `bearer`: `key` plus a valid user access token.
 * - `bearer?`: `key`, and a user when a valid access token is sent.
 * - `operator`: an operator session only (dashboard endpoints without a project).
 * - `key?`: like `bearer?` when the request sends credentials (a key, a token, an operator
 *   session); with none at all the handler runs with `ctx.auth` null and no project (public
 *   object reads, where the object names its project).
 */
export type AuthMode = 'none' | 'key' | 'bearer' | 'bearer?' | 'operator' | 'key?';

/**
 * How a route reads its body: `json` (parsed, bounded), `raw` (bytes, bounded), `stream` (read by
 * the handler from `req.stream` as it arrives, with backpressure; the pipeline authorizes before a
 * byte is read, a declared `Content-Length` over the limit is 413 unread, and the stream throws 413
 * once a chunked body passes it), or `none`.
 */
export type BodyKind = 'none' | 'json' | 'raw' | 'stream';

/**
 * Where a route reads credentials. `header` (the default): `X-Service-Key`, `Authorization`
 * and `X-Service-Project` only. `query`: those headers, else the query parameters `apikey`
 * (the key), `access_token` (what `Authorization: Bearer` carries) and `project` (what
 * `X-Service-Project` carries), for clients that cannot send headers (`EventSource`, a
 * browser navigation). Only routes that opt in read them; elsewhere they are ignored.
 */
export type CredentialSource = 'header' | 'query';

/**
 * A route's fixed-window rate limit, counted by the pipeline after authentication and body
 * parsing, before the handler (docs/api.md "Rate limits"). Buckets are per project.
 */
export interface RateLimitRule {
  /** Names the buckets: `<name>:ip:<project>:<client address>`, `<name>:<field>:<project>:<value>`. */
  readonly name: string;
  /** Requests per window and client address. */
  readonly perAddress: number;
  /** Also requests per window and value of this JSON body field (trimmed, lower-cased), when it is a non-empty string. */
  readonly perField?: { readonly field: string; readonly limit: number };
  /** The window, seconds. */
  readonly windowS: number;
}

export interface EdgeRequest {
  readonly method: string;
  /** The decoded path, e.g. `/db/tables/todos/rows`. */
  readonly path: string;
  /** The raw query string without `?`. */
  readonly rawQuery: string;
  /** Lower-cased header names. */
  readonly headers: Readonly<Record<string, string>>;
  /** The request body, already bounded by the route's limit; null when empty. */
  readonly body: Buffer | null;
  /** Set by the HTTP adapter when the body exceeded the limit it was given. */
  readonly bodyTooLarge?: boolean;
  /**
   * The body as it arrives, on `body: 'stream'` routes only (else null or absent): one consumer;
   * reading slowly slows the client (backpressure); throws `payload_too_large` past the route's
   * limit, `request_timeout` when the body is not complete within the request timeout.
   */
  readonly stream?: AsyncIterable<Uint8Array> | null;
  readonly ip: string;
  readonly signal: AbortSignal;
  /**
   * True once the client has gone, as `signal.aborted`, without making the AbortController
   * (hot paths read this; adapters that omit it are asked through `signal`).
   */
  readonly aborted?: boolean;
  /** Set by the HTTP adapter on a WebSocket upgrade request (`HttpCore.upgrade`). */
  readonly upgrade?: boolean;
}

/** What a handler sees: the request plus what the pipeline derived from it. */
export interface HandlerRequest extends EdgeRequest {
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  /** The parsed JSON body for `body: 'json'` routes (an object unless `jsonAny`). */
  readonly json: unknown;
}

/** One SSE event: `event:` name, `data:` text, optional `id:`. */
export interface SseEvent {
  readonly event: string;
  readonly data: string;
  readonly id?: string;
}

export interface SseChannel {
  /** Queues one event; returns false when the client is gone or too slow (then closed). */
  send(event: string, data: string, id?: string): boolean;
  /**
   * Queues several events as one write (a fan-out hands the same array to every stream: it is
   * formatted once); the same frames as one send() each.
   */
  sendBatch(events: readonly SseEvent[]): boolean;
  /** Queues a comment line (`: text`), e.g. a heartbeat a client's EventSource ignores. */
  comment(text: string): boolean;
  close(): void;
  readonly closed: boolean;
}

/** Runs once the stream is open; returns the cleanup to run when it closes. */
export type SseSource = (channel: SseChannel) => (() => void) | void;

/**
 * What a send did: `sent` (written), `backpressure` (queued: the client reads slower than we
 * write; it drains), `dropped` (the socket is closed, or passed its outbound cap and is closed now).
 */
export type WsSendStatus = 'sent' | 'backpressure' | 'dropped';

/**
 * One open WebSocket as a route sees it: nothing of the backend (docs/api.md "WebSocket").
 * Every method is a no-op (send: `dropped`) once the socket is closed.
 */
export interface WsSocket {
  /** A string goes as a text frame, bytes as a binary frame. */
  send(data: string | Uint8Array): WsSendStatus;
  /** Closes with a close frame (`code` 1000 by default; `reason` at most 123 bytes). */
  close(code?: number, reason?: string): void;
  subscribe(topic: string): void;
  unsubscribe(topic: string): void;
  /** Sends to every other socket subscribed to `topic` (this one excluded; `WsTopics.publish` reaches all). */
  publish(topic: string, data: string | Uint8Array): void;
  /** Bytes written but not yet taken by the client. */
  getBufferedAmount(): number;
  readonly closed: boolean;
}

/**
 * A WebSocket route's handlers, returned by its handler as `{ status: 101, ws }` once the
 * pipeline authorized the upgrade request. `close` runs once for every socket that opened;
 * `abort` runs instead of `open` and `close` when the client left before the upgrade finished.
 */
export interface WsHandlers {
  open?(ws: WsSocket): void;
  /** Text frames arrive as a string, binary frames as a Buffer (already within the message limit). */
  message?(ws: WsSocket, data: string | Buffer, binary: boolean): void;
  /** The socket's outbound buffer emptied after a `backpressure` send. */
  drain?(ws: WsSocket): void;
  close?(ws: WsSocket, code: number, reason: string): void;
  abort?(): void;
}

/** Publishes to a topic's subscribers on every socket of this server (bound by the HTTP backend). */
export interface WsTopics {
  /** Whether a backend took the message (false: no backend listening yet, or it stopped). */
  publish(topic: string, data: string | Uint8Array): boolean;
}

export interface EdgeResponse {
  status: number;
  headers?: Record<string, string>;
  json?: unknown;
  bytes?: Uint8Array | string;
  sse?: SseSource;
  /**
   * A body written as it is read, with backpressure (a slow client slows the reading). With
   * `length`, sent with `Content-Length` (the stream must yield exactly that many bytes); else
   * chunked. Destroyed (a Readable) or returned (an iterator) when the client goes.
   */
  stream?: AsyncIterable<Uint8Array> | Readable;
  length?: number;
  /** A WebSocket route's answer to an authorized upgrade (status 101). */
  ws?: WsHandlers;
  /**
   * With `ws`: the subprotocol the server selects (`Sec-WebSocket-Protocol` of the 101), `''` for
   * none. Absent: the backend's default (the first offered). Never echo a credential-bearing one.
   */
  protocol?: string;
  /** A file, with `Content-Length`, `Accept-Ranges`, single byte ranges and `HEAD` (src/http/body-out.ts). */
  file?: FileBody;
}

export interface FileBody {
  readonly path: string;
  /** The size, when known (else the file is stat'ed). */
  readonly size?: number;
  /** `application/octet-stream` unless given. */
  readonly contentType?: string;
  /** Delete the file once it has been sent (or the client went): a temporary file. */
  readonly remove?: boolean;
}

type CtxFor<A extends AuthMode> = A extends 'none'
  ? BaseCtx
  : A extends 'operator'
    ? BaseCtx & { operator: Operator }
    : A extends 'bearer'
      ? ProjectCtx & { user: UserClaims }
      : A extends 'bearer?'
        ? ProjectCtx & { user: UserClaims | null }
        : A extends 'key?'
          ? BaseCtx & { readonly auth: AuthContext | null; readonly project: ProjectLease; user: UserClaims | null }
          : ProjectCtx;

export interface BaseCtx {
  readonly config: Config;
  readonly bus: EventBus;
  readonly requestId: string;
  /**
   * Resolves on the next loop turn, or rejects once the client has gone: a handler of a route
   * with `awaits: false` calls it before any work that waits (docs/api.md, "HTTP/1.1 pipelining").
   */
  later(): Promise<void>;
}

export interface ProjectCtx extends BaseCtx {
  readonly auth: AuthContext;
  /** The project's database lease, acquired on first use and released after the response. */
  readonly project: ProjectLease;
}

export type RouteCtx<A extends AuthMode = AuthMode> = CtxFor<A>;

export interface RouteDef<A extends AuthMode = AuthMode> {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS';
  /**
   * Absolute path with `:param` segments, e.g. `/db/tables/:t/rows`, and at most one catch-all
   * `*name` as the last segment (binds the rest of the path, e.g. `/storage/objects/:bucket/*key`).
   */
  readonly path: string;
  readonly auth: A;
  readonly scope?: ScopeRule;
  readonly body?: BodyKind;
  /** Accept any JSON value, not only an object. */
  readonly jsonAny?: boolean;
  /** Body limit in bytes; defaults to the config's JSON limit. */
  readonly maxBody?: number;
  /**
   * Whether the handler may wait. `true` (an `async` handler is taken as true): the request
   * starts on the next loop turn, and not at all once its client is gone. `false`: the handler
   * answers at once, or calls `ctx.later()` before the part that waits (e.g. a fast path that
   * answers at once and a slow one that waits).
   */
  readonly awaits?: boolean;
  /** Where credentials are read; `query` only for clients that cannot send headers (CredentialSource). */
  readonly credentials?: CredentialSource;
  /** A rate limit on this route (off when the server's rate limits are off). */
  readonly rateLimit?: RateLimitRule;
  /**
   * A WebSocket route: it answers only an upgrade request (else 426 `upgrade_required`), and its
   * handler returns `{ status: 101, ws: handlers }`; the pipeline (key, scope, bearer, role) runs first.
   */
  readonly websocket?: boolean;
  /** Leave this route out of the live log (the log's own endpoints). */
  readonly unlogged?: boolean;
  /**
   * A fallback route (e.g. `GET /:shortId`): another method on a path it matches answers 404 like
   * an unknown path, never 405.
   */
  readonly fallback?: boolean;
  /** A role the caller must act as, e.g. `service_role` (service key or operator session) for DDL; else 403 `forbidden`. */
  readonly role?: 'service_role';
  readonly handler: (req: HandlerRequest, ctx: RouteCtx<A>) => EdgeResponse | Promise<EdgeResponse>;
}

/** Declares a route with its handler context typed by its auth mode. */
export function route<A extends AuthMode>(def: RouteDef<A>): RouteDef {
  return def as unknown as RouteDef;
}

export const json = (body: unknown, status = 200, headers?: Record<string, string>): EdgeResponse => ({
  status,
  json: body,
  headers,
});

export const noContent = (): EdgeResponse => ({ status: 204 });
