import { describe, expect, it } from 'vitest';
import type { AuthContext } from '../../src/core/auth-context.js';
import { PresenceBoard } from '../../src/services/realtime/presence.js';
import type { Subscriber } from '../../src/services/realtime/types.js';

const T0 = Date.parse('2026-11-26T10:00:00.000Z');
const user = (id: string): AuthContext => ({
  projectId: 'p1',
  keyId: 'k',
  scopes: new Set(['realtime:subscribe']),
  role: 'authenticated',
  operator: null,
  user: { id, role: 'authenticated', sessionId: `s-${id}`, aal: 'aal1', claims: {} },
});

function board() {
  let now = T0;
  const sent: { channel: string; msg: unknown }[] = [];
  const b = new PresenceBoard(
    () => now,
    (_p, channel, json) => sent.push({ channel, msg: JSON.parse(json) }),
  );
  return { b, sent, advance: (ms: number) => (now += ms) };
}

describe('PresenceBoard', () => {
  it('an HTTP entry lapses after its ttl: it leaves the list and a leave goes out', () => {
    const { b, sent, advance } = board();
    const m = b.track(user('u1'), { channel: 'c', state: { a: 1 }, ttl_s: 10 }, null);
    expect(m).toEqual({ key: 'u1', user_id: 'u1', state: { a: 1 }, joined_at: '2026-11-26T10:00:00.000Z', expires_at: '2026-11-26T10:00:10.000Z' });
    advance(9_999);
    expect(b.list('p1', 'c').members).toEqual([m]);
    advance(1);
    expect(b.list('p1', 'c').members).toEqual([]);
    expect(sent).toEqual([
      { channel: 'c', msg: { type: 'presence', channel: 'c', joins: [m], leaves: [] } },
      { channel: 'c', msg: { type: 'presence', channel: 'c', joins: [], leaves: [m] } },
    ]);
    b.stop();
  });

  it('a refresh keeps joined_at and moves expires_at; a socket entry never lapses and leaves with its socket', () => {
    const { b, advance } = board();
    b.track(user('u1'), { channel: 'c', ttl_s: 10 }, null);
    advance(5_000);
    const again = b.track(user('u1'), { channel: 'c', state: 'x', ttl_s: 60 }, null);
    expect(again.joined_at).toBe('2026-11-26T10:00:00.000Z');
    expect(again.expires_at).toBe('2026-11-26T10:01:05.000Z');
    const sock = { id: 7, projectId: 'p1' } as unknown as Subscriber;
    const held = b.track({ ...user('u2'), user: null, role: 'anon' }, { channel: 'c', state: 1 }, sock);
    expect(held).toMatchObject({ key: 'socket:7', user_id: null, expires_at: null });
    advance(3_600_000);
    expect(b.list('p1', 'c').members.map((x) => x.key)).toEqual(['socket:7']);
    b.dropHeld(sock);
    expect(b.list('p1', 'c').members).toEqual([]);
    b.stop();
  });
});
