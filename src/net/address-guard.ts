import { BlockList, isIP } from 'node:net';

/**
 * Which addresses the outbound client may connect to: the SSRF guard's address half
 * (outbound.ts holds the URL half). An address is allowed when it is globally routable
 * unicast; everything a request could use to reach the server itself, its network or a
 * cloud metadata service is refused. Ranges: the IANA special-purpose registries
 * (https://www.iana.org/assignments/iana-ipv4-special-registry,
 * https://www.iana.org/assignments/iana-ipv6-special-registry).
 */

/** The name of a refused range, as error messages and `details.range` give it. */
export type BlockedRange =
  | 'unspecified'
  | 'this-network'
  | 'loopback'
  | 'private'
  | 'cgnat'
  | 'link-local'
  | 'ietf-protocol'
  | 'documentation'
  | '6to4-relay'
  | 'benchmarking'
  | 'multicast'
  | 'broadcast'
  | 'reserved'
  | 'unique-local'
  | 'site-local'
  | 'discard'
  | 'nat64-local'
  | 'ipv4-compatible'
  | 'not-an-address';

const V4: [BlockedRange, string, number][] = [
  ['broadcast', '255.255.255.255', 32],
  ['this-network', '0.0.0.0', 8],
  ['private', '10.0.0.0', 8],
  ['cgnat', '100.64.0.0', 10],
  ['loopback', '127.0.0.0', 8],
  ['link-local', '169.254.0.0', 16],
  ['private', '172.16.0.0', 12],
  ['ietf-protocol', '192.0.0.0', 24],
  ['documentation', '192.0.2.0', 24],
  ['6to4-relay', '192.88.99.0', 24],
  ['private', '192.168.0.0', 16],
  ['benchmarking', '198.18.0.0', 15],
  ['documentation', '198.51.100.0', 24],
  ['documentation', '203.0.113.0', 24],
  ['multicast', '224.0.0.0', 4],
  ['reserved', '240.0.0.0', 4],
];

// note: the forms that carry an IPv4 address (mapped, compatible, NAT64, 6to4) are
// unwrapped before this list is consulted; everything outside 2000::/3 (global unicast)
// is refused after it, so this list only names what it refuses.
const V6: [BlockedRange, string, number][] = [
  ['unspecified', '::', 128],
  ['loopback', '::1', 128],
  ['discard', '100::', 64],
  ['nat64-local', '64:ff9b:1::', 48],
  ['documentation', '2001:db8::', 32],
  ['ietf-protocol', '2001::', 23],
  ['documentation', '3fff::', 20],
  ['reserved', '5f00::', 16],
  ['unique-local', 'fc00::', 7],
  ['link-local', 'fe80::', 10],
  ['site-local', 'fec0::', 10],
  ['multicast', 'ff00::', 8],
];

function lists(table: [BlockedRange, string, number][], type: 'ipv4' | 'ipv6'): [BlockedRange, BlockList][] {
  return table.map(([name, address, bits]) => {
    const list = new BlockList();
    list.addSubnet(address, bits, type);
    return [name, list];
  });
}

const V4_LISTS = lists(V4, 'ipv4');
const V6_LISTS = lists(V6, 'ipv6');
const GLOBAL_UNICAST = new BlockList();
GLOBAL_UNICAST.addSubnet('2000::', 3, 'ipv6');

/**
 * The refused range an address lies in, or null when it may be connected to.
 * `address` is an IP address in text (a name is 'not-an-address'); an IPv6 zone
 * (`%eth0`) is ignored.
 */
export function blockedRange(address: string): BlockedRange | null {
  const family = isIP(address);
  if (family === 4) return blockedV4(address);
  const bare = address.split('%')[0]!;
  if (family !== 6 && isIP(bare) !== 6) return 'not-an-address';
  return blockedV6(bare);
}

function blockedV4(address: string): BlockedRange | null {
  for (const [name, list] of V4_LISTS) if (list.check(address, 'ipv4')) return name;
  return null;
}

function blockedV6(address: string): BlockedRange | null {
  const b = ipv6Bytes(address);
  if (b === null) return 'not-an-address';
  const zeros = (from: number, to: number): boolean => b.subarray(from, to).every((x) => x === 0);
  const v4 = (at: number): string => `${b[at]}.${b[at + 1]}.${b[at + 2]}.${b[at + 3]}`;
  // ::ffff:a.b.c.d (mapped: the kernel connects to a.b.c.d) and ::ffff:0:a.b.c.d (SIIT).
  if (zeros(0, 10) && b[10] === 0xff && b[11] === 0xff) return blockedV4(v4(12));
  if (zeros(0, 8) && b[8] === 0xff && b[9] === 0xff && zeros(10, 12)) return blockedV4(v4(12));
  if (zeros(0, 12)) {
    if (zeros(12, 15) && b[15]! <= 1) return b[15] === 0 ? 'unspecified' : 'loopback';
    // note: ::a.b.c.d (IPv4-compatible) is deprecated (RFC 4291 §2.5.5.1): never a real destination.
    return blockedV4(v4(12)) ?? 'ipv4-compatible';
  }
  // 64:ff9b::/96, NAT64 (RFC 6052): reaches the IPv4 address in its last 32 bits.
  if (b[0] === 0 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zeros(4, 12)) return blockedV4(v4(12));
  // 2002::/16, 6to4 (RFC 3056): the relay's IPv4 address in bits 16-47.
  if (b[0] === 0x20 && b[1] === 0x02) return blockedV4(v4(2));
  for (const [name, list] of V6_LISTS) if (list.check(address, 'ipv6')) return name;
  return GLOBAL_UNICAST.check(address, 'ipv6') ? null : 'reserved';
}

/** True for 127.0.0.0/8 and ::1 (and ::ffff:127.x.y.z): where `localhost` may resolve to. */
export function isLoopback(address: string): boolean {
  return blockedRange(address) === 'loopback';
}

/** The 16 bytes of an IPv6 address in text (`::`, a trailing dotted quad), or null. */
function ipv6Bytes(text: string): Uint8Array | null {
  if (isIP(text) !== 6) return null;
  let s = text.toLowerCase();
  const out = new Uint8Array(16);
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(s);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    s = `${s.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = s.split('::');
  const groups = (part: string): string[] => (part === '' ? [] : part.split(':'));
  const h = groups(head);
  const t = tail === undefined ? [] : groups(tail);
  const all = tail === undefined ? h : [...h, ...new Array<string>(8 - h.length - t.length).fill('0'), ...t];
  if (all.length !== 8) return null;
  all.forEach((g, i) => {
    const n = parseInt(g, 16);
    out[i * 2] = n >> 8;
    out[i * 2 + 1] = n & 0xff;
  });
  return out;
}
