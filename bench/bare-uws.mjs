// Bare uWS hello server: the baseline for the uWS backend. It loads the native binary of
// the pinned build directly, as src/http/native.ts does (not the package main, which can
// silently fall back to a shim), and answers every request with a small JSON body.
// Usage: node bench/bare-uws.mjs [port]   (0 or none picks a free port)
// Prints one JSON line once listening: {"server":"bare-uws","url":"http://127.0.0.1:PORT","port":PORT}
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const pkgDir = dirname(require.resolve('uWebSockets.js/package.json'));
const file = join(pkgDir, 'binaries', `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`);
if (!existsSync(file)) {
  process.stderr.write(`bare-uws: no native uWS binary for this Node ABI (${file})\n`);
  process.exit(1);
}
const uws = require(file);

const port = Number(process.argv[2] ?? 0);
const host = '127.0.0.1';
const body = JSON.stringify({ status: 'ok' });

uws
  .App()
  .any('/*', (res) => {
    res.cork(() => {
      res.writeStatus('200 OK');
      res.writeHeader('content-type', 'application/json; charset=utf-8');
      res.end(body);
    });
  })
  .listen(host, port, (token) => {
    if (!token) {
      process.stderr.write(`bare-uws: cannot listen on ${host}:${port}\n`);
      process.exit(1);
    }
    const p = uws.us_socket_local_port(token);
    process.stdout.write(`${JSON.stringify({ server: 'bare-uws', url: `http://${host}:${p}`, port: p })}\n`);
  });

const stop = () => process.exit(0);
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
