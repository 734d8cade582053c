import { isIP } from 'node:net';
import { errors, type ServiceError } from '../errors.js';

/** The longest Host a refusal repeats back. */
const SHOWN = 100;

/**
 * The names the service answers to, checked on every route of both ports
 * before anything else. A page on a name its author controls can have that
 * name resolve to this machine (DNS rebinding): the browser then treats the
 * service as the page's own origin, sends the page's name as Host and Origin,
 * and lets the page read the answers. Only the Host tells such a request
 * apart, so a Host the service does not answer to is refused (421) before it
 * is served, read or written.
 *
 * Always answered: `localhost` and any IP address (`127.0.0.1`, `[::1]`,
 * `10.1.2.3`), with any port. An address cannot be rebound: a page that
 * names one in its URL came from that address, and kubelet probes and
 * Prometheus address a pod by its IP. Beyond those, the names listed
 * (ALLOWED_HOSTS): exact, `*.example.com` for any subdomain, `*` for any
 * name at all. A request without Host (HTTP/1.0 tools) is not a browser's
 * and is let through.
 */
export class HostPolicy {
  private readonly names: ReadonlySet<string>;
  private readonly suffixes: readonly string[];
  private readonly any: boolean;
  /** The last Host let through: nearly every request names the same one, so most checks are one comparison. */
  private last = '';

  constructor(list: readonly string[]) {
    this.any = list.includes('*');
    this.names = new Set(list.filter((h) => !h.startsWith('*')));
    this.suffixes = list.filter((h) => h.startsWith('*.')).map((h) => h.slice(1));
  }

  /** Throws the 421 naming the rule when the service does not answer to `host` (the Host header, '' when absent). */
  check(host: string): void {
    const no = this.refusal(host);
    if (no) throw no;
  }

  /** The 421 for `host`, or undefined when the service answers to it. */
  refusal(host: string): ServiceError | undefined {
    return host === this.last || this.allows(host) ? undefined : errors.hostRefused(host.slice(0, SHOWN), this.rule());
  }

  allows(host: string): boolean {
    if (host === '' || this.any) return true;
    const name = hostName(host);
    const ok = name === 'localhost' || isAddress(name) || this.names.has(name) || this.suffixes.some((s) => name.endsWith(s));
    if (ok) this.last = host;
    return ok;
  }

  private rule(): string {
    const listed = [...this.names, ...this.suffixes.map((s) => `*${s}`)];
    return `this service answers to localhost and IP addresses${listed.length ? ` and ${listed.join(', ')}` : ''} (ALLOWED_HOSTS)`;
  }
}

/**
 * The name of a Host header: lower case, without its port or a final dot; an IPv6 address keeps
 * its brackets. Anything after the name but a port (`[::1]evil`, `localhost:x`) leaves the header
 * whole, which no rule allows.
 */
function hostName(host: string): string {
  let name = host.toLowerCase();
  const end = name.startsWith('[') ? name.indexOf(']') + 1 : name.lastIndexOf(':');
  if (end > 0 && end < name.length) {
    if (!PORT.test(name.slice(end))) return name;
    name = name.slice(0, end);
  }
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

const PORT = /^:\d{1,5}$/;

const isAddress = (name: string): boolean => (name.startsWith('[') ? name.endsWith(']') && isIP(name.slice(1, -1)) === 6 : isIP(name) === 4);
