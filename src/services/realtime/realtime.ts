import { isoAt } from '../../clock.js';
import type { Config } from '../../config.js';
import type { BearerVerifier } from '../../edge/authenticate.js';
import { EdgeError, invalidField } from '../../core/errors.js';
import type { SseEvent, WsTopics } from '../../edge/route.js';
import type { AuthContext, UserClaims } from '../../core/auth-context.js';
import type { EventBus } from '../../events/bus.js';
import { changeStore } from '../../events/change-store.js';
import { readChanges, type LoggedChange } from '../../events/cursors.js';
import type { ProjectLease, ProjectRegistry } from '../../project/registry.js';
import { buildList, buildWhere } from '../db/list-query.js';
import type { DbService } from '../db/db.js';
import type { TableInfo } from '../../sql/table-model.js';
import { requirePrivilege, SELECT } from '../../sql/grants.js';
import { PresenceBoard } from './presence.js';
import { realtimeStore } from './store.js';
import { authKey, checkChannel, pickFields, selectPolicy } from './stream-query.js';
import type { PresenceMember, StreamError, StreamQuery, Subscriber } from './types.js';

const READ_BATCH = 500;
/**
 * Fan-out writes start at most once per FLUSH_MS: a change dispatched sooner after the last flush
 * waits for the next one with the others, so under load every stream gets one write (SSE: one
 * chunk; WebSocket: uWS sends a socket's queued topic messages in one go) for several changes
 * instead of one each, and its cost per change falls as the rate rises. An idle stream's change
 * goes out at once.
 */
const FLUSH_MS = 20;
/** The channel on which the server announces flag changes (docs/api.md "Broadcast"). */
export const FLAGS_CHANNEL = 'flags';
/** Channels only the server publishes on: a client's broadcast or presence there is 400. */
const RESERVED_CHANNELS: ReadonlySet<string> = new Set([FLAGS_CHANNEL]);

/** A channel a client may publish on (broadcast, presence); a server-published one is 400 `invalid_field`. */
function publishable(channel: unknown): string {
  const ch = checkChannel(channel);
  if (RESERVED_CHANNELS.has(ch)) throw invalidField('channel', `"${ch}" is reserved: only the server publishes on it`);
  return ch;
}
export const MAX_CHANNELS_PER_SOCKET = 100;

export const TOKEN_EXPIRED: StreamError = { code: 'token_expired', message: 'the access token expired; reconnect (SSE) or send {"type":"auth","access_token":…} before expiry (WebSocket)', close: 4001 };
const REVOKED: StreamError = { code: 'unauthorized', message: 'the session or API key was revoked', close: 4001 };
const SLOW: StreamError = { code: 'slow_consumer', message: 'the client read too slowly; resume with ?since=<last seq>', close: 4008 };

/**
 * One fan-out group: the streams of a project that watch the same table with the same filter
 * under the same auth context. Visibility is decided once per group and change (SQLite, on the
 * change's row images), and the message built once: SSE streams get it from a loop, WebSockets
 * from the backend's topic publish.
 */
interface Group {
  readonly key: string;
  readonly topic: string;
  readonly table: string;
  readonly query: StreamQuery;
  auth: AuthContext;
  readonly sse: Set<Subscriber>;
  readonly ws: Set<Subscriber>;
  /** The compiled WHERE for one TableInfo (a new one after DDL or an RLS change recompiles). */
  compiled: { t: TableInfo; sql: string | null; params: unknown[] } | null;
  /** Changes dispatched to the group and not yet written (the next flush sends them). */
  pending: SseEvent[];
}

interface Feed {
  /** The last change of the project's log dispatched to the groups. */
  last: number;
  readonly groups: Map<string, Group>;
  readonly byTable: Map<string, Set<Group>>;
  readonly subs: Set<Subscriber>;
  /** SSE streams by `?channel=` (delivered in a loop). */
  readonly sseChannels: Map<string, Set<Subscriber>>;
  /** WebSockets by joined channel (delivered by the topic; kept for the backpressure check). */
  readonly wsChannels: Map<string, Set<Subscriber>>;
  /** Groups with pending changes. */
  readonly dirty: Set<Group>;
}

