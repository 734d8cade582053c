import { errors } from '../errors.js';
import type { HostPolicy } from './host.js';

/**
 * Which browser pages may open a socket route. A browser always sends Origin
 * on a WebSocket handshake and lets any page open one to any host, so without
 * this check a page from anywhere, in the browser of someone who can reach the
 * service, could use it. Clients that are not browsers send no Origin and are
 * not checked here: keys decide for them.
 */
export class OriginPolicy {
  private readonly allowed: ReadonlySet<string>;
  private readonly any: boolean;
  private readonly self: boolean;

  /**
   * `list` as read from `variable`: origins, `*` for any, `self` for the
   * service's own: an Origin naming the request's Host, when that Host is a
   * name the service answers to (`hosts`). Host alone proves nothing: a page
   * on a rebound name sends its own name as both.
   */
  constructor(private readonly path: string, private readonly variable: string, list: readonly string[], private readonly hosts: HostPolicy) {
    this.any = list.includes('*');
    this.self = list.includes('self');
    this.allowed = new Set(list.filter((o) => o !== '*' && o !== 'self'));
  }

  /** Throws a 403 naming the rule when `origin` (the header, '' when absent) may not open the route; `host` is the Host header. */
  check(origin: string, host: string): void {
    if (origin === '' || this.any) return;
    const o = origin.toLowerCase();
    if (this.allowed.has(o)) return;
    if (this.self && host !== '' && this.hosts.allows(host) && (o === `http://${host.toLowerCase()}` || o === `https://${host.toLowerCase()}`)) return;
    throw errors.originRefused(origin, this.path, this.rule());
  }

  private rule(): string {
    const listed = [...this.allowed];
    if (this.self) listed.unshift("the service's own origin");
    return listed.length
      ? `browser pages may open it only from ${listed.join(', ')} (${this.variable})`
      : `browser pages may not open it (${this.variable} lists no origin)`;
  }
}
