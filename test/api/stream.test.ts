import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { Readable, pipeline } from 'node:stream';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest, statusOf } from '../helpers/raw.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Streamed bodies through real routes (docs/api.md "Importing rows", "Backup"): the NDJSON import
// (a request body read as it arrives) and the project backup (a file answer with ranges). The
// 1 GiB memory tests of the seam itself are in test/unit/http-stream.test.ts.
const LIMIT = 64 * 1024;
let s: TestServer;
const JSON_H = { 'content-type': 'application/json' };

async function call(method: string, path: string, body?: unknown, key?: string | null) {
  const res = await s.req(path, { method, key, headers: body === undefined ? {} : JSON_H, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** POSTs an NDJSON import sent chunked, in the given pieces (a ReadableStream body). */
async function importChunked(table: string, pieces: string[], key: string = s.keys.publishable) {
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      for (const p of pieces) c.enqueue(new TextEncoder().encode(p));
      c.close();
    },
  });
  const res = await fetch(`${s.url}/db/tables/${table}/import`, {
    method: 'POST',
    headers: { 'x-service-key': key, 'content-type': 'application/x-ndjson' },
    body,
    duplex: 'half',
  } as RequestInit);
  return { status: res.status, body: (await res.json()) as unknown };
}

const count = async (table: string): Promise<number> => (await call('GET', `/db/tables/${table}/rows?limit=1&count=exact`, undefined, s.keys.service)).body.total as number;
const tmpList = (): string[] => (existsSync(join(s.dataDir, 'tmp')) ? readdirSync(join(s.dataDir, 'tmp')) : []);
/** The backup's temporary files left, once a sent file had time to close (at most 2.5 s). */
async function tmpFiles(): Promise<string[]> {
  for (let i = 0; i < 50 && tmpList().length > 0; i++) await new Promise((r) => setTimeout(r, 50));
  return tmpList();
}

beforeAll(async () => {
  s = await startTestServer({ maxStreamBody: LIMIT });
  for (const name of ['items', 'cut', 'early', 'owned']) expect((await call('POST', '/db/tables', { name }, s.keys.service)).status).toBe(201);
  const rel = { name: 'typed', type: 'relational', columns: [{ name: 'n', type: 'int8', nullable: false }] };
  expect((await call('POST', '/db/tables', rel, s.keys.service)).status).toBe(201);
  const rls = { enabled: true, policies: { select: 'true', insert: "data->>'ok' = 'yes'" } };
  expect((await call('PUT', '/db/tables/owned/rls', rls, s.keys.service)).status).toBe(200);
});
afterAll(() => s.close());

