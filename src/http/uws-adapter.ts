import { STATUS_CODES } from 'node:http';
import type { EdgeRequest, EdgeResponse, WsHandlers, WsSendStatus, WsSocket } from '../edge/route.js';
import type { Uws } from './native.js';
import { listenError, probeListen } from './listen-error.js';
import { SSE_HEADERS, SseConnection } from './sse.js';
import { EdgeError } from '../edge/errors.js';
import { BodyStream } from './body-stream.js';
import { abandon, discard, outgoing, type Outgoing } from './body-out.js';
import { INTERNAL, dispatchSafe, errorResponse, failed, upgradeSafe, type HttpCore, type HttpLimits, type HttpServer } from './types.js';
import { WS_GOING_AWAY, WS_TOO_BIG, guard } from './ws.js';

type HttpResponse = import('uWebSockets.js').HttpResponse;
type HttpRequest = import('uWebSockets.js').HttpRequest;
type UwsWebSocket = import('uWebSockets.js').WebSocket<WsData>;

/** What uWS keeps with each socket: the route's handlers and our wrapper. */
interface WsData {
  handlers: WsHandlers;
  socket: UwsSocket | null;
}

interface State {
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

const STATUS_LINES = new Map<number, string>();
const statusLine = (s: number): string => {
  let line = STATUS_LINES.get(s);
  if (line === undefined) STATUS_LINES.set(s, (line = `${s} ${STATUS_CODES[s] ?? 'Unknown'}`));
  return line;
};
const decoder = new TextDecoder();

// note: uWS converts every string argument to UTF-8 on each call (perf shows it); constant
// header names and the JSON media type are handed over as bytes encoded once.
const JSON_TYPE = 'application/json; charset=utf-8';
const JSON_TYPE_BYTES = Buffer.from(JSON_TYPE);
const CONTENT_TYPE = Buffer.from('content-type');
const NAMES = new Map<string, Buffer>();
const headerName = (name: string): Buffer | string => {
  let b = NAMES.get(name);
  if (b === undefined) {
    if (NAMES.size >= 256) return name;
    NAMES.set(name, (b = Buffer.from(name)));
  }
  return b;
};
const METHODS: Record<string, string> = { get: 'GET', post: 'POST', put: 'PUT', patch: 'PATCH', delete: 'DELETE', head: 'HEAD', options: 'OPTIONS' };
// note: uWS reports methods lower-cased; a table lookup avoids a string allocation per request.
const upperMethod = (m: string): string => METHODS[m] ?? m.toUpperCase();

/**
 * The native uWS backend. Every pitfall of STYLE.md §4 is handled here and only
 * here: onAborted first, the request copied before any await, bodies read in
 * copied chunks against a limit, every write corked, SSE backpressure via onWritable.
 */
export function startUws(uws: Uws, core: HttpCore, host: string, port: number, limits: HttpLimits): Promise<HttpServer> {
  const app = uws.App();
  const bodyClock = new BodyClock(limits.requestTimeoutMs);
  let inflight = 0;
  let idle: (() => void) | null = null;
  const streams = new Set<SseConnection>();

  const finished = (state: State): void => {
    if (state.done) return;
    state.done = true;
    if (--inflight === 0 && idle) idle();
  };

  /**
   * Writes a response, corked: one send for status, headers and body. `corked`: called inside
   * uWS's handler or data callback, where uWS has corked the socket itself (no cork call needed).
   */
  const respond = (res: HttpResponse, state: State, r: EdgeResponse, method: string, close: boolean, corked = false): void => {
    if (state.aborted) {
      abandon(r);
      return finished(state);
    }
    // note: a streamed request body not read to its end leaves bytes on the connection: close it.
    if (state.body !== null && !state.body.complete) {
      close = true;
      state.body.fail(new EdgeError('invalid_request', 'the request was answered before its body was read'));
    }
    if (r.stream !== undefined || r.file !== undefined) {
      unpause(res, state);
      return writeOut(res, state, outgoing(method, state.range, r), close);
    }
    // note: a stream outlives the handler, so it needs the abort handler (a ready answer has none).
    if (r.sse && !state.watched) watchAbort(res, state);
    const go = (): void => {
      unpause(res, state);
      write(res, r, method, close);
    };
    if (corked) go();
    else res.cork(go);
    if (r.sse) return openSse(res, state, r);
    finished(state);
  };

  /** Reads from the connection again once the answer that held it back is being written. */
  const unpause = (res: HttpResponse, state: State): void => {
    if (!state.paused) return;
    state.paused = false;
    res.resume();
  };

  const write = (res: HttpResponse, r: EdgeResponse, method: string, close: boolean): void => {
    // note: the body first, so a value JSON cannot write fails before anything is written.
    const body = r.json !== undefined ? JSON.stringify(r.json) : r.bytes;
    // note: uWS writes "200 OK" itself when no status was written.
    if (r.status !== 200) res.writeStatus(statusLine(r.status));
    const headers = r.headers;
    if (headers) {
      for (const k in headers) {
        const v = headers[k]!;
        res.writeHeader(headerName(k), v === JSON_TYPE ? JSON_TYPE_BYTES : v);
      }
    }
    if (r.sse) {
      for (const k in SSE_HEADERS) res.writeHeader(k, SSE_HEADERS[k]!);
      return;
    }
    if (r.json !== undefined) res.writeHeader(CONTENT_TYPE, JSON_TYPE_BYTES);
    // note: in the pinned build endWithoutBody only completes the response when called with
    // no argument (a length or the close flag leaves it open), so lengths are written by hand.
    if (r.status === 204 || r.status === 304) {
      if (close) res.end('', true);
      else res.endWithoutBody();
    } else if (method === 'HEAD') {
      res.writeHeader('content-length', String(body === undefined ? 0 : byteLength(body)));
      res.endWithoutBody();
    } else res.end(body ?? '', close);
  };

  /**
   * Writes a streamed answer with backpressure: with a length, tryEnd (uWS adds Content-Length) and,
   * when the socket is full, the rest of the chunk from onWritable's offset; without one, chunked
   * writes, waiting for onWritable when write reports backpressure. One chunk in flight at a time.
   */
  const writeOut = (res: HttpResponse, state: State, out: Outgoing, close: boolean): void => {
    if (!state.watched) watchAbort(res, state);
    const head = (): void => {
      if (out.status !== 200) res.writeStatus(statusLine(out.status));
      for (const k in out.headers) res.writeHeader(headerName(k), out.headers[k]!);
    };
    if (out.source === null) {
      res.cork(() => {
        head();
        if (out.length !== undefined) res.writeHeader('content-length', String(out.length));
        res.endWithoutBody();
      });
      return finished(state);
    }
    const source = out.source;
    // note: a response tryEnd completed is gone (closing it then is use-after-free): an answer that must
    // close the connection (an unread request body) is sent chunked instead, ended with end(…, true).
    const total = close ? undefined : out.length;
    res.cork(head);
    // note: fire-and-forget: the writer catches every error (the connection is closed) and finishes the state.
    void (async () => {
      let done = false;
      try {
        const it = source[Symbol.asyncIterator]();
        while (!state.aborted) {
          const n = await it.next();
          if (state.aborted) break;
          if (n.done === true) {
            // note: a stream shorter than its declared length cannot be completed: the connection is cut.
            if (total !== undefined && total > 0) res.close();
            else res.cork(() => res.end(undefined, close));
            done = true;
            break;
          }
          const chunk = n.value;
          if (total === undefined) {
            let ok = false;
            res.cork(() => (ok = res.write(chunk)));
            if (!ok) await drained(res, state, () => true);
            continue;
          }
          const base = res.getWriteOffset();
          let ok = false;
          res.cork(() => ([ok, done] = res.tryEnd(chunk, total)));
          if (!done && !ok) {
            await drained(res, state, (offset) => {
              [ok, done] = res.tryEnd(chunk.subarray(offset - base), total);
              return ok || done;
            });
          }
          if (done) break;
        }
      } catch {
        if (!state.aborted) res.close();
      } finally {
        // note: also once sent: a file stream read to its last byte is closed (and a temporary file deleted) now.
        discard(source);
        finished(state);
      }
    })();
  };

  /** Resolves when onWritable's `retry` succeeds (it gets the write offset) or the client went. */
  const drained = (res: HttpResponse, state: State, retry: (offset: number) => boolean): Promise<void> =>
    new Promise<void>((resolve) => {
      if (state.aborted) return resolve();
      state.writable = resolve;
      res.onWritable((offset) => {
        if (state.aborted) return true;
        const ok = retry(offset);
        if (ok) {
          state.writable = null;
          // note: the next write waits until uWS has left this callback (writing from inside it, in the
          // microtasks run as it returns, left the response with no writable handler: it stalled).
          setImmediate(resolve);
        }
        return ok;
      });
    });

  const openSse = (res: HttpResponse, state: State, r: EdgeResponse): void => {
    let drain: (() => void) | null = null;
    res.onWritable(() => {
      drain?.();
      return true;
    });
    const conn = new SseConnection(
      {
        write: (chunk) => {
          let ok = false;
          res.cork(() => (ok = res.write(chunk)));
          return ok;
        },
        end: () => {
          if (!state.aborted) res.cork(() => res.end());
        },
        onDrain: (fn) => (drain = fn),
      },
      () => {
        streams.delete(conn);
        finished(state);
      },
    );
    state.sse = conn;
    streams.add(conn);
    conn.start(r.sse!);
  };

  /** respond(), and INTERNAL if writing failed; never throws (a promise chain goes on). */
  const respondSafely = (res: HttpResponse, state: State, r: EdgeResponse, method: string, close: boolean, corked = false): void => {
    try {
      respond(res, state, r, method, close, corked);
    } catch {
      try {
        respond(res, state, INTERNAL, 'GET', true, corked);
      } catch {
        // note: the response was already written or closed; if neither, closing it keeps uWS from
        // aborting the process (a handler may not return with no answer and no abort handler).
        finished(state);
        try {
          if (!state.aborted) res.close();
        } catch {
          // note: it was written.
        }
      }
    }
  };

  /**
   * Dispatches; an answer ready at once is written at once, a pending one when it settles.
   * The pinned uWS closes a connection on which a request arrives while an answer is still
   * pending, so a ready answer is never held back: written inside the handler, while uWS has
   * the socket corked, the answers to all requests of one read go out in one send, in order.
   */
  const run = (res: HttpResponse, state: State, req: EdgeRequest, close = false): void => {
    const out = dispatchSafe(core, req);
    if (out instanceof Promise) {
      // note: the handler returns before the reply, so the response needs its abort handler (STYLE.md 4.1).
      if (!state.watched) watchAbort(res, state);
      // note: no more is read from the connection until this answer is written: a request the client
      // pipelines behind this one then waits in the socket instead of making uWS close the connection
      // (one already in this read is past holding back; see the Pipeline's nextTurn).
      // A streamed body still arriving is paused and resumed by its reader (BodyStream), not here.
      if (state.body === null) {
        res.pause();
        state.paused = true;
      }
      // note: dispatchSafe's promise never rejects (a failure is a 500) and respondSafely never throws.
      void out.then((r) => respondSafely(res, state, r, req.method, close || failed(r)));
      return;
    }
    // note: run() is only called from uWS's handler or data callback, so the socket is corked.
    respondSafely(res, state, out, req.method, close || failed(out), true);
  };

  const watchAbort = (res: HttpResponse, state: State): void => {
    state.watched = true;
    res.onAborted(() => {
      state.aborted = true;
      state.controller?.abort();
      state.sse?.aborted();
      state.body?.fail(new EdgeError('invalid_request', 'the client closed the connection'));
      const w = state.writable;
      state.writable = null;
      w?.();
      finished(state);
    });
  };

  /** The route handler for one method (null: read it from the request, for `any`). */
  const handle = (method: string | null) => (res: HttpResponse, req: HttpRequest): void => {
    const state: State = { aborted: false, done: false, paused: false, watched: false, controller: null, sse: null, body: null, range: undefined, writable: null };
    inflight++;
    try {
      // note: HttpRequest is stack-allocated; copy everything before any await (STYLE.md 4.5).
      const headers: Record<string, string> = {};
      req.forEach((k, v) => {
        headers[k] = headers[k] === undefined ? v : `${headers[k]}, ${v}`;
      });
      const r = new UwsRequest(res, state, method ?? upperMethod(req.getMethod()), req.getUrl(), req.getQuery() ?? '', headers);
      state.range = headers.range;
      const length = headers['content-length'];
      const chunked = headers['transfer-encoding'] !== undefined;
      // note: no body, no route lookup here (the hot path); a streamed route then reads an empty stream (pipeline.ts).
      if ((length === undefined || length === '0') && !chunked) return run(res, state, r);
      watchAbort(res, state);
      const limit = core.bodyLimit(r.method, r.path);
      if (length !== undefined && Number(length) > limit) {
        // note: rejected from the declared length alone; the body is never read.
        r.bodyTooLarge = true;
        return run(res, state, r, true);
      }
      if (core.streamsBody(r.method, r.path)) return streamBody(res, state, r, limit);
      readBody(res, limit, bodyClock, (body) => {
        if (body === TIMED_OUT) return respondSafely(res, state, errorResponse(new EdgeError('request_timeout', 'the request was not received in time')), r.method, true);
        r.body = body;
        r.bodyTooLarge = body === null;
        // note: a body cut off mid-stream is answered after this data callback: closing the connection
        // inside it would drop the answer still corked with the socket.
        if (body === null) {
          return void setImmediate(() => {
            // note: outside uWS's callbacks the socket is not corked: cork for run(), which writes as if it were.
            if (!state.aborted) res.cork(() => run(res, state, r, true));
          });
        }
        run(res, state, r, false);
      });
    } catch {
      respond(res, state, INTERNAL, 'GET', true);
    }
  };
  /**
   * Dispatches a `body: 'stream'` request before its body is read (the pipeline authorizes it
   * first); the body is pushed into the request's stream as it arrives, copied (uWS neuters each
   * chunk on return), with pause()/resume() as the consumer's backpressure. The consumer is woken
   * after the data callback (BodyStream's defer), so an answer that closes the connection (413,
   * an error mid-body) is never written inside it, where closing would drop the corked answer.
   */
  const streamBody = (res: HttpResponse, state: State, r: UwsRequest, limit: number): void => {
    const body = new BodyStream(
      limit,
      {
        pause: () => {
          if (!state.aborted && !state.done) res.pause();
        },
        resume: () => {
          if (!state.aborted && !state.done) res.resume();
        },
      },
      true,
    );
    state.body = body;
    r.stream = body;
    const cancel = bodyClock.watch(Date.now(), () => body.fail(new EdgeError('request_timeout', 'the request was not received in time')));
    res.onData((ab, isLast) => {
      if (body.settled) return cancel();
      const chunk = Buffer.allocUnsafe(ab.byteLength);
      chunk.set(new Uint8Array(ab));
      if (!body.push(chunk)) return cancel();
      if (isLast) {
        body.end();
        cancel();
      }
    });
    run(res, state, r);
  };
  const sockets = new Set<UwsSocket>();
  /**
   * Every WebSocket upgrade request (uWS hands other requests on to the routes below): copied,
   * authorized by the core, then upgraded, or answered over HTTP with no socket.
   */
  const onUpgrade = (res: HttpResponse, req: HttpRequest, context: import('uWebSockets.js').us_socket_context_t): void => {
    const state: State = { aborted: false, done: false, paused: false, watched: false, controller: null, sse: null, body: null, range: undefined, writable: null };
    inflight++;
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
          return finished(state);
        }
        if (out.ws === undefined) return respondSafely(res, state, out, 'GET', true);
        const data: WsData = { handlers: out.ws, socket: null };
        const up = (): void => res.upgrade(data, headers['sec-websocket-key'] ?? '', headers['sec-websocket-protocol'] ?? '', headers['sec-websocket-extensions'] ?? '', context);
        try {
          if (state.watched) res.cork(up);
          else up();
        } catch {
          // note: no exception may cross a uWS callback (STYLE.md 4.6); the route hears abort().
          data.handlers.abort?.();
        }
        finished(state);
      };
      const out = upgradeSafe(core, r);
      if (out instanceof Promise) {
        watchAbort(res, state);
        // note: upgradeSafe's promise never rejects (a failure is a 500 answer).
        void out.then(accept);
      } else accept(out);
    } catch {
      respond(res, state, INTERNAL, 'GET', true);
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
      sockets.add(sock);
      guard(sock, () => data.handlers.open?.(sock));
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
      sockets.delete(sock);
      const reason = decoder.decode(message);
      try {
        data.handlers.close?.(sock, code, reason);
      } catch {
        // note: the socket is gone; a failing close handler changes nothing.
      }
    },
  });

  // note: one handler per common method, so the method is a constant instead of a native call
  // and a string per request; `any` takes the rest (specific methods match first in uWS).
  app.get('/*', handle('GET')).post('/*', handle('POST')).put('/*', handle('PUT')).patch('/*', handle('PATCH'));
  app.del('/*', handle('DELETE')).head('/*', handle('HEAD')).options('/*', handle('OPTIONS')).any('/*', handle(null));

  return new Promise((resolve, reject) => {
    // note: 1 = LIBUS_LISTEN_EXCLUSIVE_PORT; without it uWS sets SO_REUSEPORT and a second server on a busy
    // port silently shares it. The typings lack the (host, port, options, cb) form the binary accepts.
    const listen = app.listen.bind(app) as unknown as (h: string, p: number, o: number, cb: (t: import('uWebSockets.js').us_listen_socket | false) => void) => void;
    listen(host, port, 1, (token) => {
      // note: the binary gives no reason; the system, asked the same, names it (e.g. the port is in use).
      // note: probeListen never rejects (an error is its answer).
      if (!token) return void probeListen(host, port).then((code) => reject(listenError(host, port, code)));
      core.topics.bind((topic, data) => void app.publish(topic, data, typeof data !== 'string'));
      resolve({
        backend: 'uws',
        port: uws.us_socket_local_port(token),
        shutdown: (deadlineMs) => {
          bodyClock.stop();
          uws.us_listen_socket_close(token);
          core.topics.bind(null);
          for (const s of streams) s.close();
          for (const w of sockets) w.close(WS_GOING_AWAY, 'server shutting down');
          const drained =
            inflight === 0
              ? Promise.resolve()
              : new Promise<void>((done) => {
                  const t = setTimeout(done, deadlineMs);
                  idle = () => {
                    clearTimeout(t);
                    done();
                  };
                });
          // note: then the connections left (idle keep-alive ones) close, so a server stopped
          // inside a process that lives on (startEdge's close()) answers nothing more. The
          // binary has App.close(); the typings lack it.
          return drained.then(() => (app as unknown as { close(): void }).close());
        },
      });
    });
  });
}

