import { isoAt } from '../../clock.js';
import { EdgeError, invalidField } from '../../core/errors.js';
import type { AuthContext } from '../../core/auth-context.js';
import { checkChannel } from './stream-query.js';
import type { PresenceMember, Subscriber } from './types.js';

export const PRESENCE_STATE_MAX = 4096;

interface Presence {
  member: PresenceMember;
  /** When it lapses (ms); null while a socket holds it. */
  expMs: number | null;
  holder: Subscriber | null;
}

/**
 * Presence entries by project and channel, in memory (one process): set over HTTP with a TTL,
 * or held by a WebSocket until it closes. Every change is handed to `publish` as the
 * `{type: "presence", channel, joins, leaves}` message (docs/api.md "Realtime").
 */
export class PresenceBoard {
  readonly #entries = new Map<string, Map<string, Map<string, Presence>>>();
  readonly #now: () => number;
  readonly #publish: (projectId: string, channel: string, json: string) => void;
  #sweep: NodeJS.Timeout | null = null;

  constructor(now: () => number, publish: (projectId: string, channel: string, json: string) => void) {
    this.#now = now;
    this.#publish = publish;
  }

  /** `POST /realtime/presence` (holder null) and a WebSocket's `{type: "presence"}`: sets (or refreshes) one entry. */
  track(auth: AuthContext, body: { channel: unknown; key?: unknown; state?: unknown; ttl_s?: unknown }, holder: Subscriber | null): PresenceMember {
    const channel = checkChannel(body.channel);
    const userId = auth.user?.id ?? null;
    const key = presenceKey(body.key, userId, holder);
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
    this.#diff(auth.projectId, channel, [member], []);
    if (expMs !== null) this.#sweep ??= setInterval(() => this.sweep(), 1000).unref();
    return member;
  }

  /** The channel's members, oldest `joined_at` first. */
  list(projectId: string, channel: unknown): { channel: string; members: PresenceMember[] } {
    const ch = checkChannel(channel);
    this.sweep();
    const members = [...(this.#members(projectId, ch, false)?.values() ?? [])].map((p) => p.member);
    members.sort((a, b) => (a.joined_at < b.joined_at ? -1 : a.joined_at > b.joined_at ? 1 : a.key < b.key ? -1 : 1));
    return { channel: ch, members };
  }

  /** The entries a socket holds leave (all, or only the one of `only`). */
  dropHeld(sub: Subscriber, only?: string): void {
    const byChannel = this.#entries.get(sub.projectId);
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
      if (gone.length) this.#diff(sub.projectId, channel, [], gone);
    }
    if (byChannel.size === 0) this.#entries.delete(sub.projectId);
  }

  /** Lapsed entries leave; the timer stops once no entry has a TTL. */
  sweep(): void {
    const now = this.#now();
    let timed = 0;
    for (const [projectId, byChannel] of this.#entries) {
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
        if (gone.length) this.#diff(projectId, channel, [], gone);
      }
      if (byChannel.size === 0) this.#entries.delete(projectId);
    }
    if (timed === 0 && this.#sweep !== null) {
      clearInterval(this.#sweep);
      this.#sweep = null;
    }
  }

  forget(projectId: string): void {
    this.#entries.delete(projectId);
  }

  stop(): void {
    if (this.#sweep !== null) clearInterval(this.#sweep);
    this.#sweep = null;
  }

  #members(projectId: string, channel: string, make: boolean): Map<string, Presence> | undefined {
    let byChannel = this.#entries.get(projectId);
    if (byChannel === undefined) {
      if (!make) return undefined;
      this.#entries.set(projectId, (byChannel = new Map()));
    }
    let m = byChannel.get(channel);
    if (m === undefined && make) byChannel.set(channel, (m = new Map()));
    return m;
  }

  #diff(projectId: string, channel: string, joins: PresenceMember[], leaves: PresenceMember[]): void {
    this.#publish(projectId, channel, JSON.stringify({ type: 'presence', channel, joins, leaves }));
  }
}

/** The entry's key: the one given, else the user id, else (a socket without a user) `socket:<n>`. */
function presenceKey(given: unknown, userId: string | null, holder: Subscriber | null): string {
  if (given === undefined || given === null) {
    if (userId !== null) return userId;
    if (holder !== null) return `socket:${holder.id}`;
    throw invalidField('key', 'is required without a signed-in user');
  }
  if (typeof given !== 'string' || given.length < 1 || given.length > 128) throw invalidField('key', 'must be a string of 1-128 characters');
  return given;
}
