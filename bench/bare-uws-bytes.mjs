// Bare uWS object server: the baseline of the storage benchmarks. It answers every GET with
// the same 4 KiB body from memory, with the headers an object read carries (type, strong ETag,
// Last-Modified, Accept-Ranges, nosniff, CSP), and 304 when If-None-Match names its ETag.
// Usage: node bench/bare-uws-bytes.mjs [port] [bytes]   (port 0 or none picks a free port; bytes: body size, 4096 by default)
// Prints one JSON line once listening: {"server":"bare-uws-bytes","url":"http://127.0.0.1:PORT","port":PORT}
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { objectBody } from './lib/object-body.mjs';

const require = createRequire(import.meta.url);
const pkgDir = dirname(require.resolve('uWebSockets.js/package.json'));
const file = join(pkgDir, 'binaries', `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`);
if (!existsSync(file)) {
  process.stderr.write(`bare-uws-bytes: no native uWS binary for this Node ABI (${file})\n`);
  process.exit(1);
}
const uws = require(file);

const port = Number(process.argv[2] ?? 0);
const host = '127.0.0.1';
const body = objectBody(Number(process.argv[3] ?? 4096));
const etag = `"${createHash('sha256').update(body).digest('hex')}"`;
const lastModified = new Date().toUTCString();

uws
  .App()
  .any('/*', (res, req) => {
    const inm = req.getHeader('if-none-match');
    res.cork(() => {
      res.writeStatus(inm === etag ? '304 Not Modified' : '200 OK');
      res.writeHeader('content-type', 'application/octet-stream');
      res.writeHeader('etag', etag);
      res.writeHeader('last-modified', lastModified);
      res.writeHeader('accept-ranges', 'bytes');
      res.writeHeader('x-content-type-options', 'nosniff');
      res.writeHeader('content-security-policy', 'sandbox');
      if (inm === etag) res.endWithoutBody();
      else res.end(body);
    });
  })
  .listen(host, port, (token) => {
    if (!token) {
      process.stderr.write(`bare-uws-bytes: cannot listen on ${host}:${port}\n`);
      process.exit(1);
    }
    const p = uws.us_socket_local_port(token);
    process.stdout.write(`${JSON.stringify({ server: 'bare-uws-bytes', url: `http://${host}:${p}`, port: p, etag })}\n`);
  });

const stop = () => process.exit(0);
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
