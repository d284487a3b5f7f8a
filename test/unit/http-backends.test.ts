import { describe, expect, it } from 'vitest';
import type { EdgeRequest, EdgeResponse } from '../../src/edge/route.js';
import { DEFAULT_HTTP_LIMITS } from '../../src/config.js';
import { startHttp, type HttpCore } from '../../src/http/index.js';
import { TopicHub } from '../../src/edge/ws-topics.js';

// The backends themselves, behind a core whose answer JSON cannot write (a BigInt): the client
// gets the 500 envelope, and the server keeps serving — on the synchronous and the awaited path.
const unwritable: EdgeResponse = { status: 200, json: { n: 10n } };
const core: HttpCore = {
  dispatch: (req: EdgeRequest) => {
    if (req.path === '/sync') return unwritable;
    if (req.path === '/async') return Promise.resolve(unwritable);
    return { status: 200, json: { ok: true } };
  },
  bodyLimit: () => 1024,
  streamsBody: () => false,
  upgrade: () => ({ status: 404, json: { error: { code: 'not_found', message: 'no WebSocket here' } } }),
  topics: new TopicHub(),
};

describe.each(['uws', 'node'] as const)('the %s backend', (backend) => {
  it('answers 500 internal when a response cannot be written, and goes on serving', async () => {
    const server = await startHttp(backend, core, '127.0.0.1', 0, DEFAULT_HTTP_LIMITS);
    try {
      const base = `http://127.0.0.1:${server.port}`;
      for (const path of ['/sync', '/async']) {
        const res = await fetch(base + path);
        expect(res.status, path).toBe(500);
        expect(await res.json()).toEqual({ error: { code: 'internal', message: 'internal error' } });
      }
      const ok = await fetch(`${base}/fine`);
      expect(ok.status).toBe(200);
      expect(await ok.json()).toEqual({ ok: true });
    } finally {
      await server.shutdown(1000);
    }
  });
});
