// The transport side of realtime streams: query parameters, the SSE and WebSocket subscribers, and
// what a socket may send (docs/api.md "Realtime").
import { EdgeError, invalidField } from '../../core/errors.js';
import type { HandlerRequest, SseChannel, WsSocket } from '../../edge/route.js';
import type { AuthContext } from '../../core/auth-context.js';
import type { RealtimeService } from './realtime.js';
import { checkChannel, parseStreamQuery } from './stream-query.js';
import type { StreamError, StreamQuery, Subscriber } from './types.js';

const STREAM_PARAMS = new Set(['table', 'channel', 'filter', 'or', 'select', 'since', 'apikey', 'access_token', 'project']);

export interface StreamParams {
  table: string | null;
  channel: string | null;
  query: StreamQuery;
  since: number | null;
}

/** A stream's query; `socket`: a WebSocket, which may name no table (it joins channels by message). */
export function streamParams(req: HandlerRequest, socket: boolean): StreamParams {
  const q = req.query;
  for (const k of q.keys()) if (!STREAM_PARAMS.has(k)) throw new EdgeError('invalid_request', `unknown query parameter "${k}"`);
  const table = q.get('table');
  const channel = q.get('channel');
  if (!socket && (table === null || table === '') && (channel === null || channel === '')) throw new EdgeError('invalid_request', 'name a table (?table=), a channel (?channel=), or both');
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

export function sseSubscriber(rt: RealtimeService, ch: SseChannel, auth: AuthContext, ip: string, p: StreamParams): Subscriber {
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
    deliverBatch: (events) => void ch.sendBatch(events),
    end: (err: StreamError | null) => {
      if (err !== null) ch.send('error', errorJson(err.code, err.message));
      ch.close();
    },
    get closed() {
      return ch.closed;
    },
  };
}

export function wsSubscriber(rt: RealtimeService, ws: WsSocket, auth: AuthContext, ip: string, p: StreamParams): Subscriber {
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
    deliverBatch: (events) => {
      for (const e of events) ws.send(e.data);
    },
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
export function onMessage(rt: RealtimeService, sub: Subscriber, data: string | Buffer, binary: boolean): void {
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
        // note: a presence on a server channel is refused before the socket joins it.
        const channel = rt.join(sub, rt.publishable(msg.channel));
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
export const offered = (req: HandlerRequest): string[] =>
  (req.headers['sec-websocket-protocol'] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