describe('POST /db/tables/{t}/import (a streamed request body)', () => {
  it('inserts NDJSON rows sent chunked, lines split across chunks, CRLF and blank lines allowed', async () => {
    const r = await importChunked('items', ['{"data":{"n":1}}\n{"da', 'ta":{"n":2}}\r\n\n', '{"data":{"n":3}}']);
    expect(r).toEqual({ status: 200, body: { inserted: 3 } });
    const rows = (await call('GET', '/db/tables/items/rows?order=created_at.asc')).body.rows as { data: unknown }[];
    expect(rows.map((x) => x.data)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
  });

  it('takes a body with Content-Length too, checked like POST …/rows (a bad row: 400, its line, nothing of its batch stored)', async () => {
    const res = await s.req('/db/tables/typed/import', { method: 'POST', body: '{"data":{"n":1}}\n{"data":{"n":"x"}}\n' });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; details: Record<string, unknown> } };
    expect(body.error.code).toBe('invalid_field');
    expect(body.error.details).toEqual({ field: 'n', inserted: 0, line: 2 });
    expect(await count('typed')).toBe(0);
    const ok = await s.req('/db/tables/typed/import', { method: 'POST', body: '{"data":{"n":1}}\n{"data":{"n":2}}\n' });
    expect(await ok.json()).toEqual({ inserted: 2 });
  });

  it('an empty body imports nothing', async () => {
    const res = await s.req('/db/tables/items/import', { method: 'POST' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ inserted: 0 });
  });

  it('a line that is not JSON is 400 invalid_body with its line number', async () => {
    const r = await importChunked('items', ['{"data":{"n":9}}\n', 'nope\n']);
    expect(r).toEqual({ status: 400, body: { error: { code: 'invalid_body', message: 'line 2 is not valid JSON', details: { inserted: 0, line: 2 } } } });
    expect(await count('items')).toBe(3);
  });

  it('applies the insert policy as the rows API does (403 rls_denied, nothing stored)', async () => {
    const denied = await importChunked('owned', ['{"data":{"ok":"yes"}}\n{"data":{"ok":"no"}}\n']);
    expect(denied).toEqual({ status: 403, body: { error: { code: 'rls_denied', message: expect.any(String), details: { inserted: 0, line: 2 } } } });
    expect(await count('owned')).toBe(0);
    expect(await importChunked('owned', ['{"data":{"ok":"yes"}}\n'])).toEqual({ status: 200, body: { inserted: 1 } });
  });

  it('answers 413 from the declared Content-Length before a byte of the body is sent; nothing stored', async () => {
    // note: only the headers are sent: the answer comes without the body ever being read.
    const raw = await rawRequest(s.url, `POST /db/tables/early/import HTTP/1.1\r\nHost: x\r\nX-Service-Key: ${s.keys.publishable}\r\nContent-Length: ${LIMIT + 1}\r\n\r\n`);
    expect(statusOf(raw)).toBe(413);
    expect(raw.slice(raw.indexOf('\r\n\r\n') + 4)).toBe(JSON.stringify({ error: { code: 'payload_too_large', message: `request body exceeds the limit of ${LIMIT} bytes` } }));
    expect(await count('early')).toBe(0);
  });

  it('authorizes before a byte of the body is read (401 answered to the headers alone)', async () => {
    const raw = await rawRequest(s.url, 'POST /db/tables/early/import HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n');
    expect(statusOf(raw)).toBe(401);
    expect(raw).toContain('"code":"unauthorized"');
    const unknown = await rawRequest(s.url, `POST /db/tables/nosuch/import HTTP/1.1\r\nHost: x\r\nX-Service-Key: ${s.keys.publishable}\r\nContent-Length: 1000\r\n\r\n`);
    expect(statusOf(unknown)).toBe(404);
  });

  it('cuts a chunked body that passes the limit with 413; nothing stored', async () => {
    const line = `${JSON.stringify({ data: { pad: 'x'.repeat(1000) } })}\n`;
    const r = await importChunked('cut', Array.from({ length: 100 }, () => line));
    expect(r).toEqual({ status: 413, body: { error: { code: 'payload_too_large', message: `request body exceeds the limit of ${LIMIT} bytes`, details: { inserted: 0 } } } });
    expect(await count('cut')).toBe(0);
    // note: the server goes on serving on new connections.
    expect(await importChunked('cut', [line])).toEqual({ status: 200, body: { inserted: 1 } });
  });
});

describe('a client that goes mid-body', () => {
  it('stops the import with nothing stored, and the server goes on serving', async () => {
    const { connect } = await import('node:net');
    const { port } = new URL(s.url);
    const line = `${JSON.stringify({ data: { n: 1 } })}\n`;
    await new Promise<void>((resolve, reject) => {
      const sock = connect(Number(port), '127.0.0.1', () => {
        sock.write(`POST /db/tables/early/import HTTP/1.1\r\nHost: x\r\nX-Service-Key: ${s.keys.publishable}\r\nContent-Length: 60000\r\n\r\n${line.repeat(20)}`);
        setTimeout(() => {
          sock.destroy();
          resolve();
        }, 200);
      });
      sock.on('error', reject);
    });
    await new Promise((r) => setTimeout(r, 200));
    expect(await count('early')).toBe(0);
    expect(await importChunked('early', [line])).toEqual({ status: 200, body: { inserted: 1 } });
  });
});

