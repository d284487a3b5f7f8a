import { ServerResponse, createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { pipeline } from 'node:stream';
import { BodyStream } from './body-stream.js';
import { abandon, outgoing } from './body-out.js';
import { EdgeError } from '../core/errors.js';
import { WebSocketServer, type WebSocket } from 'ws';
import type { EdgeRequest, EdgeResponse, WsHandlers, WsSendStatus, WsSocket } from '../edge/route.js';
import { listenError } from './listen-error.js';
import { SSE_HEADERS, SseConnection } from './sse.js';
import { INTERNAL, MAX_HEADER_BYTES, dispatchSafe, failed, rawErrorResponse, rawResponse, upgradeSafe, type HttpCore, type HttpLimits, type HttpServer } from './types.js';
import { WS_GOING_AWAY, guard } from './ws.js';


/** The `node:http` backend, used when the native uWS binary is not available (Node 22/24). */
export function startNode(core: HttpCore, host: string, port: number, limits: HttpLimits): Promise<HttpServer> {
  let inflight = 0;
  let idle: (() => void) | null = null;
  const streams = new Set<SseConnection>();

  const finished = (): void => {
    if (--inflight === 0 && idle) idle();
  };

  const respond = (req: IncomingMessage, res: ServerResponse, r: EdgeResponse, close: boolean, reqBody: BodyStream | null = null): void => {
    if (res.destroyed) {
      abandon(r);
      return finished();
    }
    // note: a streamed request body not read to its end leaves bytes on the connection: close it.
    if (reqBody !== null && !reqBody.complete) {
      close = true;
      reqBody.fail(new EdgeError('invalid_request', 'the request was answered before its body was read'));
    }
    if (r.stream !== undefined || r.file !== undefined) return writeOut(req, res, r, close);
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

  /** A streamed answer, piped with backpressure (write() false → wait for 'drain'); a failure mid-way cuts the connection. */
  const writeOut = (req: IncomingMessage, res: ServerResponse, r: EdgeResponse, close: boolean): void => {
    const out = outgoing(req.method ?? 'GET', req.headers.range, r);
    if (close) out.headers.connection = 'close';
    if (out.length !== undefined) out.headers['content-length'] = String(out.length);
    res.writeHead(out.status, out.headers);
    res.once('close', finished);
    if (close) res.once('finish', () => req.socket.destroySoon());
    if (out.source === null) return void res.end();
    pipeline(out.source, res, (err) => {
      if (err) res.destroy();
    });
  };

  /** respond(), and INTERNAL if the answer could not be written (e.g. JSON cannot hold it); never throws. */
  const respondSafely = (req: IncomingMessage, res: ServerResponse, r: EdgeResponse, close: boolean, body: BodyStream | null = null): void => {
    try {
      respond(req, res, r, close, body);
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

  const server = createServer(
    {
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      // note: the two timeouts above are checked on this interval (node's default: 30 s).
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(limits.headersTimeoutMs / 4))),
      maxHeaderSize: MAX_HEADER_BYTES,
    },
    (req, res) => onRequest(req, res),
  );
  // note: node's own answers to these faults are bare; ours carry the error envelope.
  server.on('clientError', (err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Socket) => {
    const pending = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    const e = clientErrorOf(err);
    if (e === null || !socket.writable || (pending && pending.headersSent)) return void socket.destroy();
    socket.end(rawErrorResponse(e));
  });
  const refused = capConnections(server, limits);

  // WebSockets (docs/api.md "WebSocket"): `ws` without a server of its own; the limits match uWS's.
  // note: the subprotocol a route selected (EdgeResponse.protocol), by upgrade request; else ws's default (the first offered).
  const selected = new WeakMap<IncomingMessage, string>();
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: limits.wsMaxMessage,
    perMessageDeflate: false,
    clientTracking: false,
    handleProtocols: (offered: Set<string>, req: IncomingMessage) => {
      const p = selected.get(req);
      if (p === undefined) return offered.values().next().value ?? false;
      return p === '' ? false : p;
    },
  });
  const sockets = new Set<NodeSocket>();
  const topics = new Topics();
  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    if (refused.has(socket)) return void socket.destroy();
    socket.on('error', () => socket.destroy());
    // note: what uWS takes as an upgrade (its ws route): a GET with a 24-character Sec-WebSocket-Key.
    if (req.method !== 'GET' || req.headers['sec-websocket-key']?.length !== 24) return plainUpgrade(req, socket);
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const edgeReq = new NodeRequest(req, (req.method ?? 'GET').toUpperCase(), q === -1 ? url : url.slice(0, q), q === -1 ? '' : url.slice(q + 1), flatHeaders(req));
    edgeReq.upgrade = true;
    const gone = (): void => edgeReq.abort();
    socket.once('close', gone);
    const accept = (out: EdgeResponse): void => {
      socket.off('close', gone);
      if (out.ws === undefined) return void (socket.destroyed ? undefined : socket.end(rawResponse(out)));
      const handlers = out.ws;
      // note: ws destroys a socket it cannot use without calling back; the route then hears abort().
      if (socket.destroyed || !socket.readable || !socket.writable) {
        socket.destroy();
        return void handlers.abort?.();
      }
      if (out.protocol !== undefined) selected.set(req, out.protocol);
      wss.handleUpgrade(req, socket, head, (ws) => openSocket(ws, socket, handlers));
    };
    const out = upgradeSafe(core, edgeReq);
    // note: upgradeSafe's promise never rejects (a failure is a 500 answer).
    if (out instanceof Promise) void out.then(accept);
    else accept(out);
  });

  /**
   * Another protocol asked for (e.g. curl's `Upgrade: h2c`), or no WebSocket handshake: served as a plain request and the
   * connection closed after it, as uWS and node without an upgrade listener do. The socket is no
   * longer parsed, so a body cannot be read: such a request is answered 400.
   */
  const plainUpgrade = (req: IncomingMessage, socket: Socket): void => {
    if ((req.headers['content-length'] ?? '0') !== '0' || req.headers['transfer-encoding'] !== undefined) {
      return void socket.end(rawErrorResponse(new EdgeError('invalid_request', 'a request that asks for a protocol upgrade cannot carry a body')));
    }
    const res = new ServerResponse(req);
    res.shouldKeepAlive = false;
    res.assignSocket(socket);
    // note: the socket stays assigned until it closes, so the response's 'close' (which ends the request) follows.
    res.once('finish', () => socket.destroySoon());
    onRequest(req, res);
  };

  const openSocket = (ws: WebSocket, socket: Socket, handlers: WsHandlers): void => {
    const sock = new NodeSocket(ws, topics, limits.wsMaxBackpressure);
    sockets.add(sock);
    ws.on('message', (data: Buffer, isBinary) => {
      sock.alive = true;
      const handler = handlers.message;
      if (handler !== undefined) guard(sock, () => handler(sock, isBinary ? data : data.toString('utf8'), isBinary));
    });
    ws.on('pong', () => (sock.alive = true));
    ws.on('ping', () => (sock.alive = true));
    socket.on('drain', () => {
      if (!sock.closed) guard(sock, () => handlers.drain?.(sock));
    });
    ws.on('error', () => ws.terminate());
    ws.once('close', (code: number, reason: Buffer) => {
      sock.closed = true;
      sockets.delete(sock);
      topics.drop(sock);
      try {
        handlers.close?.(sock, code, reason.toString('utf8'));
      } catch {
        // note: the socket is gone; a failing close handler changes nothing.
      }
    });
    guard(sock, () => handlers.open?.(sock));
  };

  // note: uWS's idleTimeout with sendPingsAutomatically, the ws way: a socket silent for half the
  // timeout is pinged; one still silent half a timeout later (no pong) is cut.
  const pinger =
    limits.wsIdleTimeoutS === 0
      ? null
      : setInterval(() => {
          for (const s of sockets) {
            if (!s.alive) s.terminate();
            else {
              s.alive = false;
              s.ping();
            }
          }
        }, (limits.wsIdleTimeoutS * 1000) / 2).unref();

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    // note: a connection over the caps was answered 503 and is closing: its requests never run.
    if (refused.has(req.socket)) return void res.destroy();
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
    const run = (body: Buffer | null, tooLarge: boolean, stream: BodyStream | null = null): void => {
      edgeReq.body = body;
      edgeReq.bodyTooLarge = tooLarge;
      edgeReq.stream = stream;
      const out = dispatchSafe(core, edgeReq);
      // note: dispatchSafe's promise never rejects (a failure is a 500) and respondSafely catches.
      if (out instanceof Promise) void out.then((r) => respondSafely(req, res, r, tooLarge || failed(r), stream));
      else respondSafely(req, res, out, tooLarge || failed(out), stream);
    };
    const length = req.headers['content-length'];
    if ((length === undefined || length === '0') && req.headers['transfer-encoding'] === undefined) {
      // note: no body, no route lookup here; a streamed route then reads an empty stream (pipeline.ts).
      req.resume();
      return run(null, false);
    }
    const limit = core.bodyLimit(edgeReq.method, edgeReq.path);
    if (length !== undefined && Number(length) > limit) return run(null, true);
    if (core.streamsBody(edgeReq.method, edgeReq.path)) {
      // note: dispatched before a byte is read (the pipeline authorizes first); the socket is paused
      // while the handler's queue is full (BodyStream), so a large body never sits in memory.
      const stream = new BodyStream(limit, { pause: () => req.pause(), resume: () => req.resume() });
      req.on('data', (chunk: Buffer) => {
        if (!stream.push(chunk)) req.pause();
      });
      req.on('end', () => stream.end());
      req.on('error', () => stream.fail(new EdgeError('invalid_request', 'the request body could not be read')));
      res.once('close', () => stream.fail(new EdgeError('invalid_request', 'the client closed the connection')));
      return run(null, false, stream);
    }
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
  };

  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => reject(listenError(host, port, err.code));
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      core.topics.bind((topic, data) => topics.publish(topic, data, null));
      resolve({
        backend: 'node',
        port: (server.address() as AddressInfo).port,
        shutdown: (deadlineMs) => {
          server.close();
          server.closeIdleConnections();
          core.topics.bind(null);
          if (pinger !== null) clearInterval(pinger);
          for (const s of streams) s.close();
          for (const w of sockets) w.close(WS_GOING_AWAY, 'server shutting down');
          // note: a closed WebSocket waits for the client's close frame; past the deadline it is cut.
          const wsGone = (): void => {
            for (const w of sockets) w.terminate();
          };
          if (inflight === 0 && sockets.size === 0) return Promise.resolve();
          return new Promise<void>((done) => {
            const t = setTimeout(() => {
              server.closeAllConnections();
              wsGone();
              clearInterval(poll);
              done();
            }, deadlineMs);
            const poll = setInterval(() => {
              if (inflight !== 0 || sockets.size !== 0) return;
              clearInterval(poll);
              clearTimeout(t);
              done();
            }, 20);
            idle = () => {
              server.closeIdleConnections();
            };
          });
        },
      });
    });
  });
}

