import { describe, expect, it } from 'vitest';
import { ClientIp } from '../../src/edge/client-ip.js';

describe('ClientIp', () => {
  const xff = (v: string) => ({ 'x-forwarded-for': v });

  it('trusts no proxy by default: the socket peer, whatever the header says', () => {
    const c = new ClientIp([], 'x-forwarded-for');
    expect(c.of('10.0.0.5', xff('1.2.3.4'))).toBe('10.0.0.5');
  });

  it('behind a trusted proxy, takes the rightmost address that is not a trusted proxy', () => {
    const c = new ClientIp(['10.0.0.0/8', '::1'], 'x-forwarded-for');
    expect(c.of('10.0.0.5', xff('1.2.3.4'))).toBe('1.2.3.4');
    // A client that sends its own X-Forwarded-For cannot choose: its proxy appends the real peer.
    expect(c.of('10.0.0.5', xff('6.6.6.6, 1.2.3.4'))).toBe('1.2.3.4');
    expect(c.of('10.0.0.5', xff('1.2.3.4, 10.1.1.1'))).toBe('1.2.3.4');
    expect(c.of('::1', xff('2001:db8::7'))).toBe('2001:db8::7');
    expect(c.of('::ffff:10.0.0.5', xff('1.2.3.4'))).toBe('1.2.3.4');
  });

  it('ignores the header from an untrusted peer, and a malformed header', () => {
    const c = new ClientIp(['10.0.0.0/8'], 'x-forwarded-for');
    expect(c.of('192.168.1.9', xff('1.2.3.4'))).toBe('192.168.1.9');
    expect(c.of('10.0.0.5', xff('not-an-ip'))).toBe('10.0.0.5');
    expect(c.of('10.0.0.5', {})).toBe('10.0.0.5');
  });

  it('reads another header when configured', () => {
    const c = new ClientIp(['127.0.0.1'], 'cf-connecting-ip');
    expect(c.of('127.0.0.1', { 'cf-connecting-ip': '5.6.7.8' })).toBe('5.6.7.8');
  });

  it('refuses an entry that is not an address or a range', () => {
    expect(() => new ClientIp(['10.0.0.0/x'], 'x-forwarded-for')).toThrow(/CIDR/);
    expect(() => new ClientIp(['example.com'], 'x-forwarded-for')).toThrow(/CIDR/);
  });
});
