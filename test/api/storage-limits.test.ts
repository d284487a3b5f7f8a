import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest, statusOf } from '../helpers/raw.js';
import { errorOf, startTestServer, type TestServer } from '../helpers/server.js';

// Storage quotas (docs/api.md "Storage", "Limits"): a bucket's file_size_limit and allowed_mime_types,
// the server's object cap and the project quota; judged from Content-Length before reading, else by
// counting; a refused upload leaves no file and no row.
const MAX_OBJECT = 4000;
const QUOTA = 6000;
let s: TestServer;

const objectsDir = (): string => join(s.dataDir, 'projects', s.projectId, 'objects');
/** Stored files and temp files of the project. */
function files(): { stored: string[]; tmp: string[] } {
  const dir = objectsDir();
  if (!existsSync(dir)) return { stored: [], tmp: [] };
  return { stored: readdirSync(dir).filter((f) => f !== '.tmp'), tmp: existsSync(join(dir, '.tmp')) ? readdirSync(join(dir, '.tmp')) : [] };
}
/** Waits (at most 2.5 s) until no temp file is left, and returns the files then. */
async function settled(): Promise<{ stored: string[]; tmp: string[] }> {
  for (let i = 0; i < 50 && files().tmp.length > 0; i++) await new Promise((r) => setTimeout(r, 50));
  return files();
}

async function bucket(name: string, extra: Record<string, unknown> = {}): Promise<void> {
  const res = await s.req('/storage/buckets', { method: 'POST', key: s.keys.service, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, public: true, ...extra }) });
  expect(res.status).toBe(201);
}

const put = (path: string, body: string | Uint8Array, type = 'application/octet-stream') =>
  s.req(`/storage/objects/${path}`, { method: 'PUT', key: s.keys.service, headers: { 'content-type': type }, body });

/** A PUT with a chunked body (no Content-Length), sent in pieces. */
function putChunked(path: string, size: number, type = 'application/octet-stream') {
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      for (let off = 0; off < size; off += 500) c.enqueue(new Uint8Array(Math.min(500, size - off)).fill(65));
      c.close();
    },
  });
  return fetch(`${s.url}/storage/objects/${path}`, { method: 'PUT', headers: { 'x-service-key': s.keys.service, 'content-type': type }, body, duplex: 'half' } as RequestInit);
}

const keysOf = async (b: string): Promise<string[]> =>
  ((await (await s.req(`/storage/objects/${b}`, { key: s.keys.service })).json()) as { objects: { key: string }[] }).objects.map((o) => o.key);

beforeAll(async () => {
  s = await startTestServer({ storageMaxObject: MAX_OBJECT, storageQuota: QUOTA });
  await bucket('small', { file_size_limit: 100 });
  await bucket('images', { allowed_mime_types: ['image/*', 'application/pdf'] });
  await bucket('big');
});
afterAll(() => s.close());

describe('a bucket file_size_limit', () => {
  it('refuses a declared Content-Length over it (413 payload_too_large), and accepts exactly the limit', async () => {
    const over = await put('small/a', new Uint8Array(101));
    expect(over.status).toBe(413);
    expect((await errorOf(over)).code).toBe('payload_too_large');
    expect((await put('small/b', new Uint8Array(100))).status).toBe(201);
    expect(await keysOf('small')).toEqual(['b']);
  });

  it('counts a chunked body and refuses it past the limit, leaving no file and no row', async () => {
    const before = files().stored.length;
    const res = await putChunked('small/chunked', 1500);
    expect(res.status).toBe(413);
    expect((await errorOf(res)).code).toBe('payload_too_large');
    const after = await settled();
    expect(after.tmp).toEqual([]);
    expect(after.stored.length).toBe(before);
    expect(await keysOf('small')).toEqual(['b']);
  });
});

