import http, { type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One request a receiver got. */
export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  /** The payload as the standardwebhooks package verified it (null when `verifyWith` was not given or it failed). */
  verified: unknown;
  /** Why verification failed, or null. */
  verifyError: string | null;
}

/** What the receiver does with its n-th request (0-based): answer, or take over the response. */
export type Behaviour = (n: number, r: Received, res: ServerResponse) => { status: number; headers?: Record<string, string>; body?: string } | 'handled';

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** The secrets a request is verified with (any one verifying is enough, as a receiver during a rotation). */
  secrets: string[];
  behaviour: Behaviour;
  /** Resolves once `n` requests arrived (rejects after `ms`). */
  waitFor(n: number, ms?: number): Promise<Received[]>;
  close(): Promise<void>;
}

/**
 * A local webhook target on 127.0.0.1 that verifies every request's signature with the
 * `standardwebhooks` package, exactly as a receiver would.
 */
export async function startReceiver(behaviour: Behaviour = () => ({ status: 204 })): Promise<Receiver> {
  const received: Received[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const sockets = new Set<import('node:net').Socket>();
  const rec: Receiver = {
    url: '',
    port: 0,
    received,
    secrets: [],
    behaviour,
    waitFor(n, ms = 5000) {
      if (received.length >= n) return Promise.resolve(received);
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`receiver: ${received.length} of ${n} requests after ${ms} ms`)), ms);
        waiters.push({ n, resolve: () => (clearTimeout(t), resolve(received)) });
      });
    },
    close() {
      for (const s of sockets) s.destroy();
      return new Promise((r) => server.close(() => r()));
    },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let verified: unknown = null;
      let verifyError: string | null = rec.secrets.length ? 'no secret verified' : null;
      for (const s of rec.secrets) {
        try {
          verified = new Webhook(s).verify(body, req.headers as Record<string, string>);
          verifyError = null;
          break;
        } catch (err) {
          verifyError = (err as Error).message;
        }
      }
      const r: Received = { headers: req.headers, body, verified, verifyError };
      const n = received.length;
      received.push(r);
      const out = rec.behaviour(n, r, res);
      if (out !== 'handled') {
        res.writeHead(out.status, out.headers);
        res.end(out.body);
      }
      for (const w of [...waiters]) {
        if (received.length >= w.n) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve();
        }
      }
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  rec.port = (server.address() as AddressInfo).port;
  rec.url = `http://127.0.0.1:${rec.port}/hook`;
  return rec;
}
