import { describe, expect, it } from 'vitest';
import type { EdgeResponse, WsSocket } from '../../src/edge/route.js';
import { TopicHub } from '../../src/edge/ws-topics.js';
import { DEFAULT_HTTP_LIMITS } from '../../src/config.js';
import { startHttp, type HttpCore } from '../../src/http/index.js';
import { connectWs, refusedWs } from '../helpers/ws.js';

// The WebSocket half of both backends behind a small core (no pipeline): topics from a socket
// and from the server, unsubscribe, binary frames, a failing handler, and the async upgrade path.
const topics = new TopicHub();
const closes: { code: number; reason: string }[] = [];
const room: EdgeResponse = {
  status: 101,
  ws: {
    open: (ws) => ws.subscribe('room'),
    message: (ws: WsSocket, data, binary) => {
      if (binary) return void ws.send(Buffer.concat([Buffer.from('echo:'), data as Buffer]));
      if (data === 'all') return void topics.publish('room', 'to all');
      if (data === 'leave') return ws.unsubscribe('room');
      if (data === 'throw') throw new Error('boom');
      if (data === 'buffered') return void ws.send(String(ws.getBufferedAmount()));
      if (data === 'bye') return ws.close(4000, 'bye');
      ws.publish('room', data);
    },
    close: (_ws, code, reason) => void closes.push({ code, reason }),
  },
};
const core: HttpCore = {
  dispatch: () => ({ status: 404, json: { error: { code: 'not_found', message: 'nothing here' } } }),
  bodyLimit: () => 1024,
  streamsBody: () => false,
  upgrade: (req) => {
    if (req.path === '/room') return room;
    if (req.path === '/later') return new Promise((r) => setTimeout(() => r(room), 20));
    return { status: 401, json: { error: { code: 'unauthorized', message: 'no' } } };
  },
  topics,
};

describe.each(['uws', 'node'] as const)('WebSockets on the %s backend', (backend) => {
  it('publishes from a socket to the others, from the server to all; unsubscribes; echoes bytes; closes 1011 on a throw', async () => {
    const server = await startHttp(backend, core, '127.0.0.1', 0, DEFAULT_HTTP_LIMITS);
    const base = `ws://127.0.0.1:${server.port}`;
    try {
      const refused = await refusedWs(`${base}/nope`);
      expect(refused.status).toBe(401);
      expect(JSON.parse(refused.body)).toEqual({ error: { code: 'unauthorized', message: 'no' } });
      const [a, b, c] = [await connectWs(`${base}/room`), await connectWs(`${base}/room`), await connectWs(`${base}/later`)];
      a!.ws.send('hi');
      expect(await b!.next()).toBe('hi');
      expect(await c!.next()).toBe('hi');
      a!.ws.send('all');
      // note: the sender got no 'hi': its first message is the server's.
      for (const x of [a!, b!, c!]) expect(await x.next()).toBe('to all');
      c!.ws.send('leave');
      c!.ws.send('buffered');
      expect(await c!.next()).toBe('0');
      a!.ws.send('all');
      expect(await a!.next()).toBe('to all');
      expect(await b!.next()).toBe('to all');
      b!.ws.send(Buffer.from([1, 2, 3]));
      expect(await b!.next()).toEqual(Buffer.concat([Buffer.from('echo:'), Buffer.from([1, 2, 3])]));
      expect(c!.received).toEqual(['hi', 'to all', '0']);
      b!.ws.send('throw');
      expect(await b!.closed()).toEqual({ code: 1011, reason: 'internal error' });
      c!.ws.send('bye');
      expect(await c!.closed()).toEqual({ code: 4000, reason: 'bye' });
      closes.length = 0;
      const done = server.shutdown(2000);
      expect(await a!.closed()).toEqual({ code: 1001, reason: 'server shutting down' });
      await done;
      // note: the route's close handler runs for the socket the server shut (those closed just before may land here too).
      expect(closes.filter((x) => x.code !== 4000 && x.code !== 1011)).toEqual([{ code: 1001, reason: 'server shutting down' }]);
      expect(topics.publish('room', 'after')).toBe(false);
    } finally {
      await server.shutdown(100);
    }
  });
});
