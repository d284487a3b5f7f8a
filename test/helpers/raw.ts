import { connect } from 'node:net';

/**
 * Sends raw bytes over TCP and returns what the server answered before closing or
 * after `waitMs` of silence — for requests fetch refuses to send (bad headers, paths).
 */
export function rawRequest(url: string, payload: string | Buffer, waitMs = 500): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const sock = connect(Number(port), hostname);
    const chunks: Buffer[] = [];
    let timer: NodeJS.Timeout | undefined;
    const finish = (): void => {
      clearTimeout(timer);
      sock.destroy();
      resolve(Buffer.concat(chunks).toString('latin1'));
    };
    const arm = (): void => {
      clearTimeout(timer);
      timer = setTimeout(finish, waitMs);
    };
    sock.on('data', (d) => {
      chunks.push(d);
      arm();
    });
    sock.on('end', finish);
    sock.on('error', (e) => (chunks.length ? finish() : reject(e)));
    sock.on('connect', () => {
      sock.write(payload);
      arm();
    });
  });
}

/** Status code of the first response in a raw HTTP answer. */
export const statusOf = (raw: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0);
