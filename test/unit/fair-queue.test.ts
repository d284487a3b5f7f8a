import { describe, expect, it } from 'vitest';
import { FairQueue } from '../../src/sql/worker/fair-queue.js';

/** Starts jobs until none may start; returns them in start order. */
const startAll = (q: FairQueue<string>): string[] => {
  const out: string[] = [];
  for (let n = q.next(); n; n = q.next()) out.push(n.item);
  return out;
};

describe('FairQueue (the SQL pool scheduler)', () => {
  it("starts another tenant's job before a flooding tenant's queued ones", () => {
    const q = new FairQueue<string>(2, 10);
    for (const j of ['a1', 'a2', 'a3', 'a4']) expect(q.push('A', j)).toBe(true);
    // Two workers: A takes both (its cap is 2); a3, a4 wait.
    expect([q.next()!.item, q.next()!.item]).toEqual(['a1', 'a2']);
    expect(q.next()).toBeNull();
    expect(q.push('B', 'b1')).toBe(true);
    // One of A's jobs ends: the freed worker goes to B (fewer running), not to a3.
    q.done('A');
    expect(q.next()).toEqual({ tenant: 'B', item: 'b1' });
    q.done('A');
    expect(q.next()).toEqual({ tenant: 'A', item: 'a3' });
    expect(q.load('A')).toEqual({ running: 1, queued: 1 });
  });

  it('alternates between tenants with the same number of running jobs (round robin)', () => {
    const q = new FairQueue<string>(3, 10);
    for (const j of ['a1', 'a2', 'a3']) q.push('A', j);
    for (const j of ['b1', 'b2', 'b3']) q.push('B', j);
    for (const j of ['c1']) q.push('C', j);
    expect(startAll(q)).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3', 'b3']);
  });

  it('never lets a tenant run more than its cap', () => {
    const q = new FairQueue<string>(1, 10);
    q.push('A', 'a1');
    q.push('A', 'a2');
    expect(startAll(q)).toEqual(['a1']);
    q.done('A');
    expect(startAll(q)).toEqual(['a2']);
  });

  it('bounds each tenant queue: a push beyond it is refused, other tenants unaffected', () => {
    const q = new FairQueue<string>(1, 2);
    expect(q.push('A', 'a1')).toBe(true);
    expect(q.push('A', 'a2')).toBe(true);
    expect(q.push('A', 'a3')).toBe(false);
    expect(q.push('B', 'b1')).toBe(true);
    expect(q.next()!.item).toBe('a1');
    // a1 left the queue (it runs): A may queue one more.
    expect(q.push('A', 'a3')).toBe(true);
    expect(q.load('A')).toEqual({ running: 1, queued: 2 });
  });

  it('removes a queued job (its deadline passed) and drains the rest', () => {
    const q = new FairQueue<string>(1, 5);
    q.push('A', 'a1');
    q.push('A', 'a2');
    q.push('B', 'b1');
    expect(q.remove('A', 'a2')).toBe(true);
    expect(q.remove('A', 'a2')).toBe(false);
    expect(q.drain().sort()).toEqual(['a1', 'b1']);
    expect(q.next()).toBeNull();
    expect(q.load('A')).toEqual({ running: 0, queued: 0 });
  });
});
