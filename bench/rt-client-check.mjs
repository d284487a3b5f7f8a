// Checks the native realtime bench client (bench/rt-client.c) against a tiny known server on
// 127.0.0.1: SSE over chunked HTTP/1.1 with frames split across chunks at odd places, and WebSocket
// (the `ws` package) with a ping and a 16-bit-length message among the changes. Every change carries
// an `at` 100 ms in the past, so each latency must be about 100 ms; the counts must be exact.
// Usage: node bench/rt-client-check.mjs   (exit 0 and "rt-client check: ok" when the client is right)
import { createServer } from 'node:http';
import { WebSocketServer } from 'ws';
import { nativeClients } from './lib/rt-native.mjs';

const SSE_N = 20;
const WS_N = 20;
const EVENTS = 50;
const AGE_MS = 100;
const sse = new Set();
const server = createServer((req, res) => {
  if (req.url.startsWith('/sse')) {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(': ok\n\nevent: ready\ndata: {"type":"ready"}\n\n');
    sse.add(res);
  } else res.writeHead(404).end();
});
const wss = new WebSocketServer({ server, handleProtocols: (p) => (p.has('platform-edge.v1') ? 'platform-edge.v1' : false) });
wss.on('connection', (ws) => ws.send(JSON.stringify({ type: 'ready', table: 't', seq: 0 })));
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${server.address().port}`;

const fail = (msg) => {
  process.stderr.write(`rt-client check: FAILED: ${msg}\n`);
  process.exit(1);
};
const targets = [
  ...Array.from({ length: SSE_N }, () => ({ kind: 'sse', url: `${url}/sse?table=t` })),
  ...Array.from({ length: WS_N }, () => ({ kind: 'ws', url: `${url.replace('http', 'ws')}/ws`, protocols: ['platform-edge.v1', 'key.pk_test'] })),
];
const clients = await nativeClients(targets, { timeoutMs: 10_000 });
if (sse.size !== SSE_N || wss.clients.size !== WS_N) fail(`opened ${sse.size} SSE and ${wss.clients.size} WS`);
for (let i = 0; i < EVENTS; i++) {
  const pad = i % 10 === 0 ? 'x'.repeat(300) : ''; // note: a WS frame with a 16-bit length
  const msg = JSON.stringify({ type: 'change', op: 'insert', table: 't', id: `r${i}`, data: { n: i, pad, at: 'not this one' }, old: null, seq: i + 1, at: new Date(Date.now() - AGE_MS).toISOString() });
  const frame = `id: ${i + 1}\nevent: change\ndata: ${msg}\n\n`;
  const cut = 1 + (i % (frame.length - 1));
  for (const res of sse) {
    res.write(frame.slice(0, cut));
    res.write(frame.slice(cut));
    if (i % 7 === 0) res.write(': ping\n\n');
  }
  for (const ws of wss.clients) {
    ws.send(msg);
    if (i % 9 === 0) ws.ping('p');
    if (i % 11 === 0) ws.send(JSON.stringify({ type: 'broadcast', channel: 'c', event: 'e', payload: {}, at: new Date().toISOString() }));
  }
  await new Promise((r) => setTimeout(r, 5));
}
const expected = EVENTS * (SSE_N + WS_N);
let c;
for (let t = 0; t < 50; t++) {
  c = await clients.count();
  if (c.delivered >= expected) break;
  await new Promise((r) => setTimeout(r, 100));
}
if (c.delivered !== expected) fail(`delivered ${c.delivered} of ${expected}`);
if (c.closed !== 0) fail(`${c.closed} closed`);
const s = await clients.stop();
if (s.n !== expected) fail(`${s.n} latencies for ${expected} changes`);
// note: `at` has millisecond resolution and the loop here is not free: about AGE_MS, with a margin for a loaded machine.
if (!(s.p50 >= AGE_MS - 1 && s.p50 < AGE_MS + 50)) fail(`p50 ${s.p50} ms, expected about ${AGE_MS}`);
process.stdout.write(`rt-client check: ok (${s.n} changes over ${SSE_N} SSE + ${WS_N} WS; p50 ${s.p50.toFixed(1)} ms, p99 ${s.p99.toFixed(1)} ms for an \`at\` ${AGE_MS} ms old)\n`);
for (const res of sse) res.end();
wss.close();
for (const ws of wss.clients) ws.terminate();
server.close();
