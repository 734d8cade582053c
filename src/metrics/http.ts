import { Counter, Histogram, type Registry } from 'prom-client';

const METHODS = new Set(['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS']);
const BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** prom-client's own record of one histogram child, which `collect` overwrites with the folded numbers. */
interface HistogramChild {
  labels: Record<string, string>;
  bucketValues: Record<number, number>;
  sum: number;
  count: number;
}

/**
 * One route and method's requests, in plain numbers: counting a request is a
 * few additions, with no label checks or hashing. Folded into prom-client
 * when scraped.
 */
class RouteCounts {
  readonly labels: Readonly<{ route: string; method: string }>;
  readonly byStatus = new Map<number, number>();
  /** Per bucket, not cumulative; the last is above every bound (+Inf). */
  readonly buckets = new Float64Array(BUCKETS.length + 1);
  sum = 0;
  count = 0;

  constructor(route: string, method: string) {
    this.labels = Object.freeze({ route, method });
  }

  observe(status: number, seconds: number): void {
    this.byStatus.set(status, (this.byStatus.get(status) ?? 0) + 1);
    let i = 0;
    while (i < BUCKETS.length && seconds > BUCKETS[i]) i++;
    this.buckets[i]++;
    this.sum += seconds;
    this.count++;
  }
}

/**
 * Requests by route template, method and status, with a latency histogram.
 * prom-client checks and hashes labels on every inc and observe, even on bound
 * children (7-10% of CPU on small routes, measured), so requests are counted
 * in RouteCounts and the metrics are filled from them in `collect()`, once
 * per scrape.
 */
export class HttpMetrics {
  /** By route, then method: both bounded (route templates, and METHODS plus `other`). */
  private readonly routes = new Map<string, Map<string, RouteCounts>>();

  constructor(registry: Registry) {
    const all = () => [...this.routes.values()].flatMap((byMethod) => [...byMethod.values()]);
    new Counter({
      name: 'odds_http_requests_total', help: 'HTTP requests answered, by route template, method and status',
      labelNames: ['route', 'method', 'status'], registers: [registry],
      collect() {
        this.reset();
        for (const c of all()) for (const [status, n] of c.byStatus) this.inc({ ...c.labels, status: String(status) }, n);
      },
    });
    new Histogram({
      name: 'odds_http_request_duration_seconds', help: 'Time from request to answer, by route template and method',
      labelNames: ['route', 'method'], registers: [registry], buckets: BUCKETS,
      collect() {
        // prom-client has no call that sets a child's buckets: zero() creates each child, then its record is filled in.
        this.reset();
        const counts = new Map<object, RouteCounts>(all().map((c) => [c.labels, c]));
        for (const labels of counts.keys()) this.zero(labels);
        for (const child of Object.values((this as unknown as { hashMap: Record<string, HistogramChild> }).hashMap)) {
          const c = counts.get(child.labels)!;
          BUCKETS.forEach((bound, i) => (child.bucketValues[bound] = c.buckets[i]));
          child.sum = c.sum;
          child.count = c.count;
        }
      },
    });
  }

  /** The counts of one route template and method; routes keep theirs, so the hot path does no lookup. */
  route(route: string, method: string): RouteCounts {
    const m = METHODS.has(method) ? method : 'other';
    let byMethod = this.routes.get(route);
    if (!byMethod) this.routes.set(route, (byMethod = new Map()));
    let counts = byMethod.get(m);
    if (!counts) byMethod.set(m, (counts = new RouteCounts(route, m)));
    return counts;
  }

  /** `route` is a template, never a raw URL; unknown methods are folded into `other`, so labels stay bounded. */
  observe(route: string, method: string, status: number, seconds: number): void {
    this.route(route, method).observe(status, seconds);
  }
}
