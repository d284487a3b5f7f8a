import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ProjectRegistry } from '../../src/project/registry.js';

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

function setup(opts: { idleMs?: number; maxOpen?: number; env?: NodeJS.ProcessEnv } = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'pe-reg-'));
  dirs.push(dataDir);
  for (const id of ['a', 'b', 'c']) mkdirSync(join(dataDir, 'projects', id), { recursive: true });
  let now = 1_000_000;
  const config = loadConfig({ dataDir, projectIdleMs: opts.idleMs ?? 1000, maxOpenProjects: opts.maxOpen ?? 10 }, opts.env ?? {});
  const reg = new ProjectRegistry(config, () => now);
  return { reg, advance: (ms: number) => (now += ms) };
}

describe('ProjectRegistry', () => {
  it('opens a project once, applies pragmas and migrations', () => {
    const { reg } = setup();
    const l1 = reg.acquire('a');
    const l2 = reg.acquire('a');
    expect(l1.db).toBe(l2.db);
    expect(l1.db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(l1.db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(l1.db.pragma('busy_timeout', { simple: true })).toBe(5000);
    // docs/operations.md "Durability": the WAL is kept under 64 MB, normal durability is synchronous=NORMAL (1)
    expect(l1.db.pragma('journal_size_limit', { simple: true })).toBe(67_108_864);
    expect(l1.db.pragma('synchronous', { simple: true })).toBe(1);
    // every migration file of schema/project, in order, once
    const applied = l1.db.prepare('SELECT version, name FROM "_svc_meta.migrations" ORDER BY version').all();
    const files = readdirSync(fileURLToPath(new URL('../../schema/project', import.meta.url)))
      .filter((f) => /^\d{4}_.+\.sql$/.test(f))
      .sort()
      .map((f) => ({ version: Number(f.slice(0, 4)), name: f.slice(5, -4) }));
    expect(files.slice(0, 4)).toEqual([
      { version: 1, name: 'init' },
      { version: 2, name: 'auth' },
      { version: 3, name: 'db' },
      { version: 4, name: 'change_log_rowid' },
    ]);
    expect(applied).toEqual(files);
    expect(l1.stmt('SELECT 1')).toBe(l1.stmt('SELECT 1'));
    l1.release();
    l2.release();
    reg.closeAll();
  });

  it('lease.cache builds a value once per open connection; it is gone after the project closes and reopens', () => {
    const { reg, advance } = setup();
    let builds = 0;
    const build = () => ({ n: ++builds });
    const l1 = reg.acquire('a');
    const l2 = reg.acquire('a');
    const v = l1.cache('test.value', build);
    expect(l2.cache('test.value', build)).toBe(v);
    expect(builds).toBe(1);
    // another project has its own
    const lb = reg.acquire('b');
    expect(lb.cache('test.value', build)).not.toBe(v);
    expect(builds).toBe(2);
    l1.release();
    l2.release();
    lb.release();
    advance(2000);
    reg.closeIdle();
    expect(reg.isOpen('a')).toBe(false);
    const l3 = reg.acquire('a');
    const v3 = l3.cache('test.value', build);
    expect(v3).not.toBe(v);
    expect(v3).toEqual({ n: 3 });
    expect(l3.cache('test.value', build)).toBe(v3);
    expect(builds).toBe(3);
    l3.release();
    reg.closeAll();
  });

  it('PLATFORM_EDGE_DURABILITY=full opens projects with synchronous=FULL (2)', () => {
    const { reg } = setup({ env: { PLATFORM_EDGE_DURABILITY: 'full' } });
    const l = reg.acquire('a');
    expect(l.db.pragma('synchronous', { simple: true })).toBe(2);
    l.release();
    reg.closeAll();
  });

  it('closes idle projects only when unleased', () => {
    const { reg, advance } = setup({ idleMs: 1000 });
    const held = reg.acquire('a');
    reg.acquire('b').release();
    advance(5000);
    reg.closeIdle();
    expect(reg.isOpen('a')).toBe(true);
    expect(reg.isOpen('b')).toBe(false);
    held.release();
    advance(5000);
    reg.closeIdle();
    expect(reg.isOpen('a')).toBe(false);
    reg.closeAll();
  });

  it('evicts the least recently used unleased project past the bound', () => {
    const { reg } = setup({ maxOpen: 2 });
    reg.acquire('a').release();
    reg.acquire('b').release();
    reg.acquire('a').release();
    reg.acquire('c').release();
    expect(reg.openIds().sort()).toEqual(['a', 'c']);
    reg.closeAll();
  });

  it('refuses a project whose folder does not exist', () => {
    const { reg } = setup();
    expect(() => reg.acquire('ghost')).toThrow(/does not exist/);
    reg.closeAll();
  });
});
