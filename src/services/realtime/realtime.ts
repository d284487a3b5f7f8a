import { isoAt } from '../../clock.js';
import type { Config } from '../../config.js';
import type { BearerVerifier } from '../../edge/authenticate.js';
import { EdgeError, invalidField } from '../../edge/errors.js';
import type { AuthContext, UserClaims, WsTopics } from '../../edge/route.js';
import type { EventBus } from '../../events/bus.js';
import { changeStore } from '../../events/change-store.js';
import { readChanges, type LoggedChange } from '../../events/cursors.js';
import type { ProjectLease, ProjectRegistry } from '../../project/registry.js';
import { buildList, buildWhere } from '../../sql/list.js';
import { bindPolicy } from '../../sql/rls.js';
import type { DbService } from '../db/db.js';
import { parseListQuery } from '../db/filters.js';
import type { CompiledPolicy, TableInfo } from '../db/types.js';
import { realtimeStore } from './store.js';
import type { PresenceMember, StreamError, StreamQuery, Subscriber } from './types.js';

/** A missing select policy on an RLS-enabled table denies (as in the rows API). */
const DENY: CompiledPolicy = { sql: '(0)', params: [] };
const READ_BATCH = 500;
export const MAX_CHANNELS_PER_SOCKET = 100;
const CHANNEL = /^[A-Za-z0-9_.:-]{1,128}$/;
export const PRESENCE_STATE_MAX = 4096;

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
}

