import diagnostics from 'node:diagnostics_channel';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig, type OutboundPurpose } from '../../src/config.js';
import { EdgeError, statusOf, toHttp } from '../../src/core/errors.js';
import { blockedRange } from '../../src/net/address-guard.js';
import { OutboundClient, type OutboundSettings, type Resolver } from '../../src/net/outbound.js';

// The SSRF guard of the outbound client (src/net/). Real servers on 127.0.0.1 only: every
// other address in here is refused before a socket exists, which the `net.client.socket`
// diagnostics channel proves (no connection is ever attempted to 10.x, 169.254.x, …).

const SETTINGS: OutboundSettings = {
  outboundLoopback: ['webhook'],
  outboundConnectTimeoutMs: 2000,
  outboundTimeoutMs: 5000,
  outboundMaxResponseBytes: 64 * 1024,
};

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

let server: Server;
let port: number;
let connections = 0;
let seen: Seen[] = [];
const open = new Set<ServerResponse>();

function handle(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString() });
    const path = req.url!;
    const redirect = (location: string, status = 302): void => {
      res.writeHead(status, { location, 'content-length': '0' });
      res.end();
    };
    if (path === '/hook') {
      res.writeHead(201, { 'content-type': 'application/json', 'x-reply': 'yes' });
      res.end(JSON.stringify({ got: chunks.length > 0 }));
    } else if (path === '/to-metadata') redirect('http://169.254.169.254/latest/meta-data');
    else if (path === '/to-private') redirect('https://10.0.0.1/admin');
    else if (path === '/to-decimal') redirect(`http://2130706433:${port}/hook`);
    else if (path === '/to-mapped') redirect(`http://[::ffff:127.0.0.1]:${port}/hook`);
    else if (path === '/to-relative') redirect('/hook', 307);
    else if (path === '/to-localhost') redirect(`http://localhost:${port}/hook`, 307);
    else if (path === '/see-other') redirect('/hook', 303);
    else if (path === '/loop') redirect('/loop');
    else if (path === '/big') {
      res.writeHead(200, { 'content-length': String(100_000) });
      res.end(Buffer.alloc(100_000, 'x'));
    } else if (path === '/big-chunked') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(16 * 1024, 'y');
      let sent = 0;
      const write = (): void => {
        while (sent < 1024 * 1024 && !res.destroyed) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', write);
        }
        res.end();
      };
      res.on('close', () => (sent = Infinity));
      write();
    } else if (path === '/stale') {
      // A kept-alive connection the server drops when the next request arrives on it, unanswered.
      const sock = req.socket as typeof req.socket & { served?: number };
      sock.served = (sock.served ?? 0) + 1;
      if (sock.served > 1) return void sock.destroy();
      res.writeHead(200, { 'content-length': '2' });
      res.end('ok');
    } else if (path === '/slow') {
      open.add(res); // never answered; closed in afterAll
    } else {
      res.writeHead(404);
      res.end();
    }
  });
}

beforeAll(async () => {
  server = createServer(handle);
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const res of open) res.destroy();
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

beforeEach(() => {
  connections = 0;
  seen = [];
});

/** Counts every client socket this process creates while `fn` runs. */
async function socketsDuring(fn: () => Promise<unknown>): Promise<number> {
  let n = 0;
  const count = (): void => void n++;
  diagnostics.subscribe('net.client.socket', count);
  try {
    await fn();
  } finally {
    diagnostics.unsubscribe('net.client.socket', count);
  }
  return n;
}

async function failure(p: Promise<unknown>): Promise<EdgeError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof EdgeError) return err;
    throw err;
  }
  throw new Error('expected the request to fail');
}

