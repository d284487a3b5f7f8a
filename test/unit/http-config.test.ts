import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';

// The connection settings of docs/operations.md, "Connections and timeouts": defaults, env, flags.
describe('connection timeouts and caps in Config', () => {
  it('has the documented defaults', () => {
    const c = loadConfig({}, {});
    expect([c.headersTimeoutMs, c.requestTimeoutMs, c.keepAliveTimeoutMs, c.maxConnections, c.maxConnectionsPerIp]).toEqual([10_000, 30_000, 10_000, 10_000, 4096]);
  });

  it('reads each from its variable; a flag (override) wins', () => {
    const env = {
      PLATFORM_EDGE_HEADERS_TIMEOUT_MS: '2000',
      PLATFORM_EDGE_REQUEST_TIMEOUT_MS: '0',
      PLATFORM_EDGE_KEEP_ALIVE_TIMEOUT_MS: '3000',
      PLATFORM_EDGE_MAX_CONNECTIONS: '0',
      PLATFORM_EDGE_MAX_CONNECTIONS_PER_IP: '7',
    };
    const c = loadConfig({}, env);
    expect([c.headersTimeoutMs, c.requestTimeoutMs, c.keepAliveTimeoutMs, c.maxConnections, c.maxConnectionsPerIp]).toEqual([2000, 0, 3000, 0, 7]);
    expect(loadConfig({ maxConnectionsPerIp: 9 }, env).maxConnectionsPerIp).toBe(9);
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('refuses a malformed value, naming the variable, and a request timeout shorter than the headers timeout', () => {
    expect(() => loadConfig({}, { PLATFORM_EDGE_MAX_CONNECTIONS: 'many' })).toThrow('PLATFORM_EDGE_MAX_CONNECTIONS must be a non-negative integer, got "many"');
    expect(() => loadConfig({}, { PLATFORM_EDGE_HEADERS_TIMEOUT_MS: '0' })).toThrow('PLATFORM_EDGE_HEADERS_TIMEOUT_MS must be at least 1, got 0');
    expect(() => loadConfig({ requestTimeoutMs: 500, headersTimeoutMs: 1000 }, {})).toThrow('the request timeout (500 ms) must be 0 or at least the headers timeout (1000 ms)');
  });
});
