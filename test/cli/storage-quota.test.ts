import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, runCli, startServe, type ServeProcess } from '../helpers/cli.js';

// `serve --storage-quota BYTES` (docs/operations.md "Storage"): each project's objects together
// may take at most that many bytes; past it uploads are 413 quota_exceeded.
let s: ServeProcess;

beforeAll(async () => {
  s = await startServe(['--ephemeral', '--storage-quota', '10']);
});
afterAll(() => killAll());

describe('serve --storage-quota', () => {
  it('caps the bytes of a project objects', async () => {
    const mk = await s.req('/storage/buckets', { method: 'POST', key: s.info.keys.service, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'q1', public: false }) });
    expect(mk.status).toBe(201);
    expect((await s.req('/storage/objects/q1/a', { method: 'PUT', key: s.info.keys.service, body: '1234567' })).status).toBe(201);
    const over = await s.req('/storage/objects/q1/b', { method: 'PUT', key: s.info.keys.service, body: '1234' });
    expect(over.status).toBe(413);
    expect(((await over.json()) as { error: { code: string } }).error.code).toBe('quota_exceeded');
    expect((await s.req('/storage/objects/q1/b', { method: 'PUT', key: s.info.keys.service, body: '123' })).status).toBe(201);
  });

  it('refuses a value that is not a non-negative integer', async () => {
    const r = await runCli(['serve', '--ephemeral', '--storage-quota', 'lots']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--storage-quota must be a non-negative integer, got "lots"');
  });
});
