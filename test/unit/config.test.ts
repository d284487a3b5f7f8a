import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, publicUrl } from '../../src/config.js';

// The settings table of docs/operations.md "Environment": each default, each variable read,
// and each malformed value refused with a message naming the variable.

describe('loadConfig defaults (docs/operations.md "Environment")', () => {
  it('with no flag and no variable', () => {
    const c = loadConfig({}, {});
    expect({
      host: c.host,
      port: c.port,
      dataDir: c.dataDir,
      publicUrl: c.publicUrl,
      durability: c.durability,
      http: c.http,
      maxJsonBody: c.maxJsonBody,
      maxJsonDepth: c.maxJsonDepth,
      corsOrigins: c.corsOrigins,
      projectIdleMs: c.projectIdleMs,
      maxOpenProjects: c.maxOpenProjects,
      controlPollMs: c.controlPollMs,
      geoHeaders: c.geoHeaders,
      masterKey: c.masterKey,
      authAccessTtlS: c.authAccessTtlS,
      authRefreshTtlS: c.authRefreshTtlS,
      rateLimit: c.rateLimit,
      trustedProxies: c.trustedProxies,
      clientIpHeader: c.clientIpHeader,
      changeLogKeep: c.changeLogKeep,
    }).toEqual({
      host: '127.0.0.1',
      port: 8787,
      dataDir: resolve('./.platform-edge'),
      publicUrl: null,
      durability: 'normal',
      http: 'auto',
      maxJsonBody: 1_048_576,
      maxJsonDepth: 64,
      corsOrigins: ['*'],
      projectIdleMs: 600_000,
      maxOpenProjects: 256,
      controlPollMs: 250,
      geoHeaders: {
        lat: ['cf-iplatitude', 'x-vercel-ip-latitude'],
        lon: ['cf-iplongitude', 'x-vercel-ip-longitude'],
        country: ['cf-ipcountry', 'x-vercel-ip-country'],
      },
      masterKey: null,
      authAccessTtlS: 900,
      authRefreshTtlS: 2_592_000,
      rateLimit: { enabled: true, windowS: 300, login: 30, register: 30, refresh: 120, anonymous: 30, perEmail: 10 },
      trustedProxies: [],
      clientIpHeader: 'x-forwarded-for',
      changeLogKeep: 100_000,
    });
    expect(Object.isFrozen(c)).toBe(true);
  });
});

