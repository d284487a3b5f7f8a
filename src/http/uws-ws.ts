import type { EdgeResponse, WsHandlers, WsSendStatus, WsSocket } from '../edge/route.js';
import { INTERNAL, upgradeSafe, type HttpLimits } from './types.js';
import { decoder, newState, UwsRequest, watchAbort, type HttpRequest, type HttpResponse, type UwsContext } from './uws-request.js';
import { respond, respondSafely } from './uws-write.js';
import { WS_TOO_BIG, guard } from './ws.js';

type UwsWebSocket = import('uWebSockets.js').WebSocket<WsData>;

/** What uWS keeps with each socket: the route's handlers and our wrapper. */
interface WsData {
  handlers: WsHandlers;
  socket: UwsSocket | null;
  /**
   * The upgrade runs inside res.cork (after an awaited auth): the route's open runs after it, on
   * the socket left here (see accept; uWS copies this object's fields onto the socket's own).
   */
  deferred: { socket: UwsSocket | null } | null;
}

/**
 * The WebSocket side of a uWS app: every upgrade request goes through the core first; the
 * socket's events go to the route's handlers, through UwsSocket. Open sockets are kept in ctx.sockets.
 */
export function mountWs(app: import('uWebSockets.js').TemplatedApp, ctx: UwsContext, limits: HttpLimits): void {
  /**
   * Every WebSocket upgrade request (uWS hands other requests on to the routes below): copied,
   * authorized by the core, then upgraded, or answered over HTTP with no socket.
   */
  const onUpgrade = (res: HttpResponse, req: HttpRequest, context: import('uWebSockets.js').us_socket_context_t): void => {
    const state = newState();
    ctx.started();
    try {
      const headers: Record<string, string> = {};
      req.forEach((k, v) => {
        headers[k] = headers[k] === undefined ? v : `${headers[k]}, ${v}`;
      });
      const r = new UwsRequest(res, state, 'GET', req.getUrl(), req.getQuery() ?? '', headers);
      r.upgrade = true;
      const accept = (out: EdgeResponse): void => {
        if (state.aborted) {
          out.ws?.abort?.();
          return ctx.finished(state);
        }
        if (out.ws === undefined) return respondSafely(ctx, res, state, out, 'GET', true);
        const deferred: WsData['deferred'] = state.watched ? { socket: null } : null;
        const data: WsData = { handlers: out.ws, socket: null, deferred };
        const up = (): void => res.upgrade(data, headers['sec-websocket-key'] ?? '', out.protocol ?? firstProtocol(headers['sec-websocket-protocol']), headers['sec-websocket-extensions'] ?? '', context);
        try {
          if (deferred !== null) {
            // note: an upgrade after an await must be corked, and the pinned uWS's cork() then
            // misreads the upgraded socket as the HTTP response it was when the socket's memory was
            // shrunk in place, closing it (1006, no close frame) if the bytes there look like
            // "Connection: close" (uNetworking/uWebSockets#1928, fixed upstream in #1929; about 1 in
            // 500 upgrades here under load). What the open handler allocates in that window (a topic
            // subscription, a send) is what lands there, so the route's open runs after cork() returns,
            // in the socket's own cork, with no I/O in between.
            res.cork(up);
            const sock = deferred.socket;
            if (sock !== null && !sock.closed) sock.cork(() => guard(sock, () => data.handlers.open?.(sock)));
          } else up();
        } catch {
          // note: no exception may cross a uWS callback (it would take the process down); the route hears abort().
          data.handlers.abort?.();
        }
        ctx.finished(state);
      };
      const out = upgradeSafe(ctx.core, r);
      if (out instanceof Promise) {
        watchAbort(ctx, res, state);
        // note: upgradeSafe's promise never rejects (a failure is a 500 answer).
        void out.then(accept);
      } else accept(out);
    } catch {
      respond(ctx, res, state, INTERNAL, 'GET', true);
    }
  };
  app.ws<WsData>('/*', {
    // note: uWS closes a message past its own limit without a close frame (1006); ours is twice the
    // configured one, so a message a little over the limit gets a proper 1009 (see message below).
    maxPayloadLength: limits.wsMaxMessage * 2,
    maxBackpressure: limits.wsMaxBackpressure,
    closeOnBackpressureLimit: 1,
    idleTimeout: limits.wsIdleTimeoutS,
    sendPingsAutomatically: true,
    upgrade: onUpgrade,
    open: (ws) => {
      const data = ws.getUserData();
      const sock = (data.socket = new UwsSocket(ws));
      ctx.sockets.add(sock);
      if (data.deferred !== null) data.deferred.socket = sock;
      else guard(sock, () => data.handlers.open?.(sock));
    },
    message: (ws, message, isBinary) => {
      const data = ws.getUserData();
      const sock = data.socket!;
      if (message.byteLength > limits.wsMaxMessage) return sock.close(WS_TOO_BIG, 'message too big');
      const handler = data.handlers.message;
      if (handler === undefined) return;
      // note: uWS neuters `message` on return: a copy (binary) or a decoded string (text).
      const payload = isBinary ? Buffer.from(new Uint8Array(message)) : decoder.decode(message);
      guard(sock, () => handler(sock, payload, isBinary));
    },
    drain: (ws) => {
      const data = ws.getUserData();
      const sock = data.socket!;
      guard(sock, () => data.handlers.drain?.(sock));
    },
    close: (ws, code, message) => {
      const data = ws.getUserData();
      const sock = data.socket!;
      sock.closed = true;
      ctx.sockets.delete(sock);
      const reason = decoder.decode(message);
      try {
        data.handlers.close?.(sock, code, reason);
      } catch {
        // note: the socket is gone; a failing close handler changes nothing.
      }
    },
  });
}

/** The first subprotocol a client offered (what `ws` selects by default), '' for none. */
const firstProtocol = (offered: string | undefined): string => offered?.split(',')[0]?.trim() ?? '';

/** One uWS WebSocket behind the socket-free WsSocket (src/edge/route.ts); uWS throws on a closed one. */
export class UwsSocket implements WsSocket {
  closed = false;
  readonly #ws: UwsWebSocket;

  constructor(ws: UwsWebSocket) {
    this.#ws = ws;
  }

  send(data: string | Uint8Array): WsSendStatus {
    if (this.closed) return 'dropped';
    // note: 1 sent, 0 queued, 2 dropped (past maxBackpressure: closeOnBackpressureLimit closes the socket).
    const r = this.#ws.send(data, typeof data !== 'string');
    return r === 1 ? 'sent' : r === 0 ? 'backpressure' : 'dropped';
  }

  close(code = 1000, reason = ''): void {
    if (this.closed) return;
    this.closed = true;
    this.#ws.end(code, reason.slice(0, 123));
  }

  subscribe(topic: string): void {
    if (!this.closed) this.#ws.subscribe(topic);
  }

  unsubscribe(topic: string): void {
    if (!this.closed) this.#ws.unsubscribe(topic);
  }

  publish(topic: string, data: string | Uint8Array): void {
    if (!this.closed) this.#ws.publish(topic, data, typeof data !== 'string');
  }

  /** Runs `fn` with this socket's writes corked (one send for all of them). */
  cork(fn: () => void): void {
    if (this.closed) fn();
    else this.#ws.cork(fn);
  }

  getBufferedAmount(): number {
    return this.closed ? 0 : this.#ws.getBufferedAmount();
  }
}
