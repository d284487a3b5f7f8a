import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy, invoke } from '../helpers/functions.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// The warm isolate cache: least recently used past the cap, and idle ones, are disposed
// (their module state with them). Small settings so the test sees both.
let s: TestServer;
const COUNTER = 'let n = 0; export default () => ++n;';

beforeAll(async () => {
  s = await startTestServer({ functionsMaxIsolates: 2, functionsIdleMs: 300 });
});
afterAll(() => s.close());

describe('warm isolates', () => {
  it('past the cap the least recently used isolate is disposed; the others stay warm', async () => {
    for (const name of ['a', 'b', 'c']) await deploy(s, name, COUNTER);
    expect((await invoke(s, 'a')).body.result).toBe(1);
    expect((await invoke(s, 'b')).body.result).toBe(1);
    expect((await invoke(s, 'a')).body.result).toBe(2);
    // c makes three: b (least recently used) goes
    expect((await invoke(s, 'c')).body.result).toBe(1);
    expect((await invoke(s, 'a')).body.result).toBe(3);
    expect((await invoke(s, 'b')).body.result).toBe(1);
  });

  it('an isolate idle longer than the setting is disposed', async () => {
    await deploy(s, 'idle', COUNTER);
    expect((await invoke(s, 'idle')).body.result).toBe(1);
    expect((await invoke(s, 'idle')).body.result).toBe(2);
    let fresh = false;
    for (let i = 0; i < 40 && !fresh; i++) {
      await new Promise((r) => setTimeout(r, 250));
      // note: reading warms it again, so wait a full idle period between reads
      await new Promise((r) => setTimeout(r, 350));
      fresh = (await invoke(s, 'idle')).body.result === 1;
    }
    expect(fresh).toBe(true);
  });
});
