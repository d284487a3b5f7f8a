import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorOf, startTestServer, type TestServer } from '../helpers/server.js';
import { rawRequest } from '../helpers/raw.js';

/** The version the server reports: package.json's (read as a user would, not from src/). */
const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.close());

describe('health', () => {
  it('answers without auth', async () => {
    const res = await fetch(`${s.url}/health`);
    expect(res.status).toBe(200);
    // a generated id: 8 base64url characters of the process, a counter
    expect(res.headers.get('x-request-id')).toMatch(/^[A-Za-z0-9_-]{8}-[0-9a-z]+$/);
    const body = (await res.json()) as { uptime_s: number };
    // uptime is a whole number of seconds
    expect(body).toEqual({ status: 'ok', version: VERSION, uptime_s: body.uptime_s });
    expect(String(body.uptime_s)).toMatch(/^(0|[1-9]\d*)$/);
  });

  it('answers HEAD like GET, without a body', async () => {
    const get = await fetch(`${s.url}/health`);
    const head = await fetch(`${s.url}/health`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(Buffer.byteLength(await get.text())));
    expect(await head.text()).toBe('');
  });

  it('runs on the backend the test asked for', () => {
    expect(s.backend).toBe(process.env.PLATFORM_EDGE_HTTP);
  });
});

describe('routing errors', () => {
  it('unknown service is 404 not_found', async () => {
    const res = await s.req('/nope/thing');
    expect(res.status).toBe(404);
    expect((await errorOf(res)).code).toBe('not_found');
  });

  it('wrong method is 405 with Allow', async () => {
    const res = await fetch(`${s.url}/health`, { method: 'POST' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET');
    expect((await errorOf(res)).code).toBe('method_not_allowed');
  });
});

describe('HTTP/1.1 pipelining', () => {
  // Three requests in one write on one connection.
  const pipelined = ['one', 'two', 'three'].map((id) => `GET /health HTTP/1.1\r\nHost: x\r\nX-Request-Id: ${id}\r\n\r\n`).join('');

  it('both backends answer pipelined requests in order (docs/api.md)', async () => {
    const raw = await rawRequest(s.url, pipelined, 1000);
    expect(raw.match(/^x-request-id: .*$/gim)?.map((l) => l.split(': ')[1]!.trim())).toEqual(['one', 'two', 'three']);
    expect(raw.match(/HTTP\/1\.1 \d+/g)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200', 'HTTP/1.1 200']);
    // The server itself is unaffected.
    expect((await s.req('/health')).status).toBe(200);
  });
});
