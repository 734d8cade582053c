import t from 'tap';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { ClientAddresses } from '../../src/http/address.js';

/**
 * The caller's address: the TCP peer, or what a trusted proxy says. Over
 * fakes of the two uWS objects it reads (the peer's text, the header lines);
 * over real sockets in test/auth/failures.test.ts.
 */
function from(peer: string, headers: [string, string][] = []): [HttpResponse, HttpRequest] {
  const res = { getRemoteAddressAsText: () => new TextEncoder().encode(peer).buffer } as unknown as HttpResponse;
  const req = { forEach: (cb: (k: string, v: string) => void) => headers.forEach(([k, v]) => cb(k, v)) } as unknown as HttpRequest;
  return [res, req];
}

const xff = new ClientAddresses(['10.0.0.0/8', 'fd00::/8', '192.0.2.7'], 'x-forwarded-for');

t.test('with no trusted proxy, the peer whatever it sends; IPv4 peers on an IPv6 socket written dotted', async (t) => {
  const none = new ClientAddresses([], 'x-forwarded-for');
  t.equal(none.of(...from('10.1.1.1', [['x-forwarded-for', '1.2.3.4']])), '10.1.1.1');
  t.equal(none.of(...from('0000:0000:0000:0000:0000:ffff:7f00:0001')), '127.0.0.1');
});

t.test('from a trusted proxy, the first untrusted hop from the right; what the client wrote left of it is ignored', async (t) => {
  t.equal(xff.of(...from('10.0.0.5', [['x-forwarded-for', '198.51.100.9']])), '198.51.100.9');
  t.equal(xff.of(...from('10.0.0.5', [['x-forwarded-for', '6.6.6.6, 198.51.100.9, 10.2.3.4']])), '198.51.100.9', 'past a chain of trusted proxies');
  t.equal(xff.of(...from('10.0.0.5', [['x-forwarded-for', '6.6.6.6'], ['x-forwarded-for', '198.51.100.9']])), '198.51.100.9', 'over several header lines');
  t.equal(xff.of(...from('0000:0000:0000:0000:0000:ffff:0a00:0005', [['x-forwarded-for', '198.51.100.9:4711']])), '198.51.100.9', 'a mapped peer; a port dropped');
  t.equal(xff.of(...from('fd00:0000:0000:0000:0000:0000:0000:0001', [['x-forwarded-for', '[2001:db8::1]:80']])), '2001:db8::1');
  t.equal(xff.of(...from('192.0.2.7', [['x-forwarded-for', '::ffff:198.51.100.9']])), '198.51.100.9', 'a single trusted address');
});

t.test('from a trusted proxy without the header, or with no address in it, the last trusted hop', async (t) => {
  t.equal(xff.of(...from('10.0.0.5')), '10.0.0.5');
  t.equal(xff.of(...from('10.0.0.5', [['x-forwarded-for', 'garbage']])), '10.0.0.5');
  t.equal(xff.of(...from('10.0.0.5', [['x-forwarded-for', '198.51.100.9, unknown, 10.0.0.9']])), '10.0.0.9');
});

t.test('an untrusted peer\'s header is ignored', async (t) => {
  t.equal(xff.of(...from('198.51.100.1', [['x-forwarded-for', '10.0.0.1']])), '198.51.100.1');
});

t.test('Forwarded (RFC 7239) when the proxy writes that, and then X-Forwarded-For counts for nothing', async (t) => {
  const fwd = new ClientAddresses(['10.0.0.0/8'], 'forwarded');
  const [res, req] = from('10.0.0.5', [['x-forwarded-for', '6.6.6.6'], ['forwarded', 'for=6.6.6.6;proto=https, for="[2001:db8:cafe::17]:4711";by=10.0.0.5']]);
  t.equal(fwd.of(res, req), '2001:db8:cafe::17');
  t.equal(fwd.of(...from('10.0.0.5', [['x-forwarded-for', '6.6.6.6']])), '10.0.0.5');
  t.equal(fwd.of(...from('10.0.0.5', [['forwarded', 'FOR=198.51.100.3']])), '198.51.100.3', 'parameter names are case-insensitive');
  t.equal(fwd.of(...from('10.0.0.5', [['forwarded', 'for=_hidden']])), '10.0.0.5', 'an obfuscated name is no address');
});
