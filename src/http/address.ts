import { BlockList, isIP, isIPv4 } from 'node:net';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';

/** The header a trusted proxy writes the client's address in. */
export type ProxyHeader = 'x-forwarded-for' | 'forwarded';

/** How uWS writes an IPv4 peer on an IPv6 socket: the mapped form, every group in full. */
const MAPPED_FULL = '0000:0000:0000:0000:0000:ffff:';

/** One address written one way: an IPv4 peer is dotted whether it came over IPv4 or IPv6. */
function canonical(address: string): string {
  if (address.startsWith(MAPPED_FULL)) {
    const high = parseInt(address.slice(30, 34), 16);
    const low = parseInt(address.slice(35, 39), 16);
    return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
  }
  if (address.startsWith('::ffff:') && isIPv4(address.slice(7))) return address.slice(7);
  return address;
}

/**
 * One hop as a proxy writes it: an address, perhaps quoted (Forwarded),
 * bracketed (IPv6) or with a port. Undefined when it is no address
 * (`unknown`, an obfuscated name, garbage).
 */
function hop(text: string): string | undefined {
  let a = text.trim();
  if (a.startsWith('"') && a.endsWith('"')) a = a.slice(1, -1);
  if (a.startsWith('[')) {
    const end = a.indexOf(']');
    a = a.slice(1, end < 0 ? undefined : end);
  } else if (a.indexOf(':') === a.lastIndexOf(':')) a = a.split(':')[0];
  return isIP(a) ? canonical(a) : undefined;
}

/** The `for=` of each element of a Forwarded header (RFC 7239), in order; undefined where an element has none. */
function forwardedFor(value: string): (string | undefined)[] {
  return value.split(',').map((element) => {
    for (const pair of element.split(';')) {
      const eq = pair.indexOf('=');
      if (eq > 0 && pair.slice(0, eq).trim().toLowerCase() === 'for') return pair.slice(eq + 1);
    }
    return undefined;
  });
}

/**
 * Who is calling, by address: the TCP peer, or, when the peer is a proxy the
 * operator named (TRUSTED_PROXIES), the client that proxy says it forwards.
 * The proxy's header is read from the right, past every hop that is itself a
 * trusted proxy: what stands left of the first untrusted hop was written by
 * the client and proves nothing, and a peer that is not trusted is taken as
 * it is, whatever headers it sends. Only the header the proxy writes counts
 * (TRUSTED_PROXY_HEADER): the other passes through it untouched, so the
 * client could write it.
 */
export class ClientAddresses {
  private readonly trusted: BlockList | undefined;

  constructor(proxies: readonly string[], private readonly header: ProxyHeader) {
    if (!proxies.length) return;
    this.trusted = new BlockList();
    for (const p of proxies) {
      const [address, bits] = p.split('/');
      const type = isIPv4(address) ? 'ipv4' : 'ipv6';
      if (bits === undefined) this.trusted.addAddress(address, type);
      else this.trusted.addSubnet(address, Number(bits), type);
    }
  }

  /** The caller's address. Read before any await: uWS frees the request when the handler returns. */
  of(res: HttpResponse, req: HttpRequest): string {
    const peer = canonical(Buffer.from(res.getRemoteAddressAsText()).toString());
    if (!this.isTrusted(peer)) return peer;
    const hops = this.hops(req);
    let client = peer;
    for (let i = hops.length - 1; i >= 0; i--) {
      const h = hops[i] === undefined ? undefined : hop(hops[i]!);
      // A hop that is no address was written by the proxy in front of it: that proxy's peer is as far as we know.
      if (h === undefined) break;
      client = h;
      if (!this.isTrusted(h)) break;
    }
    return client;
  }

  private isTrusted(address: string): boolean {
    return this.trusted !== undefined && this.trusted.check(address, isIPv4(address) ? 'ipv4' : 'ipv6');
  }

  /** Every line of the proxy's header, in order: a proxy may append a line rather than extend one. */
  private hops(req: HttpRequest): (string | undefined)[] {
    const out: (string | undefined)[] = [];
    req.forEach((name, value) => {
      if (name !== this.header) return;
      if (this.header === 'forwarded') out.push(...forwardedFor(value));
      else out.push(...value.split(','));
    });
    return out;
  }
}
