import type { Config } from '../../config.js';
import { EdgeError } from '../../core/errors.js';
import { json, noContent, route, type RouteDef } from '../../edge/route.js';
import type { RealtimeService } from './realtime.js';
import { offered, onMessage, sseSubscriber, streamParams, wsSubscriber } from './streams.js';
import type { Subscriber } from './types.js';

/** The subprotocol the server selects when a client offers subprotocols (docs/api.md "Realtime"). */
export const SUBPROTOCOL = 'platform-edge.v1';
const BROADCAST_MAX = 64 * 1024;

/** Realtime routes (docs/api.md "Realtime"): streams, broadcast, presence; scope realtime:subscribe. */
export function realtimeRoutes(rt: RealtimeService, config: Config): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/realtime/stream',
      auth: 'bearer?',
      scope: 'realtime:subscribe',
      // note: EventSource sends no headers: ?apikey= and ?access_token= (docs/api.md "Realtime").
      credentials: 'query',
      handler: (req, ctx) => {
        const p = streamParams(req, false);
        rt.check(ctx.project, ctx.auth.projectId, req.ip, p.table, p.query, ctx.auth);
        const auth = ctx.auth;
        return {
          status: 200,
          sse: (ch) => {
            const sub = sseSubscriber(rt, ch, auth, req.ip, p);
            rt.open(sub, p.since);
            const beat = setInterval(() => ch.comment('heartbeat'), config.realtimeHeartbeatMs);
            beat.unref();
            return () => {
              clearInterval(beat);
              rt.close(sub);
            };
          },
        };
      },
    }),
    route({
      method: 'GET',
      path: '/realtime/ws',
      auth: 'bearer?',
      scope: 'realtime:subscribe',
      credentials: 'query',
      websocket: true,
      handler: (req, ctx) => {
        const protocols = offered(req);
        if (protocols.length > 0 && !protocols.includes(SUBPROTOCOL)) {
          throw new EdgeError('invalid_request', `offer the subprotocol "${SUBPROTOCOL}" alongside key.<API_KEY> / bearer.<ACCESS_TOKEN>`);
        }
        const p = streamParams(req, true);
        if (p.channel !== null) throw new EdgeError('invalid_request', 'a WebSocket joins channels with {"type":"join","channel":…}; ?channel= is for SSE');
        rt.check(ctx.project, ctx.auth.projectId, req.ip, p.table, p.query, ctx.auth);
        const auth = ctx.auth;
        let sub: Subscriber | null = null;
        return {
          status: 101,
          protocol: protocols.length > 0 ? SUBPROTOCOL : undefined,
          ws: {
            open: (ws) => {
              sub = wsSubscriber(rt, ws, auth, req.ip, p);
              rt.open(sub, p.since);
            },
            message: (_ws, data, binary) => {
              if (sub !== null) onMessage(rt, sub, data, binary);
            },
            close: () => {
              if (sub !== null) rt.close(sub);
            },
          },
        };
      },
    }),
    route({
      method: 'POST',
      path: '/realtime/broadcast',
      auth: 'bearer?',
      scope: 'realtime:subscribe',
      body: 'json',
      maxBody: BROADCAST_MAX,
      handler: (req, ctx) => {
        const b = req.json as Record<string, unknown>;
        rt.broadcast(ctx.auth.projectId, b.channel, b.event, b.payload);
        return noContent();
      },
    }),
    route({
      method: 'POST',
      path: '/realtime/presence',
      auth: 'bearer?',
      scope: 'realtime:subscribe',
      body: 'json',
      handler: (req, ctx) => {
        const b = req.json as Record<string, unknown>;
        const m = rt.track(ctx.auth, { channel: b.channel, key: b.key, state: b.state, ttl_s: b.ttl_s }, null);
        return json({ channel: b.channel, key: m.key, state: m.state, expires_at: m.expires_at });
      },
    }),
    route({
      method: 'GET',
      path: '/realtime/presence',
      auth: 'bearer?',
      scope: 'realtime:subscribe',
      handler: (req, ctx) => json(rt.presence(ctx.auth.projectId, req.query.get('channel'))),
    }),
  ];
}