/**
 * One request as the edge sees it. A class, not an object literal with getters (V8
 * keeps those in slow dictionary mode); the address and the abort signal are made
 * only when asked for, while the response is still alive.
 */
class UwsRequest implements EdgeRequest {
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

  get signal(): AbortSignal {
    if (this.#state.controller === null) {
      this.#state.controller = new AbortController();
      if (this.#state.aborted) this.#state.controller.abort();
    }
    return this.#state.controller.signal;
  }
}

/** One uWS WebSocket behind the socket-free WsSocket (src/edge/route.ts); uWS throws on a closed one. */
class UwsSocket implements WsSocket {
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

  getBufferedAmount(): number {
    return this.closed ? 0 : this.#ws.getBufferedAmount();
  }
}

const TIMED_OUT = Symbol('timed out');

/**
 * The request timeout for bodies that do not arrive in one piece (uWS's own idle timeout
 * restarts with every chunk, so a client trickling a body would be kept forever): one
 * timer for all of them, and nothing at all for the common body that comes in one chunk.
 */
class BodyClock {
  readonly #pending = new Map<() => void, number>();
  #timer: NodeJS.Timeout | null = null;

  constructor(readonly timeoutMs: number) {}

  /** Calls `expire` once the body started at `since` is late; returns the function that cancels it. */
  watch(since: number, expire: () => void): () => void {
    if (this.timeoutMs === 0) return () => {};
    this.#pending.set(expire, since + this.timeoutMs);
    this.#timer ??= setInterval(() => this.#tick(), Math.max(50, Math.min(1000, Math.floor(this.timeoutMs / 4)))).unref();
    return () => void this.#pending.delete(expire);
  }

