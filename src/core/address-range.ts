import { isIP } from 'node:net';

/** `a.b.c.d`, `::1`, `10.0.0.0/8`, … — throws on anything else (config.ts checks settings with it). */
export function parseAddressRange(entry: string): { address: string; bits: number | null; type: 'ipv4' | 'ipv6' } {
  const [address = '', bits] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || (bits !== undefined && !/^\d{1,3}$/.test(bits))) throw new Error(`not an address or CIDR range: "${entry}"`);
  return { address, bits: bits === undefined ? null : Number(bits), type: family === 6 ? 'ipv6' : 'ipv4' };
}
