import type { Config } from '../../config.js';
import { EdgeError, invalidField } from '../../edge/errors.js';
import { json, noContent, route, type AuthContext, type HandlerRequest, type RouteDef, type SseChannel, type WsSocket } from '../../edge/route.js';
import type { RealtimeService } from './realtime.js';
import { checkChannel, parseStreamQuery } from './stream-query.js';
import type { StreamError, StreamQuery, Subscriber } from './types.js';

/** The subprotocol the server selects when a client offers subprotocols (docs/api.md "Realtime"). */
export const SUBPROTOCOL = 'platform-edge.v1';
const BROADCAST_MAX = 64 * 1024;
const STREAM_PARAMS = new Set(['table', 'channel', 'filter', 'or', 'select', 'since', 'apikey', 'access_token', 'project']);

interface StreamParams {
  table: string | null;
  channel: string | null;
  query: StreamQuery;
  since: number | null;
}

function streamParams(req: HandlerRequest): StreamParams {
  const q = req.query;
  for (const k of q.keys()) if (!STREAM_PARAMS.has(k)) throw new EdgeError('invalid_request', `unknown query parameter "${k}"`);
  const table = q.get('table');
  const channel = q.get('channel');
  if ((table === null || table === '') && (channel === null || channel === '')) throw new EdgeError('invalid_request', 'name a table (?table=), a channel (?channel=), or both');
  const query = parseStreamQuery(q);
  if ((table === null || table === '') && query.key !== '') throw new EdgeError('invalid_request', 'filter, or and select need a table');
  // note: an EventSource that reconnects sends Last-Event-ID (the last seq it got); it wins over the URL's ?since=.
  const last = req.headers['last-event-id'];
  let since: number | null = null;
  const raw = last !== undefined && last.trim() !== '' ? last.trim() : q.get('since');
  if (raw !== null && raw !== '') {
    if (!/^\d{1,15}$/.test(raw)) throw invalidField('since', 'must be a seq (a non-negative integer)');
    since = Number(raw);
  }
  return { table: table || null, channel: channel ? checkChannel(channel) : null, query, since };
}

const errorJson = (code: string, message: string): string => JSON.stringify({ type: 'error', code, message });

function sseSubscriber(rt: RealtimeService, ch: SseChannel, auth: AuthContext, ip: string, p: StreamParams): Subscriber {
  return {
    id: rt.nextId(),
    kind: 'sse',
    projectId: auth.projectId,
    ip,
    auth,
    table: p.table,
    query: p.query,
    channels: new Set(p.channel === null ? [] : [p.channel]),
    ws: null,
    deliver: (type, data, seq) => void ch.send(type, data, seq === undefined ? undefined : String(seq)),
    end: (err: StreamError | null) => {
      if (err !== null) ch.send('error', errorJson(err.code, err.message));
      ch.close();
    },
    get closed() {
      return ch.closed;
    },
  };
}

function wsSubscriber(rt: RealtimeService, ws: WsSocket, auth: AuthContext, ip: string, p: StreamParams): Subscriber {
  return {
    id: rt.nextId(),
    kind: 'ws',
    projectId: auth.projectId,
    ip,
    auth,
    table: p.table,
    query: p.query,
    channels: new Set(),
    ws,
    deliver: (_type, data) => void ws.send(data),
    end: (err: StreamError | null) => {
      if (err !== null) {
        ws.send(errorJson(err.code, err.message));
        ws.close(err.close, err.code);
      } else ws.close();
    },
    get closed() {
      return ws.closed;
    },
  };
}

/** A WebSocket client's message (docs/api.md "Realtime": ping, auth, join, leave, presence). */
function onMessage(rt: RealtimeService, sub: Subscriber, data: string | Buffer, binary: boolean): void {
  const ws = sub.ws!;
  const fail = (e: unknown): void => {
    if (e instanceof EdgeError) ws.send(errorJson(e.code, e.message));
    else ws.send(errorJson('internal', 'the message could not be handled'));
  };
  if (binary || typeof data !== 'string') return fail(new EdgeError('invalid_body', 'send text frames of JSON: {"type": …}'));
  let msg: Record<string, unknown>;
  try {
    const v: unknown = JSON.parse(data);
    if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error('not an object');
    msg = v as Record<string, unknown>;
  } catch {
    return fail(new EdgeError('invalid_body', 'a message is a JSON object {"type": …}'));
  }
  try {
    switch (msg.type) {
      case 'ping':
        ws.send(JSON.stringify({ type: 'pong', data: msg.data ?? null }));
        return;
      case 'auth':
        rt.reauth(sub, msg.access_token).then(
          (expires_at) => void ws.send(JSON.stringify({ type: 'auth', expires_at })),
          (e: unknown) => {
            fail(e);
            ws.close(4001, e instanceof EdgeError ? e.code : 'unauthorized');
          },
        );
        return;
      case 'join':
        ws.send(JSON.stringify({ type: 'joined', channel: rt.join(sub, msg.channel) }));
        return;
      case 'leave':
        ws.send(JSON.stringify({ type: 'left', channel: rt.leave(sub, msg.channel) }));
        return;
      case 'presence': {
        const channel = rt.join(sub, msg.channel);
        rt.track(sub.auth, { channel, state: msg.state }, sub);
        return;
      }
      default:
        throw new EdgeError('invalid_request', `unknown message type ${JSON.stringify(msg.type ?? null).slice(0, 40)}; use ping, auth, join, leave or presence`);
    }
  } catch (e) {
    fail(e);
  }
}

/** The subprotocols a client offered (`Sec-WebSocket-Protocol`), trimmed. */
const offered = (req: HandlerRequest): string[] =>
  (req.headers['sec-websocket-protocol'] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

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
        const p = streamParams(req);
        rt.check(ctx.project, ctx.auth.projectId, req.ip, p.table, p.query);
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
        const p = streamParams(req);
        if (p.channel !== null) throw new EdgeError('invalid_request', 'a WebSocket joins channels with {"type":"join","channel":…}; ?channel= is for SSE');
        rt.check(ctx.project, ctx.auth.projectId, req.ip, p.table, p.query);
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
