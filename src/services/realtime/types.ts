import type { SseEvent, WsSocket } from '../../edge/route.js';
import type { AuthContext } from '../../core/auth-context.js';
import type { Filter } from '../db/filters.js';

/** What a stream filters by: the rows API's `filter=`, `or=` and `select=` (parsed, not yet checked against a table). */
export interface StreamQuery {
  filters: Filter[];
  or: Filter[][];
  select: string[][] | null;
  /** The query's own text (filter, or, select), part of the fan-out group's key. */
  key: string;
}

/** An error a stream is ended with (SSE `event: error`, WebSocket `{type: "error"}` then a close code). */
export interface StreamError {
  code: string;
  message: string;
  /** The WebSocket close code. */
  close: number;
}

/**
 * One open stream (an SSE response or a WebSocket), as the service sees it: the transport
 * hides behind `deliver` and `end`.
 */
export interface Subscriber {
  readonly id: number;
  readonly kind: 'sse' | 'ws';
  readonly projectId: string;
  readonly ip: string;
  auth: AuthContext;
  readonly table: string | null;
  readonly query: StreamQuery;
  /** Channels this stream receives broadcast and presence of (SSE: its `?channel=`; WebSocket: joined). */
  readonly channels: Set<string>;
  /** The WebSocket, for topic subscriptions; null for SSE. */
  readonly ws: WsSocket | null;
  /** Sends one message (`type` is the SSE event name; `seq` its `id:`). */
  deliver(type: string, json: string, seq?: number): void;
  /** Sends several messages in one write (SSE; a fan-out hands every stream the same array). */
  deliverBatch(events: readonly SseEvent[]): void;
  /** Sends the error (if any) and closes. */
  end(err: StreamError | null): void;
  readonly closed: boolean;
}

/** A presence entry (docs/api.md "Realtime"). */
export interface PresenceMember {
  key: string;
  user_id: string | null;
  state: unknown;
  joined_at: string;
  /** Null while a WebSocket holds the entry (it leaves when the socket closes). */
  expires_at: string | null;
}
