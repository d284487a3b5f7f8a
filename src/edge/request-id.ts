import { randomBytes } from 'node:crypto';

const SAFE = /^[A-Za-z0-9._:-]{1,128}$/;
const prefix = randomBytes(6).toString('base64url');
let counter = 0;

/**
 * The request id: the client's `X-Request-Id` when it is a safe token (never echoed
 * otherwise, so it cannot inject headers), else a process-unique id.
 */
export function newRequestId(given: string | undefined): string {
  if (given !== undefined && SAFE.test(given)) return given;
  counter = (counter + 1) % Number.MAX_SAFE_INTEGER;
  return `${prefix}-${counter.toString(36)}`;
}
