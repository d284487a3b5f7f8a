import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest, statusOf } from '../helpers/raw.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Bad keys and attacks on storage (issue 14, "Bad input and attacks"): traversal in every
// spelling, NUL and control characters, NFC/NFD twins, a planted symlink, an aborted upload.
let s: TestServer;
let outside: string;

const objectsDir = (project = s.projectId): string => join(s.dataDir, 'projects', project, 'objects');
const tmpFiles = (): string[] => (existsSync(join(objectsDir(), '.tmp')) ? readdirSync(join(objectsDir(), '.tmp')) : []);
async function noTmpLeft(): Promise<string[]> {
  for (let i = 0; i < 50 && tmpFiles().length > 0; i++) await new Promise((r) => setTimeout(r, 50));
  return tmpFiles();
}
const keysOf = async (b: string): Promise<string[]> =>
  ((await (await s.req(`/storage/objects/${b}`, { key: s.keys.service })).json()) as { objects: { key: string }[] }).objects.map((o) => o.key);

/** The data folder's files outside the project's objects (what a traversal would have written). */
function strayFiles(): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (p.startsWith(objectsDir())) continue;
      if (e.isDirectory()) walk(p);
      else if (!/\.db(-wal|-shm)?$|master\.key$/.test(e.name)) out.push(p);
    }
  };
  walk(s.dataDir);
  return out;
}

beforeAll(async () => {
  s = await startTestServer();
  outside = mkdtempSync(join(tmpdir(), 'pe-outside-'));
  const res = await s.req('/storage/buckets', { method: 'POST', key: s.keys.service, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'box', public: true }) });
  expect(res.status).toBe(201);
  expect((await s.req('/storage/objects/box/seed.txt', { method: 'PUT', key: s.keys.service, body: 'seed' })).status).toBe(201);
});
afterAll(async () => {
  await s.close();
  rmSync(outside, { recursive: true, force: true });
});

const rawPut = (path: string): Promise<string> =>
  rawRequest(s.url, `PUT ${path} HTTP/1.1\r\nHost: x\r\nX-Service-Key: ${s.keys.service}\r\nContent-Length: 4\r\nConnection: close\r\n\r\nevil`);
const rawGet = (path: string): Promise<string> => rawRequest(s.url, `GET ${path} HTTP/1.1\r\nHost: x\r\nX-Service-Key: ${s.keys.service}\r\nConnection: close\r\n\r\n`);

