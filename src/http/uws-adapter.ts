import type { EdgeRequest } from '../edge/route.js';
import type { Uws } from './native.js';
import { listenError, probeListen } from './listen-error.js';
import type { SseConnection } from './sse.js';
import { EdgeError } from '../core/errors.js';
import { INTERNAL, dispatchSafe, errorResponse, failed, type HttpCore, type HttpLimits, type HttpServer } from './types.js';
import { WS_GOING_AWAY } from './ws.js';
import { BodyClock, TIMED_OUT, readBody, streamBody } from './uws-body.js';
import { UwsRequest, newState, watchAbort, type HttpRequest, type HttpResponse, type State, type UwsContext } from './uws-request.js';
import { respond, respondSafely } from './uws-write.js';
import { mountWs, type UwsSocket } from './uws-ws.js';

const METHODS: Record<string, string> = { get: 'GET', post: 'POST', put: 'PUT', patch: 'PATCH', delete: 'DELETE', head: 'HEAD', options: 'OPTIONS' };
// note: uWS reports methods lower-cased; a table lookup avoids a string allocation per request.
const upperMethod = (m: string): string => METHODS[m] ?? m.toUpperCase();

/**
 * The native uWS backend. Every uWS pitfall is handled here and only
 * here: onAborted first, the request copied before any await, bodies read in
 * copied chunks against a limit, every write corked, SSE backpressure via onWritable.
 * This file has the app, the per-method handlers, dispatch, listen and shutdown; the
 * request and its state are in uws-request.ts, body reading in uws-body.ts, response
 * writing in uws-write.ts, WebSockets in uws-ws.ts (they share the server's UwsContext).
 */
export function startUws(uws: Uws, core: HttpCore, host: string, port: number, limits: HttpLimits): Promise<HttpServer> {
  const app = uws.App();
  const bodyClock = new BodyClock(limits.requestTimeoutMs);
  let inflight = 0;
  let idle: (() => void) | null = null;
  const streams = new Set<SseConnection>();
  const sockets = new Set<UwsSocket>();

  const finished = (state: State): void => {
    if (state.done) return;
    state.done = true;
    if (--inflight === 0 && idle) idle();
  };
  const ctx: UwsContext = {
    core,
    bodyClock,
    streams,
    sockets,
    started: () => void inflight++,
    finished,
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
      // note: the handler returns before the reply, so the response needs its abort handler (uWS: writing to an aborted response crashes).
      if (!state.watched) watchAbort(ctx, res, state);
      // note: no more is read from the connection until this answer is written: a request the client
      // pipelines behind this one then waits in the socket instead of making uWS close the connection
      // (one already in this read is past holding back; see the Pipeline's nextTurn).
      // A streamed body still arriving is paused and resumed by its reader (BodyStream), not here.
      if (state.body === null) {
        res.pause();
        state.paused = true;
      }
      // note: dispatchSafe's promise never rejects (a failure is a 500) and respondSafely never throws.
      void out.then((r) => respondSafely(ctx, res, state, r, req.method, close || failed(r)));
      return;
    }
    // note: run() is only called from uWS's handler or data callback, so the socket is corked.
    respondSafely(ctx, res, state, out, req.method, close || failed(out), true);
  };

  /** The route handler for one method (null: read it from the request, for `any`). */
  const handle = (method: string | null) => (res: HttpResponse, req: HttpRequest): void => {
    const state = newState();
    inflight++;
    try {
      // note: HttpRequest is stack-allocated (invalid after this callback returns); copy everything before any await.
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
      watchAbort(ctx, res, state);
      const limit = core.bodyLimit(r.method, r.path);
      if (length !== undefined && Number(length) > limit) {
        // note: rejected from the declared length alone; the body is never read.
        r.bodyTooLarge = true;
        return run(res, state, r, true);
      }
      if (core.streamsBody(r.method, r.path)) {
        streamBody(ctx, res, state, r, limit);
        return run(res, state, r);
      }
      readBody(res, limit, bodyClock, (body) => {
        if (body === TIMED_OUT) return respondSafely(ctx, res, state, errorResponse(new EdgeError('request_timeout', 'the request was not received in time')), r.method, true);
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
      respond(ctx, res, state, INTERNAL, 'GET', true);
    }
  };

  mountWs(app, ctx, limits);

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
