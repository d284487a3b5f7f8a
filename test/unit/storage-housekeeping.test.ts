import { existsSync, mkdirSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { restartTestServer } from '../helpers/realtime.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Storage housekeeping (src/services/storage/housekeeping.ts, docs/api.md "Storage housekeeping"):
// temp files a crash left and expired uploads are swept as a project opens and on the
// maintenance timer, not only when the project next starts an upload. A real server on a data
// folder, the leftovers planted as a crash leaves them.
const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const b64 = (v: string): string => Buffer.from(v).toString('base64');
const TUS = { 'tus-resumable': '1.0.0' };

async function poll(check: () => boolean, withinMs = 5000): Promise<boolean> {
  const end = Date.now() + withinMs;
  while (!check()) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 25));
  }
  return true;
}

/** A TUS upload begun and left unfinished (3 of 10 bytes): its id. */
async function unfinishedUpload(s: TestServer): Promise<string> {
  const mk = await s.req('/storage/buckets', { method: 'POST', key: s.keys.service, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'up', public: false }) });
  expect(mk.status).toBe(201);
  const created = await s.req('/storage/tus', { method: 'POST', key: s.keys.service, headers: { ...TUS, 'upload-length': '10', 'upload-metadata': `bucket ${b64('up')},key ${b64('big.bin')}` } });
  expect(created.status).toBe(201);
  const id = created.headers.get('location')!.split('/').pop()!;
  const patched = await s.req(`/storage/tus/${id}`, { method: 'PATCH', key: s.keys.service, headers: { ...TUS, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' }, body: 'abc' });
  expect(patched.status).toBe(204);
  return id;
}

describe('storage housekeeping', () => {
  it('as a project opens after a restart: stale temp files and expired uploads go, fresh temp files stay', async () => {
    let s = await startTestServer({ uploadExpiryS: 1 });
    servers.push(s);
    const project = join(s.dataDir, 'projects', s.projectId);
    const id = await unfinishedUpload(s);
    expect(readdirSync(join(project, 'uploads'))).toEqual([id]);
    // what a crash in the middle of two PUTs leaves: one two hours ago, one a minute ago
    const tmp = join(project, 'objects', '.tmp');
    mkdirSync(tmp, { recursive: true });
    const stale = join(tmp, '0190a0a0-0000-7000-8000-000000000001');
    const fresh = join(tmp, '0190a0a0-0000-7000-8000-000000000002');
    writeFileSync(stale, 'left by a crash');
    writeFileSync(fresh, 'still being written');
    const now = Date.now() / 1000;
    utimesSync(stale, now - 7200, now - 7200);
    utimesSync(fresh, now - 60, now - 60);

    servers.pop();
    // the upload expires (1 s) while the server is down; the new process opens the project on its first request
    await new Promise((r) => setTimeout(r, 1100));
    s = await restartTestServer(s, { uploadExpiryS: 1 });
    servers.push(s);
    expect(existsSync(stale)).toBe(true);
    const list = await s.req('/storage/buckets', { key: s.keys.service });
    expect(list.status).toBe(200);
    expect(await poll(() => !existsSync(stale) && readdirSync(join(project, 'uploads')).length === 0)).toBe(true);
    expect(readdirSync(tmp)).toEqual(['0190a0a0-0000-7000-8000-000000000002']);
    const head = await s.req(`/storage/tus/${id}`, { method: 'HEAD', key: s.keys.service, headers: TUS });
    expect(head.status).toBe(404);
  });

  it('on the maintenance timer: an expired upload of an open project goes without another upload starting', async () => {
    const s = await startTestServer({ uploadExpiryS: 1, changeLogPruneMs: 100 });
    servers.push(s);
    const uploads = join(s.dataDir, 'projects', s.projectId, 'uploads');
    const id = await unfinishedUpload(s);
    expect(readdirSync(uploads)).toEqual([id]);
    expect(await poll(() => readdirSync(uploads).length === 0)).toBe(true);
    const head = await s.req(`/storage/tus/${id}`, { method: 'HEAD', key: s.keys.service, headers: TUS });
    expect(head.status).toBe(404);
  });
});
