import WebSocket from 'ws';

/** One message a client received: text frames as a string, binary ones as a Buffer. */
export type WsMessage = string | Buffer;

export interface WsClient {
  ws: WebSocket;
  /** Every message received so far, in order (also those already taken by next()). */
  readonly received: WsMessage[];
  /** Resolves with the next message not yet taken that matches `pred`, or rejects after `timeoutMs`. */
  next(pred?: (m: WsMessage) => boolean, timeoutMs?: number): Promise<WsMessage>;
  /** next() parsed as JSON, matching on the parsed value. */
  nextJson<T = Record<string, unknown>>(pred?: (m: T) => boolean, timeoutMs?: number): Promise<T>;
  /** Resolves with the close code and reason once the socket closed, or rejects after `timeoutMs`. */
  closed(timeoutMs?: number): Promise<{ code: number; reason: string }>;
  close(): void;
}

/** What a refused upgrade answered: the HTTP status, headers and body (no socket was opened). */
export interface WsRefusal {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** Opens a WebSocket with headers; rejects with a WsRefusal when the server answers over HTTP instead. */
export function connectWs(url: string, headers: Record<string, string> = {}, options: WebSocket.ClientOptions = {}): Promise<WsClient> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers, ...options });
    const received: WsMessage[] = [];
    let taken = 0;
    const waiters = new Set<() => void>();
    let closeInfo: { code: number; reason: string } | null = null;
    const wake = (): void => {
      for (const w of [...waiters]) w();
    };
    ws.on('message', (data: Buffer, isBinary) => {
      received.push(isBinary ? data : data.toString('utf8'));
      wake();
    });
    ws.on('close', (code, reason) => {
      closeInfo = { code, reason: reason.toString('utf8') };
      wake();
    });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => reject(Object.assign(new Error(`upgrade refused: ${res.statusCode}`), { refusal: { status: res.statusCode ?? 0, headers: res.headers, body } satisfies WsRefusal })));
    });
    ws.on('error', (err) => {
      if (ws.readyState !== WebSocket.OPEN) reject(err);
    });
    const wait = <T>(check: () => T | undefined, timeoutMs: number, what: string): Promise<T> =>
      new Promise((res, rej) => {
        const tryNow = (): boolean => {
          let v: T | undefined;
          try {
            v = check();
          } catch (err) {
            waiters.delete(waiter);
            clearTimeout(timer);
            rej(err as Error);
            return true;
          }
          if (v === undefined) return false;
          waiters.delete(waiter);
          clearTimeout(timer);
          res(v);
          return true;
        };
        const waiter = (): void => void tryNow();
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          rej(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
        }, timeoutMs);
        waiters.add(waiter);
        tryNow();
      });
    const client: WsClient = {
      ws,
      received,
      next(pred = () => true, timeoutMs = 5000) {
        return wait(
          () => {
            for (let i = taken; i < received.length; i++) {
              if (pred(received[i]!)) {
                // note: messages skipped over stay skipped: next() reads forward, as a stream.
                taken = i + 1;
                return received[i]!;
              }
            }
            if (closeInfo !== null) throw new Error(`the socket closed (${closeInfo.code}) before a matching message`);
            return undefined;
          },
          timeoutMs,
          'a message',
        );
      },
      async nextJson<T>(pred: (m: T) => boolean = () => true, timeoutMs = 5000) {
        const m = await client.next((raw) => typeof raw === 'string' && pred(JSON.parse(raw) as T), timeoutMs);
        return JSON.parse(m as string) as T;
      },
      closed(timeoutMs = 5000) {
        return wait(() => closeInfo ?? undefined, timeoutMs, 'the close');
      },
      close() {
        ws.close();
      },
    };
    ws.once('open', () => resolve(client));
  });
}

/** The refusal of an upgrade that was answered over HTTP; throws when the socket opened instead. */
export async function refusedWs(url: string, headers: Record<string, string> = {}): Promise<WsRefusal> {
  try {
    const c = await connectWs(url, headers);
    c.ws.terminate();
  } catch (err) {
    const r = (err as { refusal?: WsRefusal }).refusal;
    if (r !== undefined) return r;
    throw err;
  }
  throw new Error('the WebSocket opened');
}
