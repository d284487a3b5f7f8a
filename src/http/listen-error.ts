import { createServer } from 'node:net';

/**
 * The error for a port that cannot be listened on, in words a user can act on: a port
 * in use names the port. `code` is the system's (node:http gives it; the uWS binary only
 * says no, so the adapter asks the system with probeListen).
 */
export function listenError(host: string, port: number, code: string | undefined): Error {
  const where = `cannot listen on ${host.includes(':') ? `[${host}]` : host}:${port}`;
  switch (code) {
    case 'EADDRINUSE':
      return new Error(`${where}: port ${port} is already in use by another process (choose another with --port)`);
    case 'EACCES':
      return new Error(`${where}: permission denied (ports below 1024 need privileges)`);
    case 'EADDRNOTAVAIL':
      return new Error(`${where}: ${host} is not an address of this machine`);
    default:
      return new Error(code === undefined ? where : `${where}: ${code}`);
  }
}

/** Tries to listen on host:port with node:net and closes at once; resolves the error code, or undefined if it could. */
export function probeListen(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'unknown error'));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve(undefined)));
  });
}
