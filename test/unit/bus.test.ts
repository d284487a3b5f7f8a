import { describe, expect, it } from 'vitest';
import { EventBus } from '../../src/events/bus.js';

const change = (seq: number) => ({ projectId: 'p', at: '2026-01-01T00:00:00.000Z', seq, op: 'insert' as const, table: 't', id: String(seq), data: {}, old: null });

describe('event bus', () => {
  it('emit only queues: listeners run after the emitter returns, in emit order', async () => {
    const bus = new EventBus();
    const seen: string[] = [];
    bus.on('db.change', (e) => void seen.push(`change ${e.seq}`));
    bus.on('key.revoked', (e) => void seen.push(`key ${e.keyId}`));
    bus.emit('db.change', change(1));
    bus.emit('key.revoked', { projectId: 'p', at: 'x', keyId: 'k1' });
    bus.emit('db.change', change(2));
    // note: nothing ran inside emit, nor in a microtask of the emitting turn.
    expect(seen).toEqual([]);
    await Promise.resolve();
    expect(seen).toEqual([]);
    await bus.idle();
    expect(seen).toEqual(['change 1', 'key k1', 'change 2']);
  });

  it('a throwing or rejecting listener is reported and never reaches the emitter or the other listeners', async () => {
    const errors: unknown[] = [];
    const bus = new EventBus((err) => errors.push(err));
    const seen: number[] = [];
    bus.on('db.change', () => {
      throw new Error('boom');
    });
    bus.on('db.change', () => Promise.reject(new Error('async boom')));
    bus.on('db.change', (e) => void seen.push(e.seq));
    expect(() => bus.emit('db.change', change(1))).not.toThrow();
    bus.emit('db.change', change(2));
    await bus.idle();
    await new Promise((r) => setImmediate(r));
    expect(seen).toEqual([1, 2]);
    expect(errors.map((e) => (e as Error).message)).toEqual(['boom', 'boom', 'async boom', 'async boom']);
  });

  it('events a listener emits are delivered after the batch it runs in, still in order', async () => {
    const bus = new EventBus();
    const seen: string[] = [];
    bus.on('db.change', (e) => {
      seen.push(`change ${e.seq}`);
      if (e.seq === 1) bus.emit('key.revoked', { projectId: 'p', at: 'x', keyId: 'from-listener' });
    });
    bus.on('key.revoked', (e) => void seen.push(`key ${e.keyId}`));
    bus.emit('db.change', change(1));
    bus.emit('db.change', change(2));
    await bus.idle();
    expect(seen).toEqual(['change 1', 'change 2', 'key from-listener']);
  });

  it('an unsubscribed listener and a closed bus receive nothing', async () => {
    const bus = new EventBus();
    const seen: number[] = [];
    const off = bus.on('db.change', (e) => void seen.push(e.seq));
    bus.emit('db.change', change(1));
    off();
    await bus.idle();
    expect(seen).toEqual([]);
    bus.on('db.change', (e) => void seen.push(e.seq));
    bus.emit('db.change', change(2));
    bus.close();
    await bus.idle();
    await new Promise((r) => setImmediate(r));
    expect(seen).toEqual([]);
  });
});