describe('GET /_admin/backup (a file answer)', () => {
  let full: Buffer;
  const get = (headers: Record<string, string> = {}, method = 'GET') => s.req('/_admin/backup', { method, key: s.keys.service, headers });
  /**
   * Runs `ask` (a request for a part of a backup) between two full backups, and returns its result
   * with the backup it answered from. note: every request goes into the live log (docs/api.md), which
   * is written to the project database once a second, so two backups taken a moment apart can differ;
   * `ask` is repeated (a few times at most) until the backups before and after it are the same bytes.
   */
  async function steady<T>(ask: (size: number) => Promise<T>): Promise<T & { copy: Buffer }> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const before = Buffer.from(await (await get()).arrayBuffer());
      const result = await ask(before.length);
      const after = Buffer.from(await (await get()).arrayBuffer());
      if (before.equals(after)) return { ...result, copy: before };
    }
    throw new Error('the project database kept changing between backups');
  }

  beforeAll(async () => {
    const res = await get();
    expect(res.status).toBe(200);
    full = Buffer.from(await res.arrayBuffer());
    expect(res.headers.get('content-length')).toBe(String(full.length));
    expect(res.headers.get('content-type')).toBe('application/vnd.sqlite3');
    expect(res.headers.get('accept-ranges')).toBe('bytes');
    expect(res.headers.get('content-disposition')).toMatch(new RegExp(`^attachment; filename="${s.projectId}-\\d{8}T\\d{6}Z\\.db"$`));
  });

  it('is a consistent copy of the project database, and its temporary file is gone', async () => {
    expect(full.subarray(0, 16).toString('latin1')).toBe('SQLite format 3\0');
    const dir = mkdtempSync(join(tmpdir(), 'pe-backup-'));
    try {
      writeFileSync(join(dir, 'copy.db'), full);
      const db = new Database(join(dir, 'copy.db'), { readonly: true });
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
      expect(db.prepare('SELECT count(*) AS n FROM items').get()).toEqual({ n: 3 });
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(await tmpFiles()).toEqual([]);
  });

  it('needs the service role', async () => {
    const res = await s.req('/_admin/backup');
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('forbidden');
    const { copy, op, bytes } = await steady(async () => {
      const r = await fetch(`${s.url}/_admin/backup`, { headers: { authorization: `Bearer ${s.operatorToken}`, 'x-service-project': s.projectId } });
      return { op: r, bytes: (await r.arrayBuffer()).byteLength };
    });
    expect(op.status).toBe(200);
    expect(bytes).toBe(copy.length);
  });

  it('answers byte ranges with 206 and Content-Range: a-b, a-, -n', async () => {
    // Each case: the Range header and the bytes it names, for a body of n bytes.
    const cases: ((n: number) => [string, number, number])[] = [
      () => ['bytes=0-15', 0, 15],
      (n) => ['bytes=100-', 100, n - 1],
      (n) => ['bytes=-100', n - 100, n - 1],
      (n) => [`bytes=${n - 1}-${n + 50}`, n - 1, n - 1],
    ];
    for (const pick of cases) {
      const { copy, res, body } = await steady(async (size) => {
        const r = await get({ range: pick(size)[0] });
        return { res: r, body: Buffer.from(await r.arrayBuffer()) };
      });
      const size = copy.length;
      const [range, start, end] = pick(size);
      expect(res.status, range).toBe(206);
      expect(res.headers.get('content-range'), range).toBe(`bytes ${start}-${end}/${size}`);
      expect(res.headers.get('content-length'), range).toBe(String(end - start + 1));
      expect(body.equals(copy.subarray(start, end + 1)), range).toBe(true);
    }
  });

  it('answers 416 with Content-Range: bytes */size to a range past the end', async () => {
    const { copy, res } = await steady(async (size) => ({ res: await get({ range: `bytes=${size}-` }) }));
    expect(res.status).toBe(416);
    expect(res.headers.get('content-range')).toBe(`bytes */${copy.length}`);
    expect(await res.json()).toEqual({ error: { code: 'range_not_satisfiable', message: `the range is outside the ${copy.length}-byte body` } });
    expect(await tmpFiles()).toEqual([]);
  });

  it('answers several ranges, or a malformed one, with the whole file (200)', async () => {
    for (const range of ['bytes=0-1,4-5', 'bytes=5-2', 'items=0-1']) {
      const { copy, res, bytes } = await steady(async () => {
        const r = await get({ range });
        return { res: r, bytes: (await r.arrayBuffer()).byteLength };
      });
      expect(res.status, range).toBe(200);
      expect(bytes, range).toBe(copy.length);
    }
  });

  it('answers HEAD with the headers only', async () => {
    const { copy, raw } = await steady(async () => ({ raw: await rawRequest(s.url, `HEAD /_admin/backup HTTP/1.1\r\nHost: x\r\nX-Service-Key: ${s.keys.service}\r\n\r\n`) }));
    expect(statusOf(raw)).toBe(200);
    expect(raw.toLowerCase()).toContain(`content-length: ${copy.length}\r\n`);
    expect(raw.toLowerCase()).toContain('accept-ranges: bytes\r\n');
    expect(raw.endsWith('\r\n\r\n')).toBe(true);
    expect(await tmpFiles()).toEqual([]);
  });

  it('writes a large backup to a slow reader in full, and deletes its file when a reader goes', async () => {
    const pad = 'y'.repeat(2000);
    const lines = Array.from({ length: 30 }, (_, i) => `${JSON.stringify({ data: { i, pad } })}\n`).join('');
    for (let i = 0; i < 100; i++) expect((await s.req('/db/tables/items/rows', { method: 'POST', headers: JSON_H, body: JSON.stringify({ data: { i, pad: pad.repeat(10) } }) })).status).toBe(201);
    expect(lines.length).toBeLessThan(LIMIT);
    // note: the size is the answer's own Content-Length: a second backup (a HEAD) may differ from
    // this one by a live-log write (see `steady`).
    const { size, got } = await new Promise<{ size: number; got: number }>((resolve, reject) => {
      const req = request(`${s.url}/_admin/backup`, { headers: { 'x-service-key': s.keys.service } }, (res) => {
        let n = 0;
        res.on('data', (c: Buffer) => {
          if (n === 0) {
            res.pause();
            setTimeout(() => res.resume(), 300);
          }
          n += c.length;
        });
        res.on('end', () => resolve({ size: Number(res.headers['content-length']), got: n }));
      });
      req.on('error', reject);
      req.end();
    });
    expect(size).toBeGreaterThan(2_000_000);
    expect(got).toBe(size);
    await new Promise<void>((resolve, reject) => {
      const req = request(`${s.url}/_admin/backup`, { headers: { 'x-service-key': s.keys.service } }, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', () => {});
      req.on('close', () => resolve());
      setTimeout(() => reject(new Error('no answer')), 5000);
      req.end();
    });
    expect(await tmpFiles()).toEqual([]);
  });
});