/** Our answer to a fault node:http reports before a request is complete; null: just close (the client is gone). */
function clientErrorOf(err: NodeJS.ErrnoException & { rawPacket?: Buffer }): EdgeError | null {
  switch (err.code) {
    case 'ECONNRESET':
    case 'EPIPE':
    case 'ERR_STREAM_WRITE_AFTER_END':
      return null;
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new EdgeError('request_timeout', 'the request was not received in time');
    case 'HPE_HEADER_OVERFLOW':
      return requestLineTooLong(err.rawPacket)
        ? new EdgeError('uri_too_long', `the request line exceeds the limit of ${MAX_HEADER_BYTES} bytes`)
        : new EdgeError('headers_too_large', `the request headers exceed the limit of ${MAX_HEADER_BYTES} bytes`);
    default:
      return new EdgeError('invalid_request', 'malformed HTTP request');
  }
}

/**
 * Whether the header overflow happened in the request line. node gives only the packet in
 * which the limit was passed: the test is that its first line is the end of a request line
 * (" HTTP/1.x"). A packet with no line end at all cannot tell, and counts as headers (431).
 */
function requestLineTooLong(packet: Buffer | undefined): boolean {
  if (packet === undefined) return false;
  const eol = packet.indexOf('\r\n');
  return eol !== -1 && / HTTP\/\d\.\d$/.test(packet.toString('latin1', Math.max(0, eol - 9), eol));
}

