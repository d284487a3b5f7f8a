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
      unlogged: true,
      handler: (_req, ctx) => {
        const projectId = ctx.auth.projectId;
        return {
          status: 200,
          sse: (ch) => {
            const snap = live.snapshot(projectId, Number.MAX_SAFE_INTEGER);
            ch.send('hello', JSON.stringify({ seq: snap.seq, stats: snap.stats, edge: snap.edge }));
            const off = live.subscribe(projectId, (e) => ch.send('log', JSON.stringify(e), String(e.seq)));
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