describe('a 1 GiB import at the default limit', () => {
  let big: TestServer;
  beforeAll(async () => {
    big = await startTestServer({ requestTimeoutMs: 0 });
    const res = await big.req('/db/tables', { method: 'POST', key: big.keys.service, headers: JSON_H, body: JSON.stringify({ name: 'bulk' }) });
    expect(res.status).toBe(201);
  });
  afterAll(() => big.close());

  it('is read as it arrives, with the server memory flat', { timeout: 90_000 }, async () => {
    // note: 16,383 lines of 64 KiB of blanks (skipped as blank lines) and one row: just under
    // 1 GiB, generated as it is sent. Client and server share this process; its RSS is sampled.
    const blank = Buffer.alloc(64 * 1024, 0x20);
    blank[blank.length - 1] = 0x0a;
    const row = Buffer.from('{"data":{"last":true}}\n');
    async function* body(): AsyncGenerator<Buffer> {
      for (let i = 0; i < 16_383; i++) yield blank;
      yield row;
    }
    global.gc?.();
    const base = process.memoryUsage().rss;
    let peak = base;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50);
    try {
      const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const { port } = new URL(big.url);
        const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/db/tables/bulk/import', headers: { 'x-service-key': big.keys.publishable } }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode!, body: text }));
        });
        req.on('error', reject);
        pipeline(Readable.from(body()), req, (err) => err && reject(err));
      });
      expect(answer).toEqual({ status: 200, body: JSON.stringify({ inserted: 1 }) });
    } finally {
      clearInterval(sampler);
    }
    expect(peak - base).toBeLessThan(100 * 1024 * 1024);
    const rows = (await (await big.req('/db/tables/bulk/rows')).json()) as { rows: { data: unknown }[] };
    expect(rows.rows.map((r) => r.data)).toEqual([{ last: true }]);
  });
});
