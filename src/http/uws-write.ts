import { STATUS_TEXT } from './status-text.js';
import type { EdgeResponse } from '../edge/route.js';
import { EdgeError } from '../core/errors.js';
import { abandon, discard, outgoing, type Outgoing } from './body-out.js';
import { SSE_HEADERS, SseConnection } from './sse.js';
import { INTERNAL } from './types.js';
import { watchAbort, type HttpResponse, type State, type UwsContext } from './uws-request.js';

const STATUS_LINES = new Map<number, string>();
const statusLine = (s: number): string => {
  let line = STATUS_LINES.get(s);
  if (line === undefined) STATUS_LINES.set(s, (line = `${s} ${STATUS_TEXT[s] ?? 'Unknown'}`));
  return line;
};

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

/**
 * Writes a response, corked: one send for status, headers and body. `corked`: called inside
 * uWS's handler or data callback, where uWS has corked the socket itself (no cork call needed).
 */
export const respond = (ctx: UwsContext, res: HttpResponse, state: State, r: EdgeResponse, method: string, close: boolean, corked = false): void => {
  if (state.aborted) {
    abandon(r);
    return ctx.finished(state);
  }
  // note: a streamed request body not read to its end leaves bytes on the connection: close it.
  if (state.body !== null && !state.body.complete) {
    close = true;
    state.body.fail(new EdgeError('invalid_request', 'the request was answered before its body was read'));
  }
  if (r.stream !== undefined || r.file !== undefined) {
    unpause(res, state);
    return writeOut(ctx, res, state, outgoing(method, state.range, r), close);
  }
  // note: a stream outlives the handler, so it needs the abort handler (a ready answer has none).
  if (r.sse && !state.watched) watchAbort(ctx, res, state);
  const go = (): void => {
    // note: an SSE answer held back by an await stays paused while it streams: the pinned uWS arms its
    // 10 s idle timeout on resume() and successful writes do not reset it, so a resumed stream was cut
    // after about 12 s. Paused, the timeout is off; the stream's end resumes it (openSse).
    if (!r.sse) unpause(res, state);
    write(res, r, method, close);
  };
  if (corked) go();
  else res.cork(go);
  if (r.sse) return openSse(ctx, res, state, r);
  ctx.finished(state);
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
const writeOut = (ctx: UwsContext, res: HttpResponse, state: State, out: Outgoing, close: boolean): void => {
  if (!state.watched) watchAbort(ctx, res, state);
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
    return ctx.finished(state);
  }
  const source = out.source;
  // note: a response tryEnd completed is gone (closing it then is use-after-free): an answer that must
  // close the connection (an unread request body) is sent chunked instead, ended with end(…, true).
  const total = close ? undefined : out.length;
  res.cork(head);
  // note: fire-and-forget: the writer catches every error (the connection is closed) and finishes the state.
  void (async () => {
    let done = false;
    // note: on the pinned uWS a long answer was cut mid-body 10–15 s in when the machine was busy
    // (a 1 GiB file: onAborted fired while the client was still reading; reproduced under load, not
    // pinned to one call of the binary). The 10 s idle timeout it arms is the one thing that ends a
    // connection there unasked, and resume() sets it to 10 s again: every few seconds of writing,
    // pause() + resume() re-arms it (none failed in 6 loaded runs after, 3 of 3 before).
    let armed = Date.now();
    const keepAlive = (): void => {
      const now = Date.now();
      if (now - armed < REARM_MS || state.aborted) return;
      armed = now;
      res.pause();
      res.resume();
    };
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
          if (!ok) {
            await drained(res, state, () => true);
            armed = Date.now();
          } else keepAlive();
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
          armed = Date.now();
        }
        if (done) break;
        keepAlive();
      }
    } catch {
      if (!state.aborted) res.close();
    } finally {
      // note: also once sent: a file stream read to its last byte is closed (and a temporary file deleted) now.
      discard(source);
      ctx.finished(state);
    }
  })();
};

/** How often a long streamed answer arms uWS's idle timeout again (writeOut). */
const REARM_MS = 3000;

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

const openSse = (ctx: UwsContext, res: HttpResponse, state: State, r: EdgeResponse): void => {
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
        if (state.aborted) return;
        res.cork(() => {
          unpause(res, state);
          res.end();
        });
      },
      onDrain: (fn) => (drain = fn),
    },
    () => {
      ctx.streams.delete(conn);
      ctx.finished(state);
    },
  );
  state.sse = conn;
  ctx.streams.add(conn);
  conn.start(r.sse!);
};

/** respond(), and INTERNAL if writing failed; never throws (a promise chain goes on). */
export const respondSafely = (ctx: UwsContext, res: HttpResponse, state: State, r: EdgeResponse, method: string, close: boolean, corked = false): void => {
  try {
    respond(ctx, res, state, r, method, close, corked);
  } catch {
    try {
      respond(ctx, res, state, INTERNAL, 'GET', true, corked);
    } catch {
      // note: the response was already written or closed; if neither, closing it keeps uWS from
      // aborting the process (a handler may not return with no answer and no abort handler).
      ctx.finished(state);
      try {
        if (!state.aborted) res.close();
      } catch {
        // note: it was written.
      }
    }
  }
};

const byteLength = (b: string | Uint8Array): number => (typeof b === 'string' ? Buffer.byteLength(b) : b.byteLength);