/** A resolver that answers from a table and records what it was asked. */
function fakeDns(answers: Record<string, string[][]>): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const resolve = async (host: string): Promise<{ address: string; family: number }[]> => {
    calls.push(host);
    const list = answers[host];
    if (list === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    const n = calls.filter((c) => c === host).length;
    return list[Math.min(n, list.length) - 1]!.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(resolve, { calls });
}

describe('address guard', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.255', 'cgnat'],
    ['0.0.0.0', 'this-network'],
    ['0.1.2.3', 'this-network'],
    ['255.255.255.255', 'broadcast'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.0.8', 'ietf-protocol'],
    ['192.0.2.1', 'documentation'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['198.18.0.1', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['192.88.99.1', '6to4-relay'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::FFFF:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:0:a9fe:a9fe', 'link-local'],
    ['::127.0.0.1', 'loopback'],
    ['::8.8.8.8', 'ipv4-compatible'],
    ['64:ff9b::a00:1', 'private'],
    ['64:ff9b::127.0.0.1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['2002:7f00:1::', 'loopback'],
    ['2002:a9fe:a9fe::1', 'link-local'],
    ['2002:c0a8:101::1', 'private'],
    ['fd00::1', 'unique-local'],
    ['fc00::1', 'unique-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf::1', 'link-local'],
    ['fec0::1', 'site-local'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'documentation'],
    ['3fff::1', 'documentation'],
    ['2001::1', 'ietf-protocol'],
    ['100::1', 'discard'],
    ['64:ff9b:1::1', 'nat64-local'],
    ['4000::1', 'reserved'],
    ['::2', 'this-network'],
    ['example.com', 'not-an-address'],
    ['0177.0.0.1', 'not-an-address'],
  ])('refuses %s (%s)', (address, range) => {
    expect(blockedRange(address)).toBe(range);
  });

  it.each(['93.184.216.34', '8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '11.0.0.1', '64:ff9b::5db8:d822', '64:ff9b::93.184.216.34', '2002:5db8:d822::1', '::ffff:93.184.216.34', '2606:4700:4700::1111', '2a00:1450:4001::200e'])(
    'allows the public address %s',
    (address) => {
      expect(blockedRange(address)).toBeNull();
    },
  );
});

describe('URL policy (checkUrl, no connection)', () => {
  const client = new OutboundClient(SETTINGS);
  const refused = (purpose: OutboundPurpose, url: string): { code: string; reason: unknown; range: unknown; message: string } => {
    try {
      client.checkUrl(purpose, url);
    } catch (err) {
      const e = err as EdgeError;
      return { code: e.code, reason: e.details?.reason, range: e.details?.range, message: e.message };
    }
    throw new Error(`${url} was allowed`);
  };

  // http:// is for the three loopback hosts written exactly so; any other spelling of them is refused.
  it.each([
    'http://2130706433/',
    'http://0177.0.0.1/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::ffff:7f00:1]/',
    'http://169.254.169.254/latest/meta-data',
    'http://0x7f.1/',
    'http://127.1/',
    'http://127.0.0.2/',
    'http://[fd00::1]/',
    'http://[0:0:0:0:0:0:0:1]/',
    'http://localhost./',
    'http://%6c%6fcalhost/',
    'http://example.com/',
  ])('webhook: refuses %s (http:// to a host not written 127.0.0.1, localhost or [::1])', (url) => {
    expect(refused('webhook', url)).toMatchObject({ code: 'outbound_blocked', reason: 'scheme' });
  });

  it.each([
    ['https://10.0.0.1/', 'private'],
    ['https://169.254.169.254/latest/meta-data', 'link-local'],
    ['https://2130706433/', 'loopback'],
    ['https://0x7f.1/', 'loopback'],
    ['https://[::ffff:127.0.0.1]/', 'loopback'],
    ['https://[::ffff:a9fe:a9fe]/', 'link-local'],
    ['https://[fd00::1]/', 'unique-local'],
    ['https://[fe80::1]/', 'link-local'],
    ['https://100.64.1.1/', 'cgnat'],
    ['https://198.18.0.1/', 'benchmarking'],
    ['https://0.0.0.0/', 'this-network'],
    ['https://[::]/', 'unspecified'],
    ['https://[64:ff9b::10.0.0.1]/', 'private'],
    ['https://[2002:7f00:1::1]/', 'loopback'],
  ])('refuses the https:// address of %s (%s) before resolving', (url, range) => {
    expect(refused('webhook', url)).toMatchObject({ code: 'outbound_blocked', reason: 'address', range });
  });

  it.each(['https://localhost./', 'https://app.localhost/', 'https://LOCALHOST.:8443/'])('refuses %s as the server itself', (url) => {
    expect(refused('webhook', url)).toMatchObject({ code: 'outbound_blocked', reason: 'host' });
  });

  it.each(['http://evil@127.0.0.1/', 'http://user:pw@localhost/', 'https://@example.com/', 'https://example.com@10.0.0.1/'])('refuses credentials in %s', (url) => {
    expect(refused('webhook', url)).toMatchObject({ code: 'outbound_blocked', reason: 'userinfo' });
  });

  it.each([
    ['ftp://example.com/', 'scheme'],
    ['file:///etc/passwd', 'scheme'],
    ['gopher://127.0.0.1:25/', 'scheme'],
    ['javascript:alert(1)', 'scheme'],
    ['http:127.0.0.1/', 'url'],
    ['https:/example.com/', 'url'],
    ['http:/\\127.0.0.1/', 'url'],
    ['http://127.0.0.1\t/', 'url'],
    ['http://127.0.0.1\n.evil/', 'url'],
    ['https://exa mple.com/', 'url'],
    ['/relative', 'url'],
    [`https://example.com/${'a'.repeat(9000)}`, 'url'],
  ])('refuses the malformed or foreign URL %j', (url, reason) => {
    expect(refused('webhook', url)).toMatchObject({ code: 'outbound_blocked', reason });
  });

  it('allows the three loopback hosts to webhooks (case-insensitive names: LOCALHOST is localhost)', () => {
    for (const url of [`http://127.0.0.1:8080/hook`, 'http://localhost/x', 'http://[::1]:9/', 'http://LOCALHOST/', 'https://localhost:8443/']) {
      expect(client.checkUrl('webhook', url).loopback).toBe(true);
    }
    expect(client.checkUrl('webhook', 'http://[::1]:9/').host).toBe('::1');
  });

  it('allows https:// to a public name or address (the policy decision; nothing is connected)', () => {
    expect(client.checkUrl('function', 'https://example.com/x?y=1')).toMatchObject({ host: 'example.com', loopback: false });
    expect(client.checkUrl('push', 'https://93.184.216.34/')).toMatchObject({ host: '93.184.216.34', loopback: false });
    expect(client.checkUrl('oidc', 'https://[2606:4700:4700::1111]/.well-known/openid-configuration').host).toBe('2606:4700:4700::1111');
    expect(client.checkUrl('oidc', 'https://bücher.example/').host).toBe('xn--bcher-kva.example');
  });

  it('refuses the loopback hosts to every other purpose unless the setting names it', () => {
    for (const purpose of ['function', 'push', 'oidc'] as const) {
      expect(refused(purpose, 'http://127.0.0.1:8080/')).toEqual({
        code: 'outbound_blocked',
        reason: 'host',
        range: undefined,
        message: `requests of purpose ${purpose} may not go to the server's own host (PLATFORM_EDGE_OUTBOUND_LOOPBACK)`,
      });
      expect(refused(purpose, 'https://localhost/')).toMatchObject({ code: 'outbound_blocked', reason: 'host' });
      expect(refused(purpose, 'https://127.0.0.1/')).toMatchObject({ code: 'outbound_blocked', reason: 'address', range: 'loopback' });
    }
    const fn = new OutboundClient({ ...SETTINGS, outboundLoopback: ['function'] });
    expect(fn.checkUrl('function', 'http://127.0.0.1:8080/').loopback).toBe(true);
    const off = new OutboundClient({ ...SETTINGS, outboundLoopback: [] });
    expect(() => off.checkUrl('webhook', 'http://localhost/')).toThrow("requests of purpose webhook may not go to the server's own host");
  });

  it('maps the codes to their statuses and the error envelope', () => {
    expect([statusOf('outbound_blocked'), statusOf('provider_unreachable'), statusOf('provider_timeout'), statusOf('response_too_large')]).toEqual([400, 502, 504, 502]);
    let err: unknown;
    try {
      client.checkUrl('webhook', 'http://169.254.169.254/latest/meta-data');
    } catch (e) {
      err = e;
    }
    expect(toHttp(err, 'r1')).toEqual({
      status: 400,
      headers: {},
      body: { error: { code: 'outbound_blocked', message: 'only https:// URLs are allowed (http:// only to a host written 127.0.0.1, localhost or [::1])' } },
    });
  });
});

describe('settings', () => {
  it('lets only webhooks reach the loopback hosts by default; PLATFORM_EDGE_OUTBOUND_LOOPBACK changes it', () => {
    const c = loadConfig({}, {});
    expect(c.outboundLoopback).toEqual(['webhook']);
    expect([c.outboundConnectTimeoutMs, c.outboundTimeoutMs, c.outboundMaxResponseBytes]).toEqual([5000, 15_000, 5 * 1024 * 1024]);
    expect(Object.isFrozen(c.outboundLoopback)).toBe(true);
    expect(loadConfig({}, { PLATFORM_EDGE_OUTBOUND_LOOPBACK: 'none' }).outboundLoopback).toEqual([]);
    expect(loadConfig({}, { PLATFORM_EDGE_OUTBOUND_LOOPBACK: 'function, webhook' }).outboundLoopback).toEqual(['function', 'webhook']);
    expect(() => loadConfig({}, { PLATFORM_EDGE_OUTBOUND_LOOPBACK: 'all' })).toThrow(
      'PLATFORM_EDGE_OUTBOUND_LOOPBACK must be none or a list of webhook, function, push, oidc, got "all"',
    );
    expect(() => loadConfig({}, { PLATFORM_EDGE_OUTBOUND_TIMEOUT_MS: '0' })).toThrow('PLATFORM_EDGE_OUTBOUND_TIMEOUT_MS must be at least 1, got 0');
    const set = loadConfig({}, { PLATFORM_EDGE_OUTBOUND_CONNECT_TIMEOUT_MS: '100', PLATFORM_EDGE_OUTBOUND_TIMEOUT_MS: '200', PLATFORM_EDGE_OUTBOUND_MAX_RESPONSE_BYTES: '300' });
    expect([set.outboundConnectTimeoutMs, set.outboundTimeoutMs, set.outboundMaxResponseBytes]).toEqual([100, 200, 300]);
  });
});

describe('requests (local servers on 127.0.0.1 only)', () => {
  it('delivers a webhook to http://127.0.0.1:PORT with its body and headers, and returns the answer', async () => {
    const client = new OutboundClient(SETTINGS);
    const res = await client.request({
      purpose: 'webhook',
      url: `http://127.0.0.1:${port}/hook`,
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'webhook-id': 'msg_1', host: 'evil.example', 'transfer-encoding': 'chunked' },
      body: '{"type":"db.insert"}',
    });
    expect(res).toEqual({
      status: 201,
      headers: expect.objectContaining({ 'content-type': 'application/json', 'x-reply': 'yes' }) as Record<string, string>,
      body: Buffer.from('{"got":true}'),
      url: `http://127.0.0.1:${port}/hook`,
      redirects: 0,
    });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/hook', body: '{"type":"db.insert"}' });
    expect(seen[0]!.headers).toMatchObject({
      host: `127.0.0.1:${port}`,
      'content-type': 'application/json',
      'content-length': '20',
      'webhook-id': 'msg_1',
      'user-agent': expect.stringMatching(/^platform-edge\/\d+\.\d+\.\d+/) as string,
    });
    expect(seen[0]!.headers['transfer-encoding']).toBeUndefined();
  });

  it('refuses a function fetch to the same address before connecting, unless the setting allows it', async () => {
    const client = new OutboundClient(SETTINGS);
    let err: EdgeError | undefined;
    const sockets = await socketsDuring(async () => {
      err = await failure(client.request({ purpose: 'function', url: `http://127.0.0.1:${port}/hook` }));
    });
    expect(err!.code).toBe('outbound_blocked');
    expect(err!.message).toBe("requests of purpose function may not go to the server's own host (PLATFORM_EDGE_OUTBOUND_LOOPBACK)");
    expect(sockets).toBe(0);
    expect(connections).toBe(0);

    const allowed = new OutboundClient({ ...SETTINGS, outboundLoopback: ['function'] });
    const res = await allowed.request({ purpose: 'function', url: `http://127.0.0.1:${port}/hook` });
    expect(res.status).toBe(201);
    expect(connections).toBe(1);
  });

  it('refuses the whole corpus without creating a socket or asking DNS', async () => {
    const dns = fakeDns({});
    const client = new OutboundClient(SETTINGS, { resolve: dns });
    const corpus = [
      `http://2130706433:${port}/hook`,
      `http://0177.0.0.1:${port}/hook`,
      `http://[::ffff:127.0.0.1]:${port}/hook`,
      `http://[::ffff:7f00:1]:${port}/hook`,
      'http://169.254.169.254/latest/meta-data',
      'https://169.254.169.254/latest/meta-data',
      `http://0x7f.1:${port}/hook`,
      `http://127.1:${port}/hook`,
      'https://10.0.0.1/',
      'http://[fd00::1]/',
      'https://[fd00::1]/',
      `http://localhost.:${port}/hook`,
      `http://evil@127.0.0.1:${port}/hook`,
      `https://2130706433:${port}/hook`,
    ];
    const codes: string[] = [];
    const sockets = await socketsDuring(async () => {
      for (const url of corpus) codes.push((await failure(client.request({ purpose: 'webhook', url }))).code);
    });
    expect(codes).toEqual(corpus.map(() => 'outbound_blocked'));
    expect(sockets).toBe(0);
    expect(connections).toBe(0);
    expect(dns.calls).toEqual([]);
  });

  it('LOCALHOST is the name localhost: allowed to a webhook', async () => {
    const client = new OutboundClient(SETTINGS, { resolve: fakeDns({ localhost: [['127.0.0.1']] }) });
    expect((await client.request({ purpose: 'webhook', url: `http://LOCALHOST:${port}/hook` })).status).toBe(201);
  });

  it('refuses a name that resolves to a private or loopback address (rebinding), before connecting', async () => {
    const dns = fakeDns({
      'rebind.test': [['127.0.0.1']],
      'metadata.test': [['169.254.169.254']],
      'mixed.test': [['93.184.216.34', '10.0.0.1']],
      'mapped.test': [['::ffff:127.0.0.1']],
      'ula.test': [['fd12:3456::1']],
    });
    const client = new OutboundClient(SETTINGS, { resolve: dns });
    const results: [string, unknown][] = [];
    const sockets = await socketsDuring(async () => {
      for (const host of ['rebind.test', 'metadata.test', 'mixed.test', 'mapped.test', 'ula.test']) {
        const e = await failure(client.request({ purpose: 'function', url: `https://${host}:${port}/` }));
        results.push([e.code, e.details?.range]);
      }
    });
    expect(results).toEqual([
      ['outbound_blocked', 'loopback'],
      ['outbound_blocked', 'link-local'],
      ['outbound_blocked', 'private'],
      ['outbound_blocked', 'loopback'],
      ['outbound_blocked', 'unique-local'],
    ]);
    expect(sockets).toBe(0);
    expect(dns.calls).toEqual(['rebind.test', 'metadata.test', 'mixed.test', 'mapped.test', 'ula.test']);
  });

  it('resolves a name once and pins the socket to the checked address (a second answer is never used)', async () => {
    // The resolver answers localhost with 127.0.0.2, where a second server listens (the
    // system's answer, 127.0.0.1 or ::1, has nothing on that port); a later lookup would
    // answer 127.0.0.1. The request reaches 127.0.0.2, with the name in Host, and DNS was
    // asked once: the socket went where the checked answer said.
    const other = createServer(handle);
    await new Promise<void>((r) => other.listen(0, '127.0.0.2', r));
    const otherPort = (other.address() as AddressInfo).port;
    try {
      const dns = fakeDns({ localhost: [['127.0.0.2'], ['127.0.0.1']] });
      const client = new OutboundClient(SETTINGS, { resolve: dns });
      const res = await client.request({ purpose: 'webhook', url: `http://localhost:${otherPort}/hook` });
      expect(res.status).toBe(201);
      expect(seen.map((s) => [s.url, s.headers.host])).toEqual([['/hook', `localhost:${otherPort}`]]);
      expect(connections).toBe(0);
      expect(dns.calls).toEqual(['localhost']);
    } finally {
      other.closeAllConnections();
      await new Promise<void>((r) => other.close(() => r()));
    }
  });

  it('refuses localhost when it resolves to anything but loopback', async () => {
    const client = new OutboundClient(SETTINGS, { resolve: fakeDns({ localhost: [['127.0.0.1', '10.0.0.5']] }) });
    const sockets = await socketsDuring(async () => {
      const e = await failure(client.request({ purpose: 'webhook', url: `http://localhost:${port}/hook` }));
      expect([e.code, e.details]).toEqual(['outbound_blocked', { reason: 'address', range: 'private' }]);
    });
    expect(sockets).toBe(0);
  });

  it('answers a name that does not resolve with provider_unreachable', async () => {
    const client = new OutboundClient(SETTINGS, { resolve: fakeDns({}) });
    const e = await failure(client.request({ purpose: 'oidc', url: 'https://nowhere.test/.well-known/openid-configuration' }));
    expect([e.code, e.status, e.details, e.message]).toEqual(['provider_unreachable', 502, { reason: 'dns' }, 'could not resolve the host nowhere.test']);
  });

  it('does not follow a redirect unless asked', async () => {
    const client = new OutboundClient(SETTINGS);
    const res = await client.request({ purpose: 'webhook', url: `http://127.0.0.1:${port}/to-metadata` });
    expect([res.status, res.headers.location, res.redirects]).toEqual([302, 'http://169.254.169.254/latest/meta-data', 0]);
    expect(connections).toBe(1);
  });

  it.each([
    ['/to-metadata', 'scheme'],
    ['/to-private', 'address'],
    ['/to-decimal', 'scheme'],
    ['/to-mapped', 'scheme'],
  ])('checks each hop again: a redirect from %s is refused before its connection', async (path, reason) => {
    const client = new OutboundClient(SETTINGS);
    let e: EdgeError | undefined;
    const sockets = await socketsDuring(async () => {
      e = await failure(client.request({ purpose: 'webhook', url: `http://127.0.0.1:${port}${path}`, redirect: 'follow' }));
    });
    expect([e!.code, e!.details?.reason]).toEqual(['outbound_blocked', reason]);
    expect(sockets).toBe(1);
    expect(connections).toBe(1);
    expect(seen.map((s) => s.url)).toEqual([path]);
  });

  it('follows allowed redirects (307 keeps the method and body, 303 turns into GET) up to the hop limit', async () => {
    const client = new OutboundClient(SETTINGS);
    const kept = await client.request({ purpose: 'webhook', url: `http://127.0.0.1:${port}/to-relative`, method: 'POST', body: 'x=1', redirect: 'follow' });
    expect([kept.status, kept.url, kept.redirects]).toEqual([201, `http://127.0.0.1:${port}/hook`, 1]);
    expect(seen.map((s) => [s.method, s.url, s.body])).toEqual([
      ['POST', '/to-relative', 'x=1'],
      ['POST', '/hook', 'x=1'],
    ]);
    seen = [];
    await client.request({ purpose: 'webhook', url: `http://127.0.0.1:${port}/see-other`, method: 'POST', body: 'x=1', redirect: 'follow' });
    expect(seen.map((s) => [s.method, s.url, s.body])).toEqual([
      ['POST', '/see-other', 'x=1'],
      ['GET', '/hook', ''],
    ]);
    const e = await failure(client.request({ purpose: 'webhook', url: `http://127.0.0.1:${port}/loop`, redirect: 'follow', maxRedirects: 3 }));
    expect([e.code, e.message]).toEqual(['provider_unreachable', 'more than 3 redirects']);
  });

  it('drops credentials on a redirect to another origin', async () => {
    const client = new OutboundClient(SETTINGS, { resolve: fakeDns({ localhost: [['127.0.0.1']] }) });
    const res = await client.request({
      purpose: 'webhook',
      url: `http://127.0.0.1:${port}/to-localhost`,
      headers: { authorization: 'Bearer secret', 'x-keep': '1' },
      redirect: 'follow',
    });
    expect(res.status).toBe(201);
    expect(seen[0]!.headers.authorization).toBe('Bearer secret');
    expect(seen[1]!.headers).toMatchObject({ host: `localhost:${port}`, 'x-keep': '1' });
    expect(seen[1]!.headers.authorization).toBeUndefined();
  });

  it('aborts a response over the size cap (declared or streamed)', async () => {
    const client = new OutboundClient(SETTINGS);
    const declared = await failure(client.request({ purpose: 'webhook', url: `http://127.0.0.1:${port}/big`, maxResponseBytes: 1000 }));
    expect([declared.code, declared.status, declared.message]).toEqual(['response_too_large', 502, 'the response body exceeds the limit of 1000 bytes']);
    const streamed = await failure(client.request({ purpose: 'webhook', url: `http://127.0.0.1:${port}/big-chunked` }));
    expect([streamed.code, streamed.message]).toEqual(['response_too_large', `the response body exceeds the limit of ${64 * 1024} bytes`]);
    // a per-request cap may only lower the server's
    const raised = await failure(client.request({ purpose: 'webhook', url: `http://127.0.0.1:${port}/big`, maxResponseBytes: 10_000_000 }));
    expect(raised.code).toBe('response_too_large');
  });

  it('truncates instead when asked: the status and the first bytes up to the cap', async () => {
    const client = new OutboundClient(SETTINGS);
    const declared = await client.request({ purpose: 'webhook', url: `http://127.0.0.1:${port}/big`, maxResponseBytes: 1000, overflow: 'truncate' });
    expect([declared.status, declared.body.length]).toEqual([200, 1000]);
    const streamed = await client.request({ purpose: 'webhook', url: `http://127.0.0.1:${port}/big-chunked`, overflow: 'truncate' });
    expect([streamed.status, streamed.body.length]).toEqual([200, 64 * 1024]);
  });

  it('gives up on a server that does not answer in time', async () => {
    const client = new OutboundClient({ ...SETTINGS, outboundTimeoutMs: 300 });
    const e = await failure(client.request({ purpose: 'webhook', url: `http://127.0.0.1:${port}/slow`, timeoutMs: 60_000 }));
    expect([e.code, e.status, e.details, e.message]).toEqual(['provider_timeout', 504, { reason: 'timeout' }, 'the request took longer than 300 ms']);
  });

  it('stops when the caller aborts', async () => {
    const client = new OutboundClient(SETTINGS);
    const ac = new AbortController();
    const p = failure(client.request({ purpose: 'webhook', url: `http://127.0.0.1:${port}/slow`, signal: ac.signal }));
    setTimeout(() => ac.abort(), 50);
    const e = await p;
    expect([e.code, e.details]).toEqual(['provider_unreachable', { reason: 'aborted' }]);
  });

  it('answers network failures with provider_unreachable', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const client = new OutboundClient(SETTINGS);
    const refused = await failure(client.request({ purpose: 'webhook', url: `http://127.0.0.1:${closedPort}/` }));
    expect([refused.code, refused.details, refused.message]).toEqual(['provider_unreachable', { reason: 'connect' }, '127.0.0.1 refused the connection']);
    // https:// to a plain HTTP server: the TLS handshake fails
    const tls = await failure(client.request({ purpose: 'webhook', url: `https://127.0.0.1:${port}/hook` }));
    expect([tls.code, tls.details]).toEqual(['provider_unreachable', { reason: 'tls' }]);
  });

  it('refuses methods it does not send and headers node cannot send', async () => {
    const client = new OutboundClient(SETTINGS);
    const m = await failure(client.request({ purpose: 'webhook', url: `http://127.0.0.1:${port}/hook`, method: 'CONNECT' }));
    expect([m.code, m.message]).toEqual(['outbound_blocked', 'the method CONNECT is not allowed']);
    const h = await failure(client.request({ purpose: 'webhook', url: `http://127.0.0.1:${port}/hook`, headers: { 'x-bad': 'a\r\nb' } }));
    expect(h.code).toBe('invalid_request');
    expect(connections).toBe(0);
  });
});

describe('connection reuse', () => {
  it('reuses a kept-alive connection per purpose and checked address set; close() ends them', async () => {
    const client = new OutboundClient(SETTINGS, { resolve: fakeDns({ localhost: [['127.0.0.1'], ['127.0.0.1'], ['127.0.0.1', '::1']] }) });
    for (let i = 0; i < 3; i++) expect((await client.request({ purpose: 'webhook', url: `http://127.0.0.1:${port}/hook`, method: 'POST', body: 'x' })).status).toBe(201);
    expect(connections).toBe(1);
    expect(client.poolStats).toEqual({ agents: 1, sockets: 0, idle: 1 });
    // The same address by name: another key (another host), so another connection; asked again, the same answer reuses it.
    await client.request({ purpose: 'webhook', url: `http://localhost:${port}/hook` });
    await client.request({ purpose: 'webhook', url: `http://localhost:${port}/hook` });
    expect(connections).toBe(2);
    // A new DNS answer for the name: a new address set, a new connection (never a socket checked for another answer).
    await client.request({ purpose: 'webhook', url: `http://localhost:${port}/hook` });
    expect(connections).toBe(3);
    const fn = new OutboundClient({ ...SETTINGS, outboundLoopback: ['webhook', 'function'] });
    await fn.request({ purpose: 'webhook', url: `http://127.0.0.1:${port}/hook` });
    await fn.request({ purpose: 'function', url: `http://127.0.0.1:${port}/hook` });
    expect(connections).toBe(5);
    fn.close();
    client.close();
    expect(client.poolStats).toEqual({ agents: 0, sockets: 0, idle: 0 });
    // After close a request still goes, on a connection of its own that is not kept.
    await client.request({ purpose: 'webhook', url: `http://127.0.0.1:${port}/hook` });
    expect([connections, client.poolStats.agents]).toEqual([6, 0]);
  });

  it('bounds the keys: past maxAgents the least recently used goes with its idle sockets', async () => {
    const client = new OutboundClient({ ...SETTINGS, outboundLoopback: ['webhook', 'function', 'push'] }, { pool: { maxAgents: 2 } });
    for (const purpose of ['webhook', 'function', 'webhook', 'push'] as const) await client.request({ purpose, url: `http://127.0.0.1:${port}/hook` });
    expect(client.poolStats).toEqual({ agents: 2, sockets: 0, idle: 2 });
    await client.request({ purpose: 'webhook', url: `http://127.0.0.1:${port}/hook` });
    expect(connections).toBe(3);
    client.close();
  });

  it('closes an idle connection after the idle timeout', async () => {
    const client = new OutboundClient(SETTINGS, { pool: { idleMs: 50 } });
    await client.request({ purpose: 'webhook', url: `http://127.0.0.1:${port}/hook` });
    expect(client.poolStats.idle).toBe(1);
    const end = Date.now() + 3000;
    while (client.poolStats.idle > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    expect(client.poolStats.idle).toBe(0);
    await client.request({ purpose: 'webhook', url: `http://127.0.0.1:${port}/hook` });
    expect(connections).toBe(2);
    client.close();
  });

  it('a request cut on a reused idle connection before any answer goes again on a fresh one only when it may be repeated', async () => {
    const client = new OutboundClient(SETTINGS);
    const url = `http://127.0.0.1:${port}/stale`;
    expect((await client.request({ purpose: 'webhook', url, method: 'POST', body: 'a' })).status).toBe(200);
    const again = await client.request({ purpose: 'webhook', url, method: 'POST', body: 'b', atLeastOnce: true });
    expect([again.status, again.body.toString(), connections]).toEqual([200, 'ok', 2]);
    // The fresh connection was not pooled; the first one is gone. Prime a pooled one, then a plain POST.
    expect((await client.request({ purpose: 'webhook', url, method: 'POST', body: 'c' })).status).toBe(200);
    const e = await failure(client.request({ purpose: 'webhook', url, method: 'POST', body: 'd' }));
    expect([e.code, e.details]).toEqual(['provider_unreachable', { reason: 'reset' }]);
    expect(seen.map((x) => x.body)).toEqual(['a', 'b', 'b', 'c', 'd']);
    client.close();
  });
});