describe('allowed_mime_types', () => {
  it('accepts a listed type or a type/* match and refuses others with 415', async () => {
    expect((await put('images/a.png', 'x', 'image/png')).status).toBe(201);
    expect((await put('images/a.webp', 'x', 'IMAGE/WEBP')).status).toBe(201);
    expect((await put('images/a.pdf', 'x', 'application/pdf')).status).toBe(201);
    const bad = await put('images/a.html', 'x', 'text/html');
    expect(bad.status).toBe(415);
    expect((await errorOf(bad)).code).toBe('unsupported_media_type');
    expect((await put('images/none', 'x', '')).status).toBe(415);
    const malformed = await put('big/m', 'x', 'not a type');
    expect(malformed.status).toBe(400);
  });
});

describe('the server object cap and the project quota', () => {
  it('refuses an object over the server cap, declared or counted', async () => {
    const declared = await put('big/over', new Uint8Array(MAX_OBJECT + 1));
    expect(declared.status).toBe(413);
    expect((await errorOf(declared)).code).toBe('payload_too_large');
    const counted = await putChunked('big/over', MAX_OBJECT + 1);
    expect(counted.status).toBe(413);
    expect((await errorOf(counted)).code).toBe('payload_too_large');
    expect((await settled()).tmp).toEqual([]);
  });

  it('refuses what would pass the project quota with 413 quota_exceeded; an overwrite counts only the difference', async () => {
    const used = 100 + 3; // small/b and the three 1-byte images
    expect((await put('big/q1', new Uint8Array(3000))).status).toBe(201);
    const left = QUOTA - used - 3000;
    const declared = await put('big/q2', new Uint8Array(left + 1));
    expect(declared.status).toBe(413);
    expect((await errorOf(declared)).code).toBe('quota_exceeded');
    const counted = await putChunked('big/q2', left + 1);
    expect(counted.status).toBe(413);
    expect((await errorOf(counted)).code).toBe('quota_exceeded');
    expect((await put('big/q2', new Uint8Array(left))).status).toBe(201);
    // note: the project is now exactly at its quota; replacing q1 by as many bytes fits.
    expect((await put('big/q1', new Uint8Array(3000))).status).toBe(200);
    expect((await put('big/q3', new Uint8Array(1))).status).toBe(413);
    expect((await s.req('/storage/objects/big/q1', { method: 'DELETE', key: s.keys.service })).status).toBe(204);
    expect((await put('big/q3', new Uint8Array(1))).status).toBe(201);
    const after = await settled();
    expect(after.tmp).toEqual([]);
    expect(await keysOf('big')).toEqual(['q2', 'q3']);
  });
});

describe('bodies that never arrive whole', () => {
  it('a lying Content-Length (the client closes early) leaves no file and no row', async () => {
    const before = files().stored.length;
    const raw = await rawRequest(
      s.url,
      `PUT /storage/objects/big/liar HTTP/1.1\r\nHost: x\r\nX-Service-Key: ${s.keys.service}\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\nConnection: close\r\n\r\nonly a few bytes`,
      300,
    );
    // note: the server may answer nothing (the client is gone) or an error; never 2xx.
    expect(statusOf(raw) < 200 || statusOf(raw) >= 400).toBe(true);
    const after = await settled();
    expect(after.tmp).toEqual([]);
    expect(after.stored.length).toBe(before);
    expect(await keysOf('big')).not.toContain('liar');
  });

  it('an endless chunked body stops at the limit: 413, no file, no row', async () => {
    const raw = await rawRequest(
      s.url,
      `PUT /storage/objects/small/endless HTTP/1.1\r\nHost: x\r\nX-Service-Key: ${s.keys.service}\r\nTransfer-Encoding: chunked\r\n\r\n` + '40\r\n' + 'A'.repeat(64) + '\r\n'.repeat(1) + ('40\r\n' + 'A'.repeat(64) + '\r\n').repeat(40),
      500,
    );
    expect(statusOf(raw)).toBe(413);
    expect((await settled()).tmp).toEqual([]);
    expect(await keysOf('small')).toEqual(['b']);
  });
});