/** The realtime service: table change streams (RLS and filters per subscriber), broadcast, presence. */
export class RealtimeService {
  readonly #config: Config;
  readonly #registry: ProjectRegistry;
  readonly #db: DbService;
  readonly #topics: WsTopics;
  readonly #verify: () => BearerVerifier | null;
  readonly #now: () => number;
  readonly #feeds = new Map<string, Feed>();
  readonly #perAddress = new Map<string, number>();
  readonly #expiry = new Map<Subscriber, NodeJS.Timeout>();
  readonly #subGroup = new Map<Subscriber, Group>();
  readonly #presence: PresenceBoard;
  /** Feeds with pending changes, the last flush (performance.now()) and the next one's timer. */
  readonly #dirty = new Set<Feed>();
  #lastFlush = 0;
  #flushTimer: NodeJS.Timeout | null = null;
  #nextId = 1;

  constructor(
    config: Config,
    registry: ProjectRegistry,
    db: DbService,
    bus: EventBus,
    topics: WsTopics,
    verify: () => BearerVerifier | null,
    now: () => number = Date.now,
  ) {
    this.#config = config;
    this.#registry = registry;
    this.#db = db;
    this.#topics = topics;
    this.#verify = verify;
    this.#now = now;
    this.#presence = new PresenceBoard(now, (projectId, channel, json) => this.#toChannel(projectId, channel, 'presence', json));
    bus.on('db.change', (e) => {
      const feed = this.#feeds.get(e.projectId);
      if (feed === undefined || feed.groups.size === 0 || e.seq <= feed.last) return;
      this.#withLease(e.projectId, (lease) => this.#pump(lease, feed));
      this.#scheduleFlush(feed);
    });
    bus.on('auth.session.revoked', (e) => this.#endWhere(e.projectId, (s) => s.auth.user?.sessionId === e.sessionId, REVOKED));
    bus.on('key.revoked', (e) => this.#endWhere(e.projectId, (s) => s.auth.keyId === e.keyId, REVOKED));
    // note: the project's `flags` channel announces which flag keys changed, never a value (a
    // subscriber calls evaluate, which applies the rollout for its own user).
    bus.on('flags.changed', (e) => {
      const payload = { keys: [e.key] };
      this.#toChannel(e.projectId, FLAGS_CHANNEL, 'broadcast', JSON.stringify({ type: 'broadcast', channel: FLAGS_CHANNEL, event: 'flags.changed', payload, at: e.at }));
    });
    bus.on('project.deleted', (e) => {
      this.#endWhere(e.projectId, () => true, REVOKED);
      this.#presence.forget(e.projectId);
    });
  }

  nextId(): number {
    return this.#nextId++;
  }

  // ------------------------------------------------------------------ subscribing

  /**
   * Checks a stream request before anything opens (400/404/429 as HTTP, before an upgrade):
   * the table exists and is readable as a table, the filter and select name its columns, the caps.
   */
  check(lease: ProjectLease, projectId: string, ip: string, table: string | null, query: StreamQuery, auth: AuthContext): void {
    if (table !== null) {
      const t = this.#db.table(lease, table);
      // note: a role without SELECT on the table is refused the stream, as the rows API refuses its list (docs/api.md "Realtime").
      requirePrivilege(t.grants, auth, t.def.name, SELECT);
      // note: the rows API's compiler checks every name and value now, so a bad filter is a 400 here.
      buildList(t, { filters: query.filters, or: query.or, select: query.select, order: [], limit: 1, offset: 0, count: false }, null);
    }
    const cap = this.#config.realtimeMaxPerProject;
    if (cap > 0 && (this.#feeds.get(projectId)?.subs.size ?? 0) >= cap) {
      throw new EdgeError('rate_limited', `this project has ${cap} open realtime streams, the most allowed`, { headers: { 'retry-after': '5' } });
    }
    const perIp = this.#config.realtimeMaxPerAddress;
    if (perIp > 0 && (this.#perAddress.get(ip) ?? 0) >= perIp) {
      throw new EdgeError('rate_limited', `this address has ${perIp} open realtime streams, the most allowed`, { headers: { 'retry-after': '5' } });
    }
  }

  /**
   * Opens a checked stream: `ready` first, then (with `since`) the changes after it still in the
   * log (a `gap` first when it no longer has them), then live changes; all in this one synchronous
   * turn, so none falls between the replay and the live feed, and none comes twice.
   */
  open(sub: Subscriber, since: number | null): void {
    const feed = this.#feed(sub.projectId);
    feed.subs.add(sub);
    this.#perAddress.set(sub.ip, (this.#perAddress.get(sub.ip) ?? 0) + 1);
    this.#armExpiry(sub);
    this.#withLease(sub.projectId, (lease) => {
      // note: with no group, nothing was dispatched: the feed starts at the newest change.
      if (feed.groups.size === 0) feed.last = changeStore.newest(lease);
      else this.#pump(lease, feed);
      // note: what the groups have pending is up to feed.last: written now, before this stream joins.
      this.#flushFeed(feed);
      const channel = sub.channels.size > 0 ? [...sub.channels][0] : undefined;
      sub.deliver('ready', JSON.stringify(channel === undefined ? { type: 'ready', table: sub.table, seq: feed.last } : { type: 'ready', table: sub.table, seq: feed.last, channel }));
      if (sub.table === null) return;
      const group = this.#join(feed, sub);
      if (since !== null && since < feed.last) this.#replay(lease, group, sub, since, feed.last);
    });
    for (const ch of sub.channels) this.#joinChannel(feed, sub, ch);
  }

  /** Forgets a closed stream (its presence entries leave). */
  close(sub: Subscriber): void {
    const feed = this.#feeds.get(sub.projectId);
    const t = this.#expiry.get(sub);
    if (t !== undefined) clearTimeout(t);
    this.#expiry.delete(sub);
    if (feed === undefined || !feed.subs.delete(sub)) return;
    const n = (this.#perAddress.get(sub.ip) ?? 1) - 1;
    if (n <= 0) this.#perAddress.delete(sub.ip);
    else this.#perAddress.set(sub.ip, n);
    this.#leaveGroup(feed, sub);
    for (const ch of sub.channels) this.#leaveChannel(feed, sub, ch);
    this.#presence.dropHeld(sub);
    if (feed.subs.size === 0) this.#feeds.delete(sub.projectId);
  }

  /** A WebSocket's `{type: "auth", access_token}`: a fresh token for the same user keeps the socket open. */
  async reauth(sub: Subscriber, token: unknown): Promise<string> {
    const verify = this.#verify();
    if (typeof token !== 'string' || !token.startsWith('lca_') || verify === null) throw new EdgeError('unauthorized', 'access_token must be an access token (lca_…)');
    const user: UserClaims = await verify(sub.projectId, token);
    const prev = sub.auth.user;
    if (prev === null || prev.id !== user.id) throw new EdgeError('unauthorized', 'the token must name the user the socket was opened for');
    if (sub.closed) return '';
    sub.auth = { ...sub.auth, user, role: sub.auth.role === 'service_role' ? 'service_role' : user.role };
    this.#armExpiry(sub);
    const feed = this.#feeds.get(sub.projectId);
    if (feed !== undefined && sub.table !== null && this.#subGroup.get(sub)?.key !== groupKey(sub)) {
      this.#flushFeed(feed);
      this.#leaveGroup(feed, sub);
      this.#join(feed, sub);
    }
    return expiresAt(user) ?? '';
  }

  #feed(projectId: string): Feed {
    let f = this.#feeds.get(projectId);
    if (f === undefined) this.#feeds.set(projectId, (f = { last: 0, groups: new Map(), byTable: new Map(), subs: new Set(), sseChannels: new Map(), wsChannels: new Map(), dirty: new Set() }));
    return f;
  }

  #join(feed: Feed, sub: Subscriber): Group {
    const key = groupKey(sub);
    let g = feed.groups.get(key);
    if (g === undefined) {
      g = { key, topic: `rt:${sub.projectId}:${feed.groups.size}:${this.#nextId++}`, table: sub.table!, query: sub.query, auth: sub.auth, sse: new Set(), ws: new Set(), compiled: null, pending: [] };
      feed.groups.set(key, g);
      let set = feed.byTable.get(g.table);
      if (set === undefined) feed.byTable.set(g.table, (set = new Set()));
      set.add(g);
    }
    if (sub.ws !== null) {
      g.ws.add(sub);
      sub.ws.subscribe(g.topic);
    } else g.sse.add(sub);
    this.#subGroup.set(sub, g);
    return g;
  }

  #leaveGroup(feed: Feed, sub: Subscriber): void {
    const g = this.#subGroup.get(sub);
    if (g === undefined) return;
    this.#subGroup.delete(sub);
    g.sse.delete(sub);
    if (g.ws.delete(sub)) sub.ws?.unsubscribe(g.topic);
    if (g.sse.size === 0 && g.ws.size === 0) {
      feed.groups.delete(g.key);
      const set = feed.byTable.get(g.table);
      set?.delete(g);
      if (set?.size === 0) feed.byTable.delete(g.table);
    }
  }

