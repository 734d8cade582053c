import { errors } from '../errors.js';

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

  /** `list` as read from `variable`: origins, `*` for any, `self` for the service's own. */
  constructor(private readonly path: string, private readonly variable: string, list: readonly string[]) {
    this.any = list.includes('*');
    this.self = list.includes('self');
    this.allowed = new Set(list.filter((o) => o !== '*' && o !== 'self'));
  }

  /** Throws a 403 naming the rule when `origin` (the header, '' when absent) may not open the route; `host` is the Host header. */
  check(origin: string, host: string): void {
    if (origin === '' || this.any) return;
    const o = origin.toLowerCase();
    if (this.allowed.has(o)) return;
    if (this.self && host !== '' && (o === `http://${host.toLowerCase()}` || o === `https://${host.toLowerCase()}`)) return;
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
