import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { EdgeRequest, EdgeResponse } from '../edge/route.js';
import { listenError } from './listen-error.js';
import { SSE_HEADERS, SseConnection } from './sse.js';
import { INTERNAL, dispatchSafe, failed, type HttpCore, type HttpServer } from './types.js';


/** The `node:http` backend, used when the native uWS binary is not available (Node 22/24). */
export function startNode(core: HttpCore, host: string, port: number): Promise<HttpServer> {
  let inflight = 0;
  let idle: (() => void) | null = null;
  const streams = new Set<SseConnection>();

  const finished = (): void => {
    if (--inflight === 0 && idle) idle();
  };

  const respond = (req: IncomingMessage, res: ServerResponse, r: EdgeResponse, close: boolean): void => {
    if (res.destroyed) return finished();
    const headers: Record<string, string> = { ...r.headers };
    if (close) headers.connection = 'close';
    if (r.sse) return openSse(res, r, headers);
    let body: string | Uint8Array | undefined;
    if (r.json !== undefined) {
      headers['content-type'] = 'application/json; charset=utf-8';
      body = JSON.stringify(r.json);
    } else body = r.bytes;
    if (r.status !== 204 && r.status !== 304) headers['content-length'] = String(body === undefined ? 0 : Buffer.byteLength(body));
    res.writeHead(r.status, headers);
    res.end(req.method === 'HEAD' || r.status === 204 || r.status === 304 ? undefined : body);
    res.once('close', finished);
    if (close) res.once('finish', () => req.socket.destroySoon());
  };

  /** respond(), and INTERNAL if the answer could not be written (e.g. JSON cannot hold it); never throws. */
  const respondSafely = (req: IncomingMessage, res: ServerResponse, r: EdgeResponse, close: boolean): void => {
    try {
      respond(req, res, r, close);
    } catch {
      if (res.headersSent) res.destroy();
      else respond(req, res, INTERNAL, true);
    }
  };

  const openSse = (res: ServerResponse, r: EdgeResponse, headers: Record<string, string>): void => {
    res.writeHead(200, { ...headers, ...SSE_HEADERS });
    res.flushHeaders();
    const conn = new SseConnection(
      {
        write: (chunk) => res.write(chunk),
        end: () => res.end(),
        onDrain: (fn) => res.on('drain', fn),
      },
      () => {
        streams.delete(conn);
      },
    );
    streams.add(conn);
    res.once('close', () => {
      conn.aborted();
      finished();
    });
    conn.start(r.sse!);
  };

  const server = createServer({ keepAliveTimeout: 10_000, requestTimeout: 60_000 }, (req, res) => {
    inflight++;
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const edgeReq = new NodeRequest(
      req,
      (req.method ?? 'GET').toUpperCase(),
      q === -1 ? url : url.slice(0, q),
      q === -1 ? '' : url.slice(q + 1),
      flatHeaders(req),
    );
    res.once('close', () => {
      if (!res.writableFinished) edgeReq.abort();
    });
    const run = (body: Buffer | null, tooLarge: boolean): void => {
      edgeReq.body = body;
      edgeReq.bodyTooLarge = tooLarge;
      const out = dispatchSafe(core, edgeReq);
      if (out instanceof Promise) void out.then((r) => respondSafely(req, res, r, tooLarge || failed(r)));
      else respondSafely(req, res, out, tooLarge || failed(out));
    };
    const length = req.headers['content-length'];
    if ((length === undefined || length === '0') && req.headers['transfer-encoding'] === undefined) {
      req.resume();
      return run(null, false);
    }
    const limit = core.bodyLimit(edgeReq.method, edgeReq.path);
    if (length !== undefined && Number(length) > limit) return run(null, true);
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (chunk: Buffer) => {
      if (over) return;
      size += chunk.length;
      if (size > limit) {
        over = true;
        req.pause();
        return run(null, true);
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (!over) run(size === 0 ? null : Buffer.concat(chunks, size), false);
    });
    req.on('error', () => res.destroy());
  });

  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => reject(listenError(host, port, err.code));
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve({
        backend: 'node',
        port: (server.address() as AddressInfo).port,
        shutdown: (deadlineMs) => {
          server.close();
          server.closeIdleConnections();
          for (const s of streams) s.close();
          if (inflight === 0) return Promise.resolve();
          return new Promise<void>((done) => {
            const t = setTimeout(() => {
              server.closeAllConnections();
              done();
            }, deadlineMs);
            idle = () => {
              clearTimeout(t);
              server.closeIdleConnections();
              done();
            };
          });
        },
      });
    });
  });
}

/** One request; the abort signal is made only when a handler asks for it. */
class NodeRequest implements EdgeRequest {
  body: Buffer | null = null;
  bodyTooLarge = false;
  #controller: AbortController | null = null;
  #aborted = false;
  readonly #req: IncomingMessage;

  constructor(
    req: IncomingMessage,
    readonly method: string,
    readonly path: string,
    readonly rawQuery: string,
    readonly headers: Record<string, string>,
  ) {
    this.#req = req;
  }

  get ip(): string {
    return this.#req.socket.remoteAddress ?? '';
  }

  get signal(): AbortSignal {
    this.#controller ??= new AbortController();
    if (this.#aborted) this.#controller.abort();
    return this.#controller.signal;
  }

  abort(): void {
    this.#aborted = true;
    this.#controller?.abort();
  }
}

function flatHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const k = raw[i]!.toLowerCase();
    out[k] = out[k] === undefined ? raw[i + 1]! : `${out[k]}, ${raw[i + 1]!}`;
  }
  return out;
}
