import { describe, expect, it } from 'vitest';
import { Gate } from '../../src/services/functions/gate.js';

describe('the per-project call gate', () => {
  it('admits `limit` calls, queues `queue` in order, refuses the next with 429; projects are apart', async () => {
    const g = new Gate(2, 1);
    const a = await g.enter('p');
    const b = await g.enter('p');
    const order: string[] = [];
    const c = g.enter('p').then((release) => {
      order.push('c');
      return release;
    });
    await expect(g.enter('p')).rejects.toMatchObject({ code: 'rate_limited', status: 429, headers: { 'retry-after': '1' } });
    const other = await g.enter('q');
    other();
    expect(order).toEqual([]);
    a();
    a(); // a second release of the same slot is ignored
    const releaseC = await c;
    expect(order).toEqual(['c']);
    // still full (b and c): the next one waits, none is refused
    const d = g.enter('p');
    b();
    releaseC();
    (await d)();
  });

  it('tryEnter admits at once while a slot is free and nobody waits, else answers null and leaves the queue alone', async () => {
    const g = new Gate(1, 1);
    const a = g.tryEnter('p');
    expect(a).toBeTypeOf('function');
    expect(g.tryEnter('p')).toBeNull();
    const order: string[] = [];
    const b = g.enter('p').then((release) => {
      order.push('b');
      return release;
    });
    a!();
    // the slot a freed is b's: a newcomer does not overtake the waiting call
    expect(g.tryEnter('p')).toBeNull();
    const releaseB = await b;
    expect(order).toEqual(['b']);
    releaseB();
    const c = g.tryEnter('p');
    expect(c).toBeTypeOf('function');
    c!();
    expect(g.tryEnter('q')).toBeTypeOf('function');
  });
});