  #tick(): void {
    const now = Date.now();
    for (const [expire, deadline] of this.#pending) {
      if (deadline > now) continue;
      this.#pending.delete(expire);
      expire();
    }
    if (this.#pending.size === 0) this.stop();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }
}

/**
 * Reads a body in copied chunks (uWS neuters them on return); null once it passes the
 * limit, TIMED_OUT when it is not complete within the request timeout.
 */
function readBody(res: HttpResponse, limit: number, clock: BodyClock, done: (body: Buffer | null | typeof TIMED_OUT) => void): void {
  // note: most bodies arrive in one chunk: the list of chunks and the clock are used only from the second.
  let first: Buffer | null = null;
  let chunks: Buffer[] | null = null;
  let size = 0;
  let over = false;
  let cancel: (() => void) | null = null;
  const since = Date.now();
  const finish = (body: Buffer | null | typeof TIMED_OUT): void => {
    over = true;
    cancel?.();
    done(body);
  };
  res.onData((ab, isLast) => {
    if (over) return;
    size += ab.byteLength;
    if (size > limit) return finish(null);
    // note: a copy (uWS neuters `ab` on return), into pooled memory rather than a new ArrayBuffer.
    const chunk = Buffer.allocUnsafe(ab.byteLength);
    chunk.set(new Uint8Array(ab));
    if (first === null) first = chunk;
    else (chunks ??= [first]).push(chunk);
    if (isLast) return finish(chunks === null ? first : Buffer.concat(chunks, size));
    cancel ??= clock.watch(since, () => {
      if (!over) finish(TIMED_OUT);
    });
  });
}

const byteLength = (b: string | Uint8Array): number => (typeof b === 'string' ? Buffer.byteLength(b) : b.byteLength);