describe('keys that try to leave the bucket', () => {
  it('refuses ../, ..%2f, %2e%2e/, absolute paths, NUL, control characters and backslashes with 400 and writes nothing', async () => {
    const paths = [
      '/storage/objects/box/../../../../etc/passwd',
      '/storage/objects/box/a/../b',
      '/storage/objects/box/..%2f..%2fetc%2fpasswd',
      '/storage/objects/box/%2e%2e/%2e%2e/x',
      '/storage/objects/box/%2e%2e%2f%2e%2e%2fx',
      '/storage/objects/box/./x',
      '/storage/objects/box//etc/passwd',
      '/storage/objects/box/%2Fetc%2Fpasswd',
      '/storage/objects/box/a%00b',
      '/storage/objects/box/a%0Ab',
      '/storage/objects/box/a%7Fb',
      '/storage/objects/box/a%5C..%5Cb',
      '/storage/objects/box/a/',
    ];
    for (const p of paths) {
      const put = statusOf(await rawPut(p));
      expect([400, 404], `PUT ${p} → ${put}`).toContain(put);
      const get = statusOf(await rawGet(p));
      expect([400, 404], `GET ${p} → ${get}`).toContain(get);
    }
    expect(await keysOf('box')).toEqual(['seed.txt']);
    expect(strayFiles()).toEqual([]);
  });

  it('refuses a key over 1024 bytes and accepts one of exactly 1024', async () => {
    const long = 'é'.repeat(512); // 1024 bytes of UTF-8
    expect((await s.req(`/storage/objects/box/${encodeURIComponent(long)}`, { method: 'PUT', key: s.keys.service, body: 'x' })).status).toBe(201);
    const res = await s.req(`/storage/objects/box/${encodeURIComponent(long + 'a')}`, { method: 'PUT', key: s.keys.service, body: 'x' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_field');
    expect((await s.req(`/storage/objects/box/${encodeURIComponent(long)}`, { method: 'DELETE', key: s.keys.service })).status).toBe(204);
  });
});

describe('NFC/NFD twins', () => {
  it('name one object: the key is stored in NFC and either spelling reads, overwrites and deletes it', async () => {
    const nfc = 'caf\u00e9.txt';
    const nfd = 'cafe\u0301.txt';
    const first = await s.req(`/storage/objects/box/${encodeURIComponent(nfd)}`, { method: 'PUT', key: s.keys.service, body: 'one' });
    expect(first.status).toBe(201);
    const rec = (await first.json()) as { key: string };
    expect(rec.key).toBe(nfc);
    const second = await s.req(`/storage/objects/box/${encodeURIComponent(nfc)}`, { method: 'PUT', key: s.keys.service, body: 'two' });
    expect(second.status).toBe(200);
    expect(await (await s.req(`/storage/objects/box/${encodeURIComponent(nfd)}`)).text()).toBe('two');
    expect((await keysOf('box')).filter((k) => k.startsWith('caf'))).toEqual([nfc]);
    expect((await s.req(`/storage/objects/box/${encodeURIComponent(nfd)}`, { method: 'DELETE', key: s.keys.service })).status).toBe(204);
    expect((await s.req(`/storage/objects/box/${encodeURIComponent(nfc)}`)).status).toBe(404);
  });
});

describe('a planted symlink', () => {
  it('is never followed: a key equal to its name is an unknown object', async () => {
    writeFileSync(join(outside, 'secret'), 'do not leak');
    symlinkSync(join(outside, 'secret'), join(objectsDir(), 'secret'));
    const res = await s.req('/storage/objects/box/secret', { key: s.keys.service });
    expect(res.status).toBe(404);
    expect(await res.text()).not.toContain('do not leak');
  });

  it('in place of a project objects folder, refuses to store rather than writing through it', async () => {
    const { project, service } = s.server.projects.create('planted');
    mkdirSync(join(s.dataDir, 'projects', project.id), { recursive: true });
    rmSync(objectsDir(project.id), { recursive: true, force: true });
    symlinkSync(outside, objectsDir(project.id));
    const mk = await fetch(`${s.url}/storage/buckets`, { method: 'POST', headers: { 'x-service-key': service, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bb', public: true }) });
    expect(mk.status).toBe(201);
    const res = await fetch(`${s.url}/storage/objects/bb/x`, { method: 'PUT', headers: { 'x-service-key': service }, body: 'evil' });
    expect(res.status).toBe(500);
    expect(readdirSync(outside).sort()).toEqual(['secret']);
  });
});

describe('an aborted upload', () => {
  it('leaves no file and no row', async () => {
    const { hostname, port } = new URL(s.url);
    await new Promise<void>((resolve, reject) => {
      const sock = connect(Number(port), hostname, () => {
        sock.write(`PUT /storage/objects/box/aborted HTTP/1.1\r\nHost: x\r\nX-Service-Key: ${s.keys.service}\r\nTransfer-Encoding: chunked\r\n\r\n`);
        sock.write('400\r\n' + 'B'.repeat(1024) + '\r\n');
        setTimeout(() => {
          sock.destroy();
          resolve();
        }, 150);
      });
      sock.on('error', reject);
    });
    expect(await noTmpLeft()).toEqual([]);
    expect(await keysOf('box')).not.toContain('aborted');
    expect((await s.req('/storage/objects/box/aborted')).status).toBe(404);
  });
});