/**
 * The connection caps (total and per client address). A connection past them is answered
 * 503 `unavailable` with `Retry-After` and closed; returns the set of such connections.
 */
function capConnections(server: import('node:http').Server, limits: HttpLimits): WeakSet<Socket> {
  const refused = new WeakSet<Socket>();
  if (limits.maxConnections === 0 && limits.maxConnectionsPerIp === 0) return refused;
  let open = 0;
  const perIp = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const ip = socket.remoteAddress ?? '';
    const mine = perIp.get(ip) ?? 0;
    const overTotal = limits.maxConnections !== 0 && open >= limits.maxConnections;
    if (overTotal || (limits.maxConnectionsPerIp !== 0 && mine >= limits.maxConnectionsPerIp)) {
      refused.add(socket);
      const why = overTotal ? 'the server has too many open connections' : 'too many open connections from this address';
      socket.end(rawErrorResponse(new EdgeError('unavailable', `${why}, retry shortly`, { headers: { 'retry-after': '1' } })));
      // note: a client that never reads or closes cannot hold the refused connection.
      socket.setTimeout(1000, () => socket.destroy());
      return;
    }
    open++;
    perIp.set(ip, mine + 1);
    socket.once('close', () => {
      open--;
      const left = perIp.get(ip)! - 1;
      if (left === 0) perIp.delete(ip);
      else perIp.set(ip, left);
    });
  });
  return refused;
}

