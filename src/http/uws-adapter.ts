import { STATUS_CODES } from 'node:http';
import type { EdgeRequest, EdgeResponse } from '../edge/route.js';
import type { Uws } from './native.js';
import { SSE_HEADERS, SseConnection } from './sse.js';
import { INTERNAL, dispatchSafe, failed, type HttpCore, type HttpServer } from './types.js';

type HttpResponse = import('uWebSockets.js').HttpResponse;
type HttpRequest = import('uWebSockets.js').HttpRequest;

interface State {
  aborted: boolean;
  /** Whether onAborted is attached (needed unless the reply is synchronous). */
  watched: boolean;
  done: boolean;
  controller: AbortController | null;
  sse: SseConnection | null;
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
export function startUws(uws: Uws, core: HttpCore, host: string, port: number): Promise<HttpServer> {
  const app = uws.App();
  let inflight = 0;
  let idle: (() => void) | null = null;
  const streams = new Set<SseConnection>();

  const finished = (state: State): void => {
    if (state.done) return;
    state.done = true;
    if (--inflight === 0 && idle) idle();
  };

  /** Writes a response (corked: one send for status, headers and body). */
  const respond = (res: HttpResponse, state: State, r: EdgeResponse, method: string, close: boolean): void => {
    if (state.aborted) return finished(state);
    res.cork(() => write(res, r, method, close));
    // note: an SSE answer always comes through run(), which attached the abort handler.
    if (r.sse) return openSse(res, state, r);
    finished(state);
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

  // Answers that are ready at once are written together once the event loop's poll phase is
  // over (setImmediate), not one by one as each request is dispatched: the client side is then
  // woken once per batch instead of once per response. Under load that is most of the cost of
  // a small request (docs/benchmarks.md, "Where the time goes"); alone, a request waits only
  // for the end of its loop turn.
  let ready: Ready[] = [];
  const flushReady = (): void => {
    const batch = ready;
    ready = [];
    for (const x of batch) respondSafely(x.res, x.state, x.r, x.method, x.close);
  };

  /** respond(), and INTERNAL if writing failed; never throws (a batch or a promise chain goes on). */
  const respondSafely = (res: HttpResponse, state: State, r: EdgeResponse, method: string, close: boolean): void => {
    try {
      respond(res, state, r, method, close);
    } catch {
      try {
        respond(res, state, INTERNAL, 'GET', true);
      } catch {
        // note: the response was already written or closed.
        finished(state);
      }
    }
  };

  /** Dispatches; a ready answer joins the batch, a pending one is written when it settles. */
  const run = (res: HttpResponse, state: State, req: EdgeRequest, close = false): void => {
    // note: the handler returns before the reply, so the response needs its abort handler (STYLE.md 4.1).
    if (!state.watched) watchAbort(res, state);
    const out = dispatchSafe(core, req);
    if (out instanceof Promise) {
      void out.then((r) => respondSafely(res, state, r, req.method, close || failed(r)));
      return;
    }
    if (ready.length === 0) setImmediate(flushReady);
    ready.push(new Ready(res, state, out, req.method, close || failed(out)));
  };

  const watchAbort = (res: HttpResponse, state: State): void => {
    state.watched = true;
    res.onAborted(() => {
      state.aborted = true;
      state.controller?.abort();
      state.sse?.aborted();
      finished(state);
    });
  };

  /** The route handler for one method (null: read it from the request, for `any`). */
  const handle = (method: string | null) => (res: HttpResponse, req: HttpRequest): void => {
    const state: State = { aborted: false, done: false, watched: false, controller: null, sse: null };
    inflight++;
    try {
      // note: HttpRequest is stack-allocated; copy everything before any await (STYLE.md 4.5).
      const headers: Record<string, string> = {};
      req.forEach((k, v) => {
        headers[k] = headers[k] === undefined ? v : `${headers[k]}, ${v}`;
      });
      const r = new UwsRequest(res, state, method ?? upperMethod(req.getMethod()), req.getUrl(), req.getQuery() ?? '', headers);
      const length = headers['content-length'];
      const chunked = headers['transfer-encoding'] !== undefined;
      if ((length === undefined || length === '0') && !chunked) return run(res, state, r);
      watchAbort(res, state);
      const limit = core.bodyLimit(r.method, r.path);
      if (length !== undefined && Number(length) > limit) {
        // note: rejected from the declared length alone; the body is never read.
        r.bodyTooLarge = true;
        return run(res, state, r, true);
      }
      readBody(res, limit, (body) => {
        r.body = body;
        r.bodyTooLarge = body === null;
        run(res, state, r, body === null);
      });
    } catch {
      respond(res, state, INTERNAL, 'GET', true);
    }
  };
  // note: one handler per common method, so the method is a constant instead of a native call
  // and a string per request; `any` takes the rest (specific methods match first in uWS).
  app.get('/*', handle('GET')).post('/*', handle('POST')).put('/*', handle('PUT')).patch('/*', handle('PATCH'));
  app.del('/*', handle('DELETE')).head('/*', handle('HEAD')).options('/*', handle('OPTIONS')).any('/*', handle(null));

  return new Promise((resolve, reject) => {
    // note: 1 = LIBUS_LISTEN_EXCLUSIVE_PORT; without it uWS sets SO_REUSEPORT and a second server on a busy
    // port silently shares it. The typings lack the (host, port, options, cb) form the binary accepts.
    const listen = app.listen.bind(app) as unknown as (h: string, p: number, o: number, cb: (t: import('uWebSockets.js').us_listen_socket | false) => void) => void;
    listen(host, port, 1, (token) => {
      if (!token) return reject(new Error(`cannot listen on ${host}:${port}`));
      resolve({
        backend: 'uws',
        port: uws.us_socket_local_port(token),
        shutdown: (deadlineMs) => {
          uws.us_listen_socket_close(token);
          for (const s of streams) s.close();
          if (inflight === 0) return Promise.resolve();
          return new Promise<void>((done) => {
            const t = setTimeout(done, deadlineMs);
            idle = () => {
              clearTimeout(t);
              done();
            };
          });
        },
      });
    });
  });
}

/** An answer waiting for the end of the loop turn (see flushReady). */
class Ready {
  constructor(
    readonly res: HttpResponse,
    readonly state: State,
    readonly r: EdgeResponse,
    readonly method: string,
    readonly close: boolean,
  ) {}
}

/**
 * One request as the edge sees it. A class, not an object literal with getters (V8
 * keeps those in slow dictionary mode); the address and the abort signal are made
 * only when asked for, while the response is still alive.
 */
class UwsRequest implements EdgeRequest {
  body: Buffer | null = null;
  bodyTooLarge = false;
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
    return (this.#state.controller ??= new AbortController()).signal;
  }
}

/** Reads a body in copied chunks (uWS neuters them on return); null once it passes the limit. */
function readBody(res: HttpResponse, limit: number, done: (body: Buffer | null) => void): void {
  // note: most bodies arrive in one chunk: the list of chunks is made only for the second.
  let first: Buffer | null = null;
  let chunks: Buffer[] | null = null;
  let size = 0;
  res.onData((ab, isLast) => {
    if (size > limit) return;
    size += ab.byteLength;
    if (size > limit) return done(null);
    // note: a copy (uWS neuters `ab` on return), into pooled memory rather than a new ArrayBuffer.
    const chunk = Buffer.allocUnsafe(ab.byteLength);
    chunk.set(new Uint8Array(ab));
    if (first === null) first = chunk;
    else (chunks ??= [first]).push(chunk);
    if (isLast) done(chunks === null ? first : Buffer.concat(chunks, size));
  });
}

const byteLength = (b: string | Uint8Array): number => (typeof b === 'string' ? Buffer.byteLength(b) : b.byteLength);
