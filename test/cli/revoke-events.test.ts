import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { EdgeEvents } from '../../src/events/events.js';
import { cliJson, killAll, poll } from '../helpers/cli.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// A key revoked by the CLI (another process, on the same data folder) reaches the bus of a
// running server as `key.revoked`: control.db polling notices the change and announces it.

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

let s: TestServer;
const revoked: Array<EdgeEvents['key.revoked']> = [];

beforeAll(async () => {
  s = await startTestServer();
  s.server.bus.on('key.revoked', (e) => void revoked.push(e));
});
afterAll(async () => {
  await s?.close();
  await killAll();
});

const cliRevoke = (id: string) => cliJson<{ id: string; revoked_at: string }>(['key', 'revoke', id, '--data-dir', s.dataDir]);
const newKey = (name: string) => s.server.projects.createKey(s.projectId, name, ['data:read'], false).key;
const announced = (id: string) => revoked.filter((e) => e.keyId === id);
/** Waits for the server to announce the key (the CLI's change reaches it within a poll interval). */
const seen = (id: string) => poll(async () => announced(id).length > 0, 5000);

describe('key.revoked', () => {
  it('reaches a running server when the CLI revokes a key, once each', async () => {
    const [k1, k2] = [newKey('one'), newKey('two')];
    const out1 = await cliRevoke(k1.id);
    expect(out1.id).toBe(k1.id);
    expect(await seen(k1.id)).toBe(true);
    const out2 = await cliRevoke(k2.id);
    expect(await seen(k2.id)).toBe(true);
    // note: revocations are announced in order, so by now a repeat of the first would have come too.
    expect(announced(k1.id)).toEqual([{ projectId: s.projectId, at: out1.revoked_at, keyId: k1.id }]);
    expect(announced(k2.id)).toEqual([{ projectId: s.projectId, at: out2.revoked_at, keyId: k2.id }]);
  });

  it('a revocation made in this process is announced once, not again when the CLI changes control.db', async () => {
    const mine = newKey('mine');
    const r = s.server.projects.revokeKey(mine.id);
    await s.server.bus.idle();
    expect(announced(mine.id)).toEqual([{ projectId: s.projectId, at: r.revoked_at, keyId: mine.id }]);
    const theirs = newKey('theirs');
    await cliRevoke(theirs.id);
    expect(await seen(theirs.id)).toBe(true);
    expect(announced(mine.id)).toHaveLength(1);
  });
});
