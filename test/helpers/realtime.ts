import { rmSync } from 'node:fs';
import { EventSource } from 'eventsource';
import WebSocket from 'ws';
import { loadConfig, type ConfigOverrides } from '../../src/config.js';
import { createServer } from '../../src/server.js';
import type { TestServer } from './server.js';

/** One message a realtime stream delivered: the SSE event name (or the WS frame's `type`), the parsed data, the SSE id. */
export interface RtMessage {
  event: string;
  data: Record<string, unknown>;
  id?: string;
}

export interface RtClient {
  readonly received: RtMessage[];
  /** The next message not yet taken matching `pred`; rejects after `timeoutMs`. */
  next(pred?: (m: RtMessage) => boolean, timeoutMs?: number): Promise<RtMessage>;
  /** Resolves once no message arrived for `quietMs` (then asserts nothing else came). */
  quiet(quietMs?: number): Promise<RtMessage[]>;
  close(): void;
}

function queue(): { push(m: RtMessage): void; client: Omit<RtClient, 'close'>; end(why?: string): void } {
  const received: RtMessage[] = [];
  let taken = new Set<RtMessage>();
  const waiters = new Set<() => void>();
  let ended = false;
  let endedWhy = '';
  const wake = (): void => {
    for (const w of [...waiters]) w();
  };
  return {
    push(m) {
      received.push(m);
      wake();
    },
    end(why) {
      ended = true;
      endedWhy = why ? ` (${why})` : '';
      wake();
    },
    client: {
      received,
      async next(pred = () => true, timeoutMs = 5000) {
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          const hit = received.find((m) => !taken.has(m) && pred(m));
          if (hit) {
            taken.add(hit);
            return hit;
          }
          if (ended) throw new Error(`stream ended${endedWhy}; got ${JSON.stringify(received.map((m) => m.data))}`);
          const left = deadline - Date.now();
          if (left <= 0) throw new Error(`timed out; got ${JSON.stringify(received.map((m) => m.data))}`);
          await new Promise<void>((resolve) => {
            const t = setTimeout(done, left);
            function done(): void {
              clearTimeout(t);
              waiters.delete(done);
              resolve();
            }
            waiters.add(done);
          });
        }
      },
      async quiet(quietMs = 300) {
        await new Promise((r) => setTimeout(r, quietMs));
        const rest = received.filter((m) => !taken.has(m));
        taken = new Set(received);
        return rest;
      },
    },
  };
}

/** A real `eventsource` (v4) client; it reconnects with Last-Event-ID as a browser does unless closed. */
export function openEventSource(url: string, headers: Record<string, string> = {}): RtClient & { es: EventSource; errors: number } {
  const q = queue();
  const es = new EventSource(url, {
    fetch: (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...headers } }),
  });
  const out = { ...q.client, es, errors: 0, close: () => es.close() };
  for (const event of ['ready', 'change', 'gap', 'error', 'broadcast', 'presence']) {
    es.addEventListener(event, (e: Event) => {
      const me = e as unknown as { data: unknown; lastEventId: string };
      // note: EventSource's own error events (connection lost) carry no data.
      if (event === 'error' && typeof me.data !== 'string') {
        out.errors++;
        return;
      }
      q.push({ event, data: JSON.parse(me.data as string) as Record<string, unknown>, id: me.lastEventId || undefined });
    });
  }
  return out;
}

/** A real `ws` client on a realtime socket; every text frame is parsed as JSON. */
export function openRtSocket(
  url: string,
  opts: { headers?: Record<string, string>; protocols?: string[] } = {},
): Promise<RtClient & { ws: WebSocket; send(v: unknown): void; closed: Promise<{ code: number; reason: string }> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, opts.protocols ?? [], { headers: opts.headers });
    const q = queue();
    let closeResolve: (v: { code: number; reason: string }) => void = () => {};
    const closed = new Promise<{ code: number; reason: string }>((r) => (closeResolve = r));
    ws.on('message', (data: Buffer) => {
      const d = JSON.parse(data.toString('utf8')) as Record<string, unknown>;
      q.push({ event: String(d.type), data: d });
    });
    // note: an error after the open (a bad frame, a reset connection) ends in close 1006; its
    // message goes with the "stream ended" error, which would otherwise say only 1006.
    let failure = '';
    ws.on('close', (code, reason) => {
      q.end(`close ${code} ${reason.toString('utf8')}${failure}`);
      closeResolve({ code, reason: reason.toString('utf8') });
    });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString('utf8')));
      res.on('end', () => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode, body })));
    });
    ws.on('error', (e) => {
      failure = `; error: ${e.message}`;
      reject(e);
    });
    ws.on('open', () => resolve({ ...q.client, ws, closed, send: (v) => ws.send(typeof v === 'string' ? v : JSON.stringify(v)), close: () => ws.close() }));
  });
}

/**
 * Stops the test server's process (keeping its data folder) and starts a new one on the same
 * folder: the project, its keys, users and change log are what the new one reads back.
 */
export async function restartTestServer(s: TestServer, overrides: ConfigOverrides = {}): Promise<TestServer> {
  await s.server.close();
  const config = loadConfig({ port: 0, host: '127.0.0.1', dataDir: s.dataDir, controlPollMs: 100, rateLimit: { enabled: false }, ...overrides }, process.env);
  const server = createServer(config);
  const { url, backend } = await server.listen();
  return {
    ...s,
    url,
    backend,
    server,
    req(path, init = {}) {
      const { key = s.keys.publishable, ...rest } = init;
      const headers = new Headers(rest.headers);
      if (key !== null && !headers.has('x-service-key')) headers.set('x-service-key', key);
      return fetch(url + path, { ...rest, headers });
    },
    async close() {
      await server.close();
      rmSync(s.dataDir, { recursive: true, force: true });
    },
  };
}