describe('loadConfig from the environment', () => {
  it('reads every variable of the table', () => {
    const c = loadConfig(
      {},
      {
        PLATFORM_EDGE_DATA: '/tmp/pe-data',
        PLATFORM_EDGE_HOST: '0.0.0.0',
        PLATFORM_EDGE_PORT: '9000',
        PLATFORM_EDGE_PUBLIC_URL: 'https://api.example.com/',
        PLATFORM_EDGE_DURABILITY: 'full',
        PLATFORM_EDGE_HTTP: 'node',
        PLATFORM_EDGE_MASTER_KEY: 'k',
        PLATFORM_EDGE_MAX_JSON_BODY: '2048',
        PLATFORM_EDGE_CORS_ORIGINS: 'https://a.example, https://b.example,',
        PLATFORM_EDGE_PROJECT_IDLE_MS: '1000',
        PLATFORM_EDGE_MAX_OPEN_PROJECTS: '3',
        PLATFORM_EDGE_GEO_LAT_HEADERS: 'x-lat',
        PLATFORM_EDGE_GEO_LON_HEADERS: 'x-lon',
        PLATFORM_EDGE_GEO_COUNTRY_HEADERS: 'x-country',
        PLATFORM_EDGE_TRUSTED_PROXIES: '10.0.0.0/8,::1',
        PLATFORM_EDGE_CLIENT_IP_HEADER: 'x-real-ip',
        PLATFORM_EDGE_CHANGE_LOG_KEEP: '5',
        PLATFORM_EDGE_AUTH_REFRESH_TTL_S: '60',
        PLATFORM_EDGE_RATE_LIMIT: 'off',
        PLATFORM_EDGE_RATE_LIMIT_WINDOW_S: '10',
        PLATFORM_EDGE_RATE_LIMIT_LOGIN: '1',
        PLATFORM_EDGE_RATE_LIMIT_REGISTER: '2',
        PLATFORM_EDGE_RATE_LIMIT_REFRESH: '3',
        PLATFORM_EDGE_RATE_LIMIT_ANONYMOUS: '4',
        PLATFORM_EDGE_RATE_LIMIT_PER_EMAIL: '5',
      },
    );
    expect(c).toMatchObject({
      dataDir: '/tmp/pe-data',
      host: '0.0.0.0',
      port: 9000,
      publicUrl: 'https://api.example.com',
      durability: 'full',
      http: 'node',
      masterKey: 'k',
      maxJsonBody: 2048,
      corsOrigins: ['https://a.example', 'https://b.example'],
      projectIdleMs: 1000,
      maxOpenProjects: 3,
      geoHeaders: { lat: ['x-lat'], lon: ['x-lon'], country: ['x-country'] },
      trustedProxies: ['10.0.0.0/8', '::1'],
      clientIpHeader: 'x-real-ip',
      changeLogKeep: 5,
      authRefreshTtlS: 60,
      rateLimit: { enabled: false, windowS: 10, login: 1, register: 2, refresh: 3, anonymous: 4, perEmail: 5 },
    });
  });

  it('flags (overrides) win over the environment', () => {
    const c = loadConfig({ port: 1234, durability: 'normal', publicUrl: 'http://flag.example/' }, { PLATFORM_EDGE_PORT: '9000', PLATFORM_EDGE_DURABILITY: 'full', PLATFORM_EDGE_PUBLIC_URL: 'https://env.example' });
    expect([c.port, c.durability, c.publicUrl]).toEqual([1234, 'normal', 'http://flag.example']);
  });

  it('an empty durability or public URL counts as unset', () => {
    const c = loadConfig({}, { PLATFORM_EDGE_DURABILITY: '', PLATFORM_EDGE_PUBLIC_URL: '' });
    expect([c.durability, c.publicUrl]).toEqual(['normal', null]);
  });

  it.each([
    [{ PLATFORM_EDGE_DURABILITY: 'fast' }, 'PLATFORM_EDGE_DURABILITY must be normal or full, got "fast"'],
    [{ PLATFORM_EDGE_DURABILITY: 'FULL' }, 'PLATFORM_EDGE_DURABILITY must be normal or full, got "FULL"'],
    [{ PLATFORM_EDGE_PUBLIC_URL: 'api.example.com' }, 'PLATFORM_EDGE_PUBLIC_URL must be an absolute http(s) URL, got "api.example.com"'],
    [{ PLATFORM_EDGE_PUBLIC_URL: 'ws://api.example.com' }, 'PLATFORM_EDGE_PUBLIC_URL must be an http(s) URL, got "ws://api.example.com"'],
    [{ PLATFORM_EDGE_HTTP: 'uWS' }, 'PLATFORM_EDGE_HTTP must be auto, uws or node, got "uWS"'],
    [{ PLATFORM_EDGE_PORT: '80a' }, 'PLATFORM_EDGE_PORT must be a non-negative integer, got "80a"'],
    [{ PLATFORM_EDGE_PORT: '70000' }, 'the port must be 0-65535, got 70000'],
    [{ PLATFORM_EDGE_MAX_JSON_BODY: '-1' }, 'PLATFORM_EDGE_MAX_JSON_BODY must be a non-negative integer, got "-1"'],
    [{ PLATFORM_EDGE_CHANGE_LOG_KEEP: '0' }, 'PLATFORM_EDGE_CHANGE_LOG_KEEP must be at least 1, got 0'],
    [{ PLATFORM_EDGE_TRUSTED_PROXIES: '10.0.0.0/99x' }, 'PLATFORM_EDGE_TRUSTED_PROXIES: not an address or CIDR range: "10.0.0.0/99x"'],
    [{ PLATFORM_EDGE_RATE_LIMIT: 'true' }, 'PLATFORM_EDGE_RATE_LIMIT must be on or off, got "true"'],
    [{ PLATFORM_EDGE_RATE_LIMIT_LOGIN: '0' }, 'PLATFORM_EDGE_RATE_LIMIT_LOGIN must be at least 1'],
  ] as [NodeJS.ProcessEnv, string][])('%o is refused: %s', (env, message) => {
    expect(() => loadConfig({}, env)).toThrow(new Error(message));
  });
});

describe('publicUrl (--public-url and PLATFORM_EDGE_PUBLIC_URL alike)', () => {
  it('keeps an absolute http(s) URL without surrounding white space or trailing slashes', () => {
    expect(publicUrl('https://api.example.com', 'X')).toBe('https://api.example.com');
    expect(publicUrl(' https://api.example.com/base// \n', 'X')).toBe('https://api.example.com/base');
    expect(publicUrl('http://127.0.0.1:8787/', 'X')).toBe('http://127.0.0.1:8787');
  });

  it('refuses anything else, naming the setting', () => {
    expect(() => publicUrl('', '--public-url')).toThrow(new Error('--public-url must be an absolute http(s) URL, got ""'));
    expect(() => publicUrl('/relative', '--public-url')).toThrow(new Error('--public-url must be an absolute http(s) URL, got "/relative"'));
    expect(() => publicUrl('mailto:a@b.co', 'PLATFORM_EDGE_PUBLIC_URL')).toThrow(new Error('PLATFORM_EDGE_PUBLIC_URL must be an http(s) URL, got "mailto:a@b.co"'));
  });
});
