import { invalidField } from '../../core/errors.js';
import { json, route, type RouteDef, type WsSocket, type WsTopics } from '../../edge/route.js';
import type { LiveLog } from './live.js';
import type { PublicTraffic } from './traffic.js';

const STATS_INTERVAL_MS = 2000;

function sinceParam(q: URLSearchParams): number {
  const raw = q.get('since');
  if (raw === null || raw === '') return 0;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw invalidField('since', 'must be a non-negative integer');
  return n;
}

/** The seq a reconnecting SSE client last received; null when absent or not a seq (then nothing is replayed). */
function lastEventId(raw: string | undefined): number | null {
  if (raw === undefined || !/^\d{1,15}$/.test(raw.trim())) return null;
  return Number(raw.trim());
}

/** A `/live/ws` client may send `{"type":"ping","data":…}` and gets `{"type":"pong","data":…}` back. */
function wsMessage(ws: WsSocket, data: string | Buffer): void {
  let msg: unknown;
  try {
    msg = typeof data === 'string' ? JSON.parse(data) : undefined;
  } catch {
    msg = undefined;
  }
  if (typeof msg === 'object' && msg !== null && (msg as { type?: unknown }).type === 'ping') {
    ws.send(JSON.stringify({ type: 'pong', data: (msg as { data?: unknown }).data ?? null }));
    return;
  }
  ws.send(JSON.stringify({ type: 'error', error: { code: 'invalid_request', message: 'expected a text frame {"type":"ping","data":…}' } }));
}

/**
 * One feed per project for its `/live/ws` clients: a single live-log listener and stats timer
 * publish each frame once to the topic `live:<project>`, which the backend fans out.
 */
class LiveFeeds {
  readonly #feeds = new Map<string, { count: number; stop: () => void }>();

  constructor(
    readonly live: LiveLog,
    readonly topics: WsTopics,
  ) {}

  join(projectId: string): () => void {
    let feed = this.#feeds.get(projectId);
    if (feed === undefined) {
      const topic = `live:${projectId}`;
      const off = this.live.subscribe(projectId, (e) => this.topics.publish(topic, JSON.stringify({ type: 'log', event: e })));
      const timer = setInterval(
        () => this.topics.publish(topic, JSON.stringify({ type: 'stats', stats: this.live.stats(projectId), edge: this.live.edge() })),
        STATS_INTERVAL_MS,
      );
      feed = {
        count: 0,
        stop: () => {
          off();
          clearInterval(timer);
        },
      };
      this.#feeds.set(projectId, feed);
    }
    feed.count++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      if (--feed.count === 0) {
        feed.stop();
        this.#feeds.delete(projectId);
      }
    };
  }
}

/** The live log (operator session or `auth:admin`) and the public traffic feed (no auth). */
export function liveRoutes(live: LiveLog, traffic: PublicTraffic, topics: WsTopics): RouteDef[] {
  const feeds = new LiveFeeds(live, topics);
  return [
    route({
      method: 'GET',
      path: '/live',
      auth: 'key',
      scope: 'auth:admin',
      unlogged: true,
      handler: (req, ctx) => json(live.snapshot(ctx.auth.projectId, sinceParam(req.query))),
    }),
    route({
      method: 'GET',
      path: '/live/stream',
      auth: 'key',
      scope: 'auth:admin',
      // note: a browser's EventSource sends no headers: ?apikey=, or ?access_token=lcd_…&project= (docs/api.md "Live log").
      credentials: 'query',
      unlogged: true,
      handler: (req, ctx) => {
        const projectId = ctx.auth.projectId;
        const resumeAfter = lastEventId(req.headers['last-event-id']);
        return {
          status: 200,
          sse: (ch) => {
            const snap = live.snapshot(projectId, Number.MAX_SAFE_INTEGER);
            ch.send('hello', JSON.stringify({ seq: snap.seq, stats: snap.stats, edge: snap.edge }));
            // note: a reconnecting client (Last-Event-ID) first gets the events it missed that are
            // still kept, oldest first, then the live ones; all in this one synchronous turn, so
            // no event falls between the replay and the subscription.
            // A seq ahead of this project's (another server's, or a wiped log) replays nothing.
            let sent = resumeAfter !== null && resumeAfter < snap.seq ? resumeAfter : snap.seq;
            while (!ch.closed && sent < snap.seq) {
              const { events } = live.snapshot(projectId, sent);
              if (events.length === 0) break;
              for (const e of events) ch.send('log', JSON.stringify(e), String(e.seq));
              sent = events[events.length - 1]!.seq;
            }
            const off = live.subscribe(projectId, (e) => {
              if (e.seq > sent) ch.send('log', JSON.stringify(e), String(e.seq));
            });
            const timer = setInterval(
              () => ch.send('stats', JSON.stringify({ stats: live.stats(projectId), edge: live.edge() })),
              STATS_INTERVAL_MS,
            );
            return () => {
              off();
              clearInterval(timer);
            };
          },
        };
      },
    }),
    route({
      method: 'GET',
      path: '/live/ws',
      auth: 'key',
      scope: 'auth:admin',
      // note: a browser's WebSocket sends no headers either (docs/api.md "Live log").
      credentials: 'query',
      websocket: true,
      unlogged: true,
      handler: (req, ctx) => {
        const projectId = ctx.auth.projectId;
        const since = req.query.has('since') ? sinceParam(req.query) : null;
        let leave: (() => void) | null = null;
        return {
          status: 101,
          ws: {
            open: (ws) => {
              const snap = live.snapshot(projectId, Number.MAX_SAFE_INTEGER);
              ws.send(JSON.stringify({ type: 'hello', seq: snap.seq, stats: snap.stats, edge: snap.edge }));
              // note: like /live/stream's Last-Event-ID: the kept events after ?since= first, then the
              // live ones, all in this synchronous turn so none falls between replay and subscription.
              let sent = since !== null && since < snap.seq ? since : snap.seq;
              while (!ws.closed && sent < snap.seq) {
                const { events } = live.snapshot(projectId, sent);
                if (events.length === 0) break;
                for (const e of events) ws.send(JSON.stringify({ type: 'log', event: e }));
                sent = events[events.length - 1]!.seq;
              }
              ws.subscribe(`live:${projectId}`);
              leave = feeds.join(projectId);
            },
            message: wsMessage,
            close: () => leave?.(),
          },
        };
      },
    }),
    route({
      method: 'GET',
      path: '/public/traffic',
      auth: 'none',
      unlogged: true,
      handler: () => ({
        status: 200,
        sse: (ch) => traffic.subscribe((hit) => ch.send('hit', JSON.stringify(hit), String(hit.seq))),
      }),
    }),
    route({
      method: 'GET',
      path: '/public/traffic/recent',
      auth: 'none',
      unlogged: true,
      handler: (req) => json({ seq: traffic.seq, hits: traffic.since(sinceParam(req.query)) }),
    }),
  ];
}