interface Presence {
  member: PresenceMember;
  /** When it lapses (ms); null while a socket holds it. */
  expMs: number | null;
  holder: Subscriber | null;
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
  readonly #presence = new Map<string, Map<string, Map<string, Presence>>>();
  #sweep: NodeJS.Timeout | null = null;
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
    bus.on('db.change', (e) => {
      const feed = this.#feeds.get(e.projectId);
      if (feed !== undefined && feed.groups.size > 0 && e.seq > feed.last) this.#withLease(e.projectId, (lease) => this.#pump(lease, feed));
    });
    bus.on('auth.session.revoked', (e) => this.#endWhere(e.projectId, (s) => s.auth.user?.sessionId === e.sessionId, REVOKED));
    bus.on('key.revoked', (e) => this.#endWhere(e.projectId, (s) => s.auth.keyId === e.keyId, REVOKED));
    bus.on('project.deleted', (e) => {
      this.#endWhere(e.projectId, () => true, REVOKED);
      this.#presence.delete(e.projectId);
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
  check(lease: ProjectLease, projectId: string, ip: string, table: string | null, query: StreamQuery): void {
    if (table !== null) {
      const t = this.#db.table(lease, table);
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
    this.#dropHeldPresence(sub);
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
      this.#leaveGroup(feed, sub);
      this.#join(feed, sub);
    }
    return expiresAt(user) ?? '';
  }

  #feed(projectId: string): Feed {
    let f = this.#feeds.get(projectId);
    if (f === undefined) this.#feeds.set(projectId, (f = { last: 0, groups: new Map(), byTable: new Map(), subs: new Set(), sseChannels: new Map(), wsChannels: new Map() }));
    return f;
  }

  #join(feed: Feed, sub: Subscriber): Group {
    const key = groupKey(sub);
    let g = feed.groups.get(key);
    if (g === undefined) {
      g = { key, topic: `rt:${sub.projectId}:${feed.groups.size}:${this.#nextId++}`, table: sub.table!, query: sub.query, auth: sub.auth, sse: new Set(), ws: new Set(), compiled: null };
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
      for (const s of g.sse) s.deliver('change', msg, c.seq);
      if (g.ws.size > 0) {
        this.#topics.publish(g.topic, msg);
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
    const data = op === 'delete' ? null : project(t, g.query.select, c.data);
    const old = op === 'insert' ? null : project(t, g.query.select, c.old);
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
    this.#dropHeldPresence(sub, ch);
    return ch;
  }

  /** `POST /realtime/broadcast`: to every socket that joined the channel and every SSE stream opened on it. */
  broadcast(projectId: string, channel: unknown, event: unknown, payload: unknown): void {
    const ch = checkChannel(channel);
    if (typeof event !== 'string' || event.length < 1 || event.length > 64) throw invalidField('event', 'must be a string of 1-64 characters');
    this.#toChannel(projectId, ch, 'broadcast', JSON.stringify({ type: 'broadcast', channel: ch, event, payload: payload ?? null, at: isoAt(this.#now()) }));
  }

  #toChannel(projectId: string, channel: string, type: string, json: string): void {
    const feed = this.#feeds.get(projectId);
    if (feed === undefined) return;
    const sockets = feed.wsChannels.get(channel);
    if (sockets !== undefined) {
      this.#topics.publish(channelTopic(projectId, channel), json);
      for (const s of [...sockets]) this.#checkOne(s);
    }
    const subs = feed.sseChannels.get(channel);
    if (subs !== undefined) for (const s of [...subs]) s.deliver(type, json);
  }

  /** `POST /realtime/presence` and a WebSocket's `{type: "presence"}`: sets (or refreshes) one entry. */
  track(auth: AuthContext, body: { channel: unknown; key?: unknown; state?: unknown; ttl_s?: unknown }, holder: Subscriber | null): PresenceMember {
    const channel = checkChannel(body.channel);
    const userId = auth.user?.id ?? null;
    let key: string;
    if (body.key === undefined || body.key === null) {
      if (holder !== null && userId === null) key = `socket:${holder.id}`;
      else if (userId === null) throw invalidField('key', 'is required without a signed-in user');
      else key = userId;
    } else if (typeof body.key !== 'string' || body.key.length < 1 || body.key.length > 128) throw invalidField('key', 'must be a string of 1-128 characters');
    else key = body.key;
    const state = body.state ?? {};
    if (JSON.stringify(state).length > PRESENCE_STATE_MAX) throw invalidField('state', `must be at most ${PRESENCE_STATE_MAX} bytes of JSON`);
    let ttl = 60;
    if (holder === null && body.ttl_s !== undefined) {
      if (typeof body.ttl_s !== 'number' || !Number.isInteger(body.ttl_s) || body.ttl_s < 10 || body.ttl_s > 3600) throw invalidField('ttl_s', 'must be an integer of 10-3600');
      ttl = body.ttl_s;
    }
    const members = this.#members(auth.projectId, channel, true)!;
    const prev = members.get(key);
    if (prev !== undefined && prev.member.user_id !== userId && auth.role !== 'service_role') {
      throw new EdgeError('forbidden', `presence key "${key}" belongs to another user`);
    }
    const now = this.#now();
    const expMs = holder === null ? now + ttl * 1000 : null;
    const member: PresenceMember = { key, user_id: userId, state, joined_at: prev?.member.joined_at ?? isoAt(now), expires_at: expMs === null ? null : isoAt(expMs) };
    members.set(key, { member, expMs, holder });
    this.#presenceDiff(auth.projectId, channel, [member], []);
    if (expMs !== null) this.#sweep ??= setInterval(() => this.#sweepPresence(), 1000).unref();
    return member;
  }

  presence(projectId: string, channel: unknown): { channel: string; members: PresenceMember[] } {
    const ch = checkChannel(channel);
    this.#sweepPresence();
    const members = [...(this.#members(projectId, ch, false)?.values() ?? [])].map((p) => p.member);
    members.sort((a, b) => (a.joined_at < b.joined_at ? -1 : a.joined_at > b.joined_at ? 1 : a.key < b.key ? -1 : 1));
    return { channel: ch, members };
  }

  #members(projectId: string, channel: string, make: boolean): Map<string, Presence> | undefined {
    let byChannel = this.#presence.get(projectId);
    if (byChannel === undefined) {
      if (!make) return undefined;
      this.#presence.set(projectId, (byChannel = new Map()));
    }
    let m = byChannel.get(channel);
    if (m === undefined && make) byChannel.set(channel, (m = new Map()));
    return m;
  }

  #presenceDiff(projectId: string, channel: string, joins: PresenceMember[], leaves: PresenceMember[]): void {
    this.#toChannel(projectId, channel, 'presence', JSON.stringify({ type: 'presence', channel, joins, leaves }));
  }

  #dropHeldPresence(sub: Subscriber, only?: string): void {
    const byChannel = this.#presence.get(sub.projectId);
    if (byChannel === undefined) return;
    for (const [channel, members] of byChannel) {
      if (only !== undefined && channel !== only) continue;
      const gone: PresenceMember[] = [];
      for (const [k, p] of members) {
        if (p.holder === sub) {
          members.delete(k);
          gone.push(p.member);
        }
      }
      if (members.size === 0) byChannel.delete(channel);
      if (gone.length) this.#presenceDiff(sub.projectId, channel, [], gone);
    }
    if (byChannel.size === 0) this.#presence.delete(sub.projectId);
  }

  #sweepPresence(): void {
    const now = this.#now();
    let timed = 0;
    for (const [projectId, byChannel] of this.#presence) {
      for (const [channel, members] of byChannel) {
        const gone: PresenceMember[] = [];
        for (const [k, p] of members) {
          if (p.expMs === null) continue;
          if (p.expMs <= now) {
            members.delete(k);
            gone.push(p.member);
          } else timed++;
        }
        if (members.size === 0) byChannel.delete(channel);
        if (gone.length) this.#presenceDiff(projectId, channel, [], gone);
      }
      if (byChannel.size === 0) this.#presence.delete(projectId);
    }
    if (timed === 0 && this.#sweep !== null) {
      clearInterval(this.#sweep);
      this.#sweep = null;
    }
  }

  stop(): void {
    if (this.#sweep !== null) clearInterval(this.#sweep);
    for (const t of this.#expiry.values()) clearTimeout(t);
    this.#expiry.clear();
  }
}

// ------------------------------------------------------------------ helpers

/** Parses `filter=`, `or=`, `select=` with the rows API's parser (other names are the caller's to check). */
export function parseStreamQuery(q: URLSearchParams): StreamQuery {
  const sub = new URLSearchParams();
  const parts: string[] = [];
  for (const name of ['filter', 'or', 'select'] as const) {
    for (const v of q.getAll(name)) {
      sub.append(name, v);
      parts.push(`${name}=${v}`);
    }
  }
  const lq = parseListQuery(sub);
  return { filters: lq.filters, or: lq.or, select: lq.select, key: parts.join('&') };
}

export function checkChannel(channel: unknown): string {
  if (typeof channel !== 'string' || !CHANNEL.test(channel)) throw invalidField('channel', 'must be 1-128 letters, digits, "_", ".", ":" or "-"');
  return channel;
}

const channelTopic = (projectId: string, channel: string): string => `rtc:${projectId}:${channel}`;

/** The select policy of a caller, bound; null when RLS does not apply (as the rows API decides). */
function selectPolicy(t: TableInfo, auth: AuthContext): { p: CompiledPolicy; values: unknown[] } | null {
  if (!t.rls.enabled || auth.role === 'service_role') return null;
  const p = t.rls.compiled.select ?? DENY;
  return { p, values: p.params.length ? bindPolicy(p.params, auth) : [] };
}

/** What decides visibility besides the filter: the role and user, and their claims but the token's own. */
function authKey(a: AuthContext): string {
  if (a.role === 'service_role') return 'service';
  const u = a.user;
  if (u === null) return `anon:${a.role}`;
  const { exp: _exp, iat: _iat, jti: _jti, nbf: _nbf, ...rest } = u.claims;
  return JSON.stringify([a.role, u.id, u.aal, rest]);
}

const groupKey = (sub: Subscriber): string => `${sub.table}\n${sub.query.key}\n${authKey(sub.auth)}`;

const expiresAt = (u: UserClaims): string | null => (typeof u.claims.exp === 'number' ? isoAt(u.claims.exp * 1000) : null);

/** `select=` applied to a change's `data`/`old` as a list applies it (a document's dotted paths become flat keys). */
function project(t: TableInfo, select: string[][] | null, data: Record<string, unknown> | null): Record<string, unknown> | null {
  if (data === null || select === null) return data;
  const out: Record<string, unknown> = {};
  for (const path of select) {
    if (t.def.kind === 'document') {
      if (path.length === 1 && (path[0] === 'id' || path[0] === 'created_at' || path[0] === 'updated_at')) continue;
      const segs = path[0] === 'data' && path.length > 1 ? path.slice(1) : path;
      let v: unknown = data;
      for (const s of segs) v = v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>)[s] : undefined;
      out[segs.join('.')] = v === undefined ? null : v;
    } else {
      const n = path.join('.');
      if (n in data) out[n] = data[n];
    }
  }
  return out;
}
