import { describe, expect, it } from 'vitest';
import { Lru } from '../../src/sql/pg/lru.js';

describe('Lru', () => {
  it('keeps at most max entries and drops the least recently used first', () => {
    const c = new Lru<string, number>(10);
    for (let i = 0; i < 10; i++) c.set(`k${i}`, i);
    // k0 and k1 are read, so k2 and k3 are now the oldest.
    expect(c.get('k0')).toBe(0);
    expect(c.get('k1')).toBe(1);
    c.set('k10', 10);
    // past the bound the oldest tenth (1 of 10) is dropped
    expect(c.size).toBe(10);
    expect(c.get('k2')).toBeUndefined();
    expect(c.get('k0')).toBe(0);
    expect(c.get('k1')).toBe(1);
    expect(c.get('k10')).toBe(10);
    for (let i = 11; i < 100; i++) c.set(`k${i}`, i);
    expect(c.size).toBe(10);
    // the ten newest remain
    expect(Array.from({ length: 100 }, (_, i) => c.get(`k${i}`)).filter((v) => v !== undefined)).toEqual([90, 91, 92, 93, 94, 95, 96, 97, 98, 99]);
  });

  it('replaces the value of an existing key', () => {
    const c = new Lru<string, string>(2);
    c.set('a', 'x');
    c.set('a', 'y');
    expect(c.get('a')).toBe('y');
    expect(c.size).toBe(1);
  });
});
