// Bare uWS publish server: the baseline of the realtime bench (bench/scenarios/realtime.mjs).
// The same native binary our uWS backend loads. WebSockets on /ws subscribe to one topic;
// GET /sse streams are kept in a list; POST /publish (a JSON body) answers 204 and sends the
// body once with app.publish() to every socket and as one `event: change` frame to every stream.
// Usage: node bench/bare-uws-pubsub.mjs [port]
// Prints one JSON line once listening: {"server":"bare-uws-pubsub","url":"http://127.0.0.1:PORT","port":PORT}
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const pkgDir = dirname(require.resolve('uWebSockets.js/package.json'));
const file = join(pkgDir, 'binaries', `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`);
if (!existsSync(file)) {
  process.stderr.write(`bare-uws-pubsub: no native uWS binary for this Node ABI (${file})\n`);
  process.exit(1);
}
const uws = require(file);
const port = Number(process.argv[2] ?? 0);
const host = '127.0.0.1';
const streams = new Set();
const AT_NOW = '"at":"0000-00-00T00:00:00.000Z"';
const app = uws.App();

app
  .ws('/ws', {
    maxBackpressure: 1024 * 1024,
    closeOnBackpressureLimit: 1,
    idleTimeout: 60,
    open: (ws) => {
      ws.subscribe('t');
      ws.send(JSON.stringify({ type: 'ready' }));
    },
  })
  .get('/sse', (res) => {
    res.onAborted(() => streams.delete(res));
    res.cork(() => {
      res.writeStatus('200 OK');
      res.writeHeader('content-type', 'text/event-stream');
      res.write(': ok\n\nevent: ready\ndata: {"type":"ready"}\n\n');
    });
    streams.add(res);
  })
  .post('/publish', (res) => {
    let body = Buffer.alloc(0);
    res.onAborted(() => {});
    res.onData((chunk, last) => {
      body = Buffer.concat([body, Buffer.from(chunk)]);
      if (!last) return;
      // note: a body's `at` of AT_NOW becomes the receipt time (same length), so the bench measures
      // publish-to-delivery from here, as it measures commit-to-delivery from our server's commit.
      const text = body.toString('utf8').replace(AT_NOW, () => `"at":"${new Date().toISOString()}"`);
      app.publish('t', text, false);
      const frame = `event: change\ndata: ${text}\n\n`;
      for (const s of streams) s.cork(() => s.write(frame));
      res.cork(() => res.writeStatus('204 No Content').end());
    });
  })
  .listen(host, port, (token) => {
    if (!token) {
      process.stderr.write(`bare-uws-pubsub: cannot listen on ${host}:${port}\n`);
      process.exit(1);
    }
    const p = uws.us_socket_local_port(token);
    process.stdout.write(`${JSON.stringify({ server: 'bare-uws-pubsub', url: `http://${host}:${p}`, port: p })}\n`);
  });
