import { invalidField } from '../../edge/errors.js';
import { json, route, type RouteDef } from '../../edge/route.js';
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

/** The live log (operator session or `auth:admin`) and the public traffic feed (no auth). */
export function liveRoutes(live: LiveLog, traffic: PublicTraffic): RouteDef[] {
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
