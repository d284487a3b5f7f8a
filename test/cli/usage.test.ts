import { readdirSync } from 'node:fs';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { killAll, runCli, tempDir, type CliResult } from '../helpers/cli.js';

// Usage of the CLI: --help everywhere, and every usage error is exit 2 with a message on
// stderr, no stack trace, nothing on stdout and nothing created on disk.

// note: the "cli" vitest project does not inherit the root timeouts; spawned processes on a busy machine need them.
// Each test here runs a batch of processes, a few at a time.
vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

afterAll(killAll);

const STACK = /\n\s+at .+:\d+/;

/** Runs the commands in parallel, each with --data-dir in a fresh folder; returns the results and the folders. */
async function runAll(commands: string[][]): Promise<{ r: CliResult; dir: string; args: string[] }[]> {
  return Promise.all(
    commands.map(async (args) => {
      const dir = tempDir();
      return { r: await runCli([...args, '--data-dir', dir]), dir, args };
    }),
  );
}

describe.concurrent('platform-edge CLI usage', () => {
  it('--help on every command exits 0 and prints its usage', async () => {
    const runs = await runAll([
      ['--help'],
      ['serve', '--help'],
      ['project', '--help'],
      ['key', 'create', '-h'],
      ['key', '--help'],
      ['operator', '--help'],
    ]);
    for (const { r, args, dir } of runs) {
      expect(r.code, args.join(' ')).toBe(0);
      expect(r.stdout, args.join(' ')).toMatch(/^Usage: platform-edge /);
      expect(r.stderr, args.join(' ')).toBe('');
      // --help touches no data folder
      expect(readdirSync(dir), args.join(' ')).toEqual([]);
    }
    const byCmd = Object.fromEntries(runs.map(({ r, args }) => [args.join(' '), r.stdout]));
    expect(byCmd['--help']).toMatch(/serve[\s\S]*project[\s\S]*key[\s\S]*operator/);
    for (const flag of ['--port', '--host', '--data-dir', '--public-url', '--durability', '--ephemeral', '--json']) {
      expect(byCmd['serve --help']).toContain(flag);
    }
    expect(byCmd['project --help']).toMatch(/create NAME[\s\S]*list[\s\S]*delete ID/);
    expect(byCmd['key --help']).toMatch(/create --project ID --scopes[\s\S]*--service[\s\S]*list --project ID[\s\S]*revoke KEY_ID/);
    expect(byCmd['key --help']).toContain('data:read');
    expect(byCmd['operator --help']).toMatch(/create EMAIL[\s\S]*--password[\s\S]*login EMAIL/);
  });

  it('--version prints the version', async () => {
    const r = await runCli(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('usage errors exit 2 with a message and no stack trace, print nothing on stdout, create nothing', async () => {
    const cases: [string[], string | RegExp][] = [
      [['bogus'], 'unknown command "bogus"'],
      [['serve', '--bogus'], "'--bogus'"],
      [['project', 'list', '--bogus'], "'--bogus'"],
      [['key', 'list', '--project', 'x', '--bogus'], "'--bogus'"],
      [['operator', 'login', 'a@b.co', '--bogus'], "'--bogus'"],
      [['serve', '--durability', 'bogus'], '--durability must be normal or full'],
      [['serve', '--port', '70000'], '--port'],
      [['serve', '--public-url', 'not a url'], '--public-url'],
      [['serve', '--max-connections=-1'], '--max-connections must be a non-negative integer, got "-1"'],
      [['serve', '--request-timeout-ms', 'soon'], '--request-timeout-ms must be a non-negative integer, got "soon"'],
      [['serve', 'extra'], 'unexpected argument "extra"'],
      [['project', 'rename', 'x'], 'unknown project command "rename"'],
      [['project', 'create'], 'NAME'],
      [['key', 'create', '--scopes', 'data:read'], '--project'],
      [['key', 'create', '--project', 'x', '--scopes', 'bogus'], 'unknown scope "bogus"'],
      [['key', 'revoke'], 'KEY_ID'],
      [['operator', 'create'], 'EMAIL'],
      [['operator', 'promote', 'a@b.co'], 'unknown operator command "promote"'],
      [['operator', 'login', 'a@b.co', '--password', 'x'], '--password'],
    ];
    const runs = await runAll(cases.map(([args]) => args));
    runs.forEach(({ r, args, dir }, i) => {
      const what = args.join(' ');
      expect(r.code, what).toBe(2);
      expect(r.stdout, what).toBe('');
      expect(r.stderr, what).toContain(cases[i]![1]);
      expect(r.stderr, what).toMatch(/^platform-edge/);
      expect(r.stderr, what).not.toMatch(STACK);
      expect(readdirSync(dir), what).toEqual([]);
    });
  });

  it('no command at all prints the usage on stderr and exits 2', async () => {
    const r = await runCli([]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^Usage: platform-edge /);
  });

  it('a bad environment setting is an error (exit 1) with a message naming the variable and no stack trace', async () => {
    const cases: [Record<string, string>, string][] = [
      [{ PLATFORM_EDGE_HTTP: 'carrier-pigeon' }, 'platform-edge serve: PLATFORM_EDGE_HTTP must be auto, uws or node, got "carrier-pigeon"\n'],
      [{ PLATFORM_EDGE_DURABILITY: 'fast' }, 'platform-edge serve: PLATFORM_EDGE_DURABILITY must be normal or full, got "fast"\n'],
      [{ PLATFORM_EDGE_PUBLIC_URL: 'not a url' }, 'platform-edge serve: PLATFORM_EDGE_PUBLIC_URL must be an absolute http(s) URL, got "not a url"\n'],
      [{ PLATFORM_EDGE_PUBLIC_URL: 'ftp://files.example.com' }, 'platform-edge serve: PLATFORM_EDGE_PUBLIC_URL must be an http(s) URL, got "ftp://files.example.com"\n'],
      [{ PLATFORM_EDGE_TRUSTED_PROXIES: '127.0.0.1,proxy.local' }, 'platform-edge serve: PLATFORM_EDGE_TRUSTED_PROXIES: not an address or CIDR range: "proxy.local"\n'],
      [{ PLATFORM_EDGE_MAX_JSON_BODY: '1MB' }, 'platform-edge serve: PLATFORM_EDGE_MAX_JSON_BODY must be a non-negative integer, got "1MB"\n'],
      [{ PLATFORM_EDGE_CHANGE_LOG_KEEP: '0' }, 'platform-edge serve: PLATFORM_EDGE_CHANGE_LOG_KEEP must be at least 1, got 0\n'],
      [{ PLATFORM_EDGE_RATE_LIMIT: 'yes' }, 'platform-edge serve: PLATFORM_EDGE_RATE_LIMIT must be on or off, got "yes"\n'],
    ];
    const runs = await Promise.all(
      cases.map(async ([env]) => {
        const tmp = tempDir();
        return { tmp, r: await runCli(['serve', '--ephemeral', '--port', '0'], { env: { ...env, TMPDIR: tmp } }) };
      }),
    );
    runs.forEach(({ tmp, r }, i) => {
      const what = JSON.stringify(cases[i]![0]);
      expect(r.code, what).toBe(1);
      expect(readdirSync(tmp), what).toEqual([]);
      expect(r.stdout, what).toBe('');
      expect(r.stderr, what).toBe(cases[i]![1]);
      expect(r.stderr, what).not.toMatch(STACK);
    });
  });

  it('a bad environment setting stops the other commands too (exit 1), before the data folder is touched', async () => {
    const dir = tempDir();
    const r = await runCli(['project', 'list', '--data-dir', dir], { env: { PLATFORM_EDGE_DURABILITY: 'fast' } });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('platform-edge project: PLATFORM_EDGE_DURABILITY must be normal or full, got "fast"\n');
    expect(readdirSync(dir)).toEqual([]);
  });
});
