// Bare node:http hello server: the baseline for the node:http backend. Answers every
// request with a small JSON body.
// Usage: node bench/bare-node.mjs [port]   (0 or none picks a free port)
// Prints one JSON line once listening: {"server":"bare-node","url":"http://127.0.0.1:PORT","port":PORT}
import { createServer } from 'node:http';

const port = Number(process.argv[2] ?? 0);
const host = '127.0.0.1';
const body = JSON.stringify({ status: 'ok' });
const headers = { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) };

const server = createServer((_req, res) => {
  res.writeHead(200, headers);
  res.end(body);
});
server.keepAliveTimeout = 65_000;
server.listen(port, host, () => {
  const addr = server.address();
  const p = typeof addr === 'object' && addr ? addr.port : port;
  process.stdout.write(`${JSON.stringify({ server: 'bare-node', url: `http://${host}:${p}`, port: p })}\n`);
});

const stop = () => server.close(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