/** The in-process topics of the node backend: topic → its sockets (uWS has its own). */
class Topics {
  readonly #subs = new Map<string, Set<NodeSocket>>();

  add(topic: string, s: NodeSocket): void {
    let set = this.#subs.get(topic);
    if (set === undefined) this.#subs.set(topic, (set = new Set()));
    set.add(s);
    s.topics.add(topic);
  }

  remove(topic: string, s: NodeSocket): void {
    const set = this.#subs.get(topic);
    s.topics.delete(topic);
    if (set === undefined) return;
    set.delete(s);
    if (set.size === 0) this.#subs.delete(topic);
  }

  drop(s: NodeSocket): void {
    for (const t of [...s.topics]) this.remove(t, s);
  }

  /** Sends to every subscriber but `except`; the frame is encoded once for all. */
  publish(topic: string, data: string | Uint8Array, except: NodeSocket | null): void {
    const set = this.#subs.get(topic);
    if (set === undefined) return;
    const binary = typeof data !== 'string';
    const bytes = binary ? data : Buffer.from(data);
    for (const s of [...set]) if (s !== except) s.sendFrame(bytes, binary);
  }
}

/** One `ws` socket behind the socket-free WsSocket (src/edge/route.ts), with uWS's outbound cap. */
class NodeSocket implements WsSocket {
  closed = false;
  /** Whether a frame came since the last ping round. */
  alive = true;
  readonly topics = new Set<string>();
  readonly #ws: WebSocket;
  readonly #hub: Topics;
  readonly #cap: number;

  constructor(ws: WebSocket, hub: Topics, cap: number) {
    this.#ws = ws;
    this.#hub = hub;
    this.#cap = cap;
  }

  send(data: string | Uint8Array): WsSendStatus {
    return this.sendFrame(data, typeof data !== 'string');
  }

  sendFrame(data: string | Uint8Array, binary: boolean): WsSendStatus {
    if (this.closed) return 'dropped';
    // note: like uWS's closeOnBackpressureLimit: a client that takes less than we send is cut.
    if (this.#ws.bufferedAmount > this.#cap) {
      this.terminate();
      return 'dropped';
    }
    this.#ws.send(data, { binary });
    return this.#ws.bufferedAmount > 0 ? 'backpressure' : 'sent';
  }

  close(code = 1000, reason = ''): void {
    if (this.closed) return;
    this.closed = true;
    this.#ws.close(code, reason.slice(0, 123));
  }

  terminate(): void {
    this.closed = true;
    this.#ws.terminate();
  }

  ping(): void {
    if (!this.closed) this.#ws.ping();
  }

  subscribe(topic: string): void {
    if (!this.closed) this.#hub.add(topic, this);
  }

  unsubscribe(topic: string): void {
    this.#hub.remove(topic, this);
  }

  publish(topic: string, data: string | Uint8Array): void {
    if (!this.closed) this.#hub.publish(topic, data, this);
  }

  getBufferedAmount(): number {
    return this.closed ? 0 : this.#ws.bufferedAmount;
  }
}

/** One request; the abort signal is made only when a handler asks for it. */
class NodeRequest implements EdgeRequest {
  body: Buffer | null = null;
  bodyTooLarge = false;
  stream: AsyncIterable<Uint8Array> | null = null;
  upgrade = false;
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

  get aborted(): boolean {
    return this.#aborted;
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