  #armExpiry(sub: Subscriber): void {
    const old = this.#expiry.get(sub);
    if (old !== undefined) clearTimeout(old);
    this.#expiry.delete(sub);
    const exp = sub.auth.user?.claims.exp;
    if (typeof exp !== 'number') return;
    const t = setTimeout(() => {
      this.#expiry.delete(sub);
      sub.end(TOKEN_EXPIRED);
    }, Math.max(0, exp * 1000 - this.#now()));
    t.unref();
    this.#expiry.set(sub, t);
  }

  #endWhere(projectId: string, pred: (s: Subscriber) => boolean, err: StreamError): void {
    const feed = this.#feeds.get(projectId);
    if (feed === undefined) return;
    for (const s of [...feed.subs]) if (pred(s)) s.end(err);
  }

  // ------------------------------------------------------------------ changes

  #withLease(projectId: string, fn: (lease: ProjectLease) => void): void {
    let lease: ProjectLease;
    try {
      lease = this.#registry.acquire(projectId);
    } catch {
      return; // note: the project was deleted meanwhile; its streams are ended by project.deleted.
    }
    try {
      fn(lease);
    } finally {
      lease.release();
    }
  }

  /** Dispatches every change of the log after the feed's last one to its groups, in seq order. */
  #pump(lease: ProjectLease, feed: Feed): void {
    for (;;) {
      const r = readChanges(lease, feed.last, READ_BATCH);
      if (r.gap) {
        feed.last = r.oldest_seq - 1;
        continue;
      }
      for (const c of r.changes) {
        this.#dispatch(lease, feed, c);
        feed.last = c.seq;
      }
      if (r.changes.length < READ_BATCH) return;
    }
  }

  #dispatch(lease: ProjectLease, feed: Feed, c: LoggedChange): void {
    const groups = feed.byTable.get(c.table);
    if (groups === undefined) return;
    const t = this.#tableOf(lease, c.table);
    if (t === null) return;
    for (const g of groups) {
      const msg = this.#message(lease, g, t, c);
      if (msg === null) continue;
      g.pending.push({ event: 'change', data: msg, id: String(c.seq) });
      feed.dirty.add(g);
    }
  }

  /** Flushes now when the last flush is FLUSH_MS old, else once it is (see FLUSH_MS). */
  #scheduleFlush(feed: Feed): void {
    if (feed.dirty.size === 0) return;
    this.#dirty.add(feed);
    if (this.#flushTimer !== null) return;
    const wait = this.#lastFlush + FLUSH_MS - performance.now();
    if (wait <= 0) return this.#flushAll();
    this.#flushTimer = setTimeout(() => {
      this.#flushTimer = null;
      this.#flushAll();
    }, wait);
    this.#flushTimer.unref();
  }

  #flushAll(): void {
    this.#lastFlush = performance.now();
    const feeds = [...this.#dirty];
    this.#dirty.clear();
    for (const f of feeds) this.#flushFeed(f);
  }

  /**
   * Writes each group's pending changes: one write per SSE stream (the same array to each, so it is
   * formatted once), and each message once to the group's topic for its WebSockets.
   */
  #flushFeed(feed: Feed): void {
    if (feed.dirty.size === 0) return;
    const groups = [...feed.dirty];
    feed.dirty.clear();
    for (const g of groups) {
      const batch = g.pending;
      if (batch.length === 0) continue;
      g.pending = [];
      for (const s of g.sse) s.deliverBatch(batch);
      if (g.ws.size > 0) {
        for (const e of batch) this.#topics.publish(g.topic, e.data);
        this.#checkBackpressure(g);
      }
    }
  }

  /** The changes after `since` up to `through` for one new stream, with the group's visibility. */
  #replay(lease: ProjectLease, g: Group, sub: Subscriber, since: number, through: number): void {
    try {
      this.#replayBatches(lease, g, sub, since, through);
    } finally {
      if (sub.ws !== null) this.#checkOne(sub);
    }
  }

  #replayBatches(lease: ProjectLease, g: Group, sub: Subscriber, since: number, through: number): void {
    let after = since;
    const t = this.#tableOf(lease, g.table);
    while (!sub.closed && after < through) {
      const r = readChanges(lease, after, READ_BATCH);
      if (r.gap) {
        sub.deliver('gap', JSON.stringify({ type: 'gap', since: r.since, oldest_seq: r.oldest_seq }));
        after = r.oldest_seq - 1;
        continue;
      }
      if (r.changes.length === 0) return;
      for (const c of r.changes) {
        if (c.seq > through) return;
        after = c.seq;
        if (c.table !== g.table || t === null) continue;
        const msg = this.#message(lease, g, t, c);
        if (msg !== null) sub.deliver('change', msg, c.seq);
      }
      // note: a long replay to a client that does not keep up ends with 4008 (it resumes from its last seq).
      if (sub.ws !== null) this.#checkOne(sub);
    }
  }

  #tableOf(lease: ProjectLease, name: string): TableInfo | null {
    try {
      return this.#db.table(lease, name);
    } catch {
      return null; // note: dropped meanwhile: nothing to show.
    }
  }

  /**
   * The change as this group sees it, or null when it sees nothing: visibility (filter and select
   * policy) of the new row and, for updates and deletes, of the old row; an update that moves a
   * row into view is an insert, out of view a delete (docs/api.md "Realtime").
   */
  #message(lease: ProjectLease, g: Group, t: TableInfo, c: LoggedChange): string | null {
    const ev = this.#evaluator(lease, g, t);
    const sees = (image: string | null): boolean => (ev === null ? true : image !== null && ev(image));
    const newVis = c.op !== 'delete' && sees(c.newRow);
    const oldVis = c.op !== 'insert' && sees(c.oldRow);
    let op: 'insert' | 'update' | 'delete';
    if (c.op === 'insert') {
      if (!newVis) return null;
      op = 'insert';
    } else if (c.op === 'delete') {
      if (!oldVis) return null;
      op = 'delete';
    } else if (newVis && oldVis) op = 'update';
    else if (newVis) op = 'insert';
    else if (oldVis) op = 'delete';
    else return null;
    const data = op === 'delete' ? null : pickFields(t, g.query.select, c.data);
    const old = op === 'insert' ? null : pickFields(t, g.query.select, c.old);
    return JSON.stringify({ type: 'change', op, table: c.table, id: c.id, data, old, seq: c.seq, at: c.at });
  }

  /** The group's visibility test for this table version; null when everything is visible. */
  #evaluator(lease: ProjectLease, g: Group, t: TableInfo): ((image: string) => boolean) | null {
    let c = g.compiled;
    if (c === null || c.t !== t) {
      let where: string[];
      let params: unknown[];
      try {
        ({ where, params } = buildWhere(t, g.query, selectPolicy(t, g.auth)));
      } catch {
        // note: the filter no longer compiles (a column dropped since): it matches nothing.
        where = ['0'];
        params = [];
      }
      c = g.compiled = { t, sql: where.length ? realtimeStore.visibilitySql(t, where) : null, params };
    }
    const { sql, params } = c;
    if (sql === null) return null;
    return (image) => realtimeStore.visible(lease, sql, image, params);
  }

  #checkBackpressure(g: Group): void {
    for (const s of [...g.ws]) this.#checkOne(s);
  }

  /**
   * A WebSocket past half the outbound cap is closed with 4008 (the close frame queues behind
   * what it has not read yet), before the backend would cut it at the cap without a code.
   */
  #checkOne(s: Subscriber): void {
    if (s.ws !== null && s.ws.getBufferedAmount() > this.#config.wsMaxBackpressure / 2) s.end(SLOW);
  }

  // ------------------------------------------------------------------ broadcast and presence

  #joinChannel(feed: Feed, sub: Subscriber, channel: string): void {
    sub.ws?.subscribe(channelTopic(sub.projectId, channel));
    const map = sub.ws !== null ? feed.wsChannels : feed.sseChannels;
    let set = map.get(channel);
    if (set === undefined) map.set(channel, (set = new Set()));
    set.add(sub);
  }

  #leaveChannel(feed: Feed, sub: Subscriber, channel: string): void {
    sub.ws?.unsubscribe(channelTopic(sub.projectId, channel));
    const map = sub.ws !== null ? feed.wsChannels : feed.sseChannels;
    const set = map.get(channel);
    set?.delete(sub);
    if (set?.size === 0) map.delete(channel);
  }

  /** A WebSocket's `{type: "join", channel}`. */
  join(sub: Subscriber, channel: unknown): string {
    const ch = checkChannel(channel);
    if (!sub.channels.has(ch)) {
      if (sub.channels.size >= MAX_CHANNELS_PER_SOCKET) throw new EdgeError('invalid_request', `a socket joins at most ${MAX_CHANNELS_PER_SOCKET} channels`);
      sub.channels.add(ch);
      const feed = this.#feeds.get(sub.projectId);
      if (feed !== undefined) this.#joinChannel(feed, sub, ch);
    }
    return ch;
  }

  /** A WebSocket's `{type: "leave", channel}` (its presence entry there leaves too). */
  leave(sub: Subscriber, channel: unknown): string {
    const ch = checkChannel(channel);
    const feed = this.#feeds.get(sub.projectId);
    if (sub.channels.delete(ch) && feed !== undefined) this.#leaveChannel(feed, sub, ch);
    this.#presence.dropHeld(sub, ch);
    return ch;
  }

  /** `POST /realtime/broadcast`: to every socket that joined the channel and every SSE stream opened on it. */
  broadcast(projectId: string, channel: unknown, event: unknown, payload: unknown): void {
    const ch = publishable(channel);
    if (typeof event !== 'string' || event.length < 1 || event.length > 64) throw invalidField('event', 'must be a string of 1-64 characters');
    this.#toChannel(projectId, ch, 'broadcast', JSON.stringify({ type: 'broadcast', channel: ch, event, payload: payload ?? null, at: isoAt(this.#now()) }));
  }

  #toChannel(projectId: string, channel: string, type: string, json: string): void {
    const feed = this.#feeds.get(projectId);
    if (feed === undefined) return;
    // note: changes dispatched before this message and waiting for the next flush go first, so a
    // broadcast or presence message never overtakes a change committed before it.
    this.#flushFeed(feed);
    const sockets = feed.wsChannels.get(channel);
    if (sockets !== undefined) {
      this.#topics.publish(channelTopic(projectId, channel), json);
      for (const s of [...sockets]) this.#checkOne(s);
    }
    const subs = feed.sseChannels.get(channel);
    if (subs !== undefined) for (const s of [...subs]) s.deliver(type, json);
  }

  /** A channel a client may publish on (broadcast, presence); `flags` and other server channels are 400. */
  publishable(channel: unknown): string {
    return publishable(channel);
  }

  /** `POST /realtime/presence` and a WebSocket's `{type: "presence"}` (docs/api.md "Realtime"). */
  track(auth: AuthContext, body: { channel: unknown; key?: unknown; state?: unknown; ttl_s?: unknown }, holder: Subscriber | null): PresenceMember {
    publishable(body.channel);
    return this.#presence.track(auth, body, holder);
  }

  presence(projectId: string, channel: unknown): { channel: string; members: PresenceMember[] } {
    return this.#presence.list(projectId, channel);
  }

  stop(): void {
    this.#presence.stop();
    if (this.#flushTimer !== null) clearTimeout(this.#flushTimer);
    this.#flushTimer = null;
    for (const t of this.#expiry.values()) clearTimeout(t);
    this.#expiry.clear();
  }
}

// ------------------------------------------------------------------ helpers

const channelTopic = (projectId: string, channel: string): string => `rtc:${projectId}:${channel}`;

const groupKey = (sub: Subscriber): string => `${sub.table}\n${sub.query.key}\n${authKey(sub.auth)}`;

const expiresAt = (u: UserClaims): string | null => (typeof u.claims.exp === 'number' ? isoAt(u.claims.exp * 1000) : null);
