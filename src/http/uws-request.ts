import type { EdgeRequest } from '../edge/route.js';
import { EdgeError } from '../core/errors.js';
import type { BodyStream } from './body-stream.js';
import type { SseConnection } from './sse.js';
import type { HttpCore } from './types.js';
import type { BodyClock } from './uws-body.js';
import type { UwsSocket } from './uws-ws.js';

export type HttpResponse = import('uWebSockets.js').HttpResponse;
export type HttpRequest = import('uWebSockets.js').HttpRequest;

/** What one uWS request's answer goes through: its abort, its body, its stream. */
export interface State {
  aborted: boolean;
  /** Whether onAborted is attached (needed unless the reply is synchronous). */
  watched: boolean;
  done: boolean;
  /** Whether reading from the connection is paused until this answer is written. */
  paused: boolean;
  controller: AbortController | null;
  sse: SseConnection | null;
  /** The request body of a `body: 'stream'` route, while it may still arrive. */
  body: BodyStream | null;
  /** The `Range` header (a file answer reads it). */
  range: string | undefined;
  /** Wakes a response stream waiting for the socket to drain (also when the client goes). */
  writable: (() => void) | null;
}

export const newState = (): State => ({ aborted: false, done: false, paused: false, watched: false, controller: null, sse: null, body: null, range: undefined, writable: null });

/** The state one uWS server shares between its parts (startUws makes one per server). */
export interface UwsContext {
  readonly core: HttpCore;
  readonly bodyClock: BodyClock;
  /** The open SSE answers (closed on shutdown). */
  readonly streams: Set<SseConnection>;
  /** The open WebSockets (closed on shutdown). */
  readonly sockets: Set<UwsSocket>;
  /** Counts a request in flight; finished() counts it out once. */
  started(): void;
  finished(state: State): void;
}

export const decoder = new TextDecoder();

export const watchAbort = (ctx: UwsContext, res: HttpResponse, state: State): void => {
  state.watched = true;
  res.onAborted(() => {
    state.aborted = true;
    state.controller?.abort();
    state.sse?.aborted();
    state.body?.fail(new EdgeError('invalid_request', 'the client closed the connection'));
    const w = state.writable;
    state.writable = null;
    w?.();
    ctx.finished(state);
  });
};

/**
 * One request as the edge sees it. A class, not an object literal with getters (V8
 * keeps those in slow dictionary mode); the address and the abort signal are made
 * only when asked for, while the response is still alive.
 */
export class UwsRequest implements EdgeRequest {
  body: Buffer | null = null;
  bodyTooLarge = false;
  stream: AsyncIterable<Uint8Array> | null = null;
  upgrade = false;
  #ip: string | null = null;
  readonly #res: HttpResponse;
  readonly #state: State;

  constructor(
    res: HttpResponse,
    state: State,
    readonly method: string,
    readonly path: string,
    readonly rawQuery: string,
    readonly headers: Record<string, string>,
  ) {
    this.#res = res;
    this.#state = state;
  }

  get ip(): string {
    if (this.#ip === null) {
      this.#ip = this.#state.aborted || this.#state.done ? '' : decoder.decode(this.#res.getRemoteAddressAsText());
    }
    return this.#ip;
  }

  get aborted(): boolean {
    return this.#state.aborted;
  }

  get signal(): AbortSignal {
    if (this.#state.controller === null) {
      this.#state.controller = new AbortController();
      if (this.#state.aborted) this.#state.controller.abort();
    }
    return this.#state.controller.signal;
  }
}
