import { BlockList, isIP } from 'node:net';
import { parseAddressRange } from '../core/address-range.js';

/**
 * The client's address: the socket's peer, or — when the peer is a trusted reverse proxy —
 * the address that proxy reports in the forwarding header. With `X-Forwarded-For` the
 * list is read from the right, skipping trusted proxies, so a client cannot pick its own
 * address by sending the header itself (a value it sends is left of what its proxy adds).
 */
export class ClientIp {
  readonly #trusted: BlockList | null;
  readonly #header: string;

  /** `trusted`: addresses and CIDR ranges (`10.0.0.0/8`, `::1`, …); empty: trust no proxy. */
  constructor(trusted: readonly string[], header: string) {
    this.#header = header.toLowerCase();
    if (trusted.length === 0) {
      this.#trusted = null;
      return;
    }
    const list = new BlockList();
    for (const entry of trusted) {
      const r = parseAddressRange(entry);
      if (r.bits === null) list.addAddress(r.address, r.type);
      else list.addSubnet(r.address, r.bits, r.type);
    }
    this.#trusted = list;
  }

  of(peer: string, headers: Readonly<Record<string, string>>): string {
    if (this.#trusted === null || !this.#isTrusted(peer)) return peer;
    const value = headers[this.#header];
    if (value === undefined) return peer;
    const hops = value.split(',').map((s) => s.trim());
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i]!;
      if (isIP(hop) === 0) return peer;
      if (!this.#isTrusted(hop)) return hop;
    }
    return hops[0] ?? peer;
  }

  #isTrusted(addr: string): boolean {
    const family = isIP(addr);
    if (family === 0) return false;
    // note: an IPv4 peer on a dual-stack socket arrives as ::ffff:a.b.c.d.
    const v4 = family === 6 && addr.toLowerCase().startsWith('::ffff:') && isIP(addr.slice(7)) === 4 ? addr.slice(7) : null;
    return v4 !== null ? this.#trusted!.check(v4, 'ipv4') : this.#trusted!.check(addr, family === 6 ? 'ipv6' : 'ipv4');
  }
}
