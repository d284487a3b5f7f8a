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
});
