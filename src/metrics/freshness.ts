import { Gauge, type Registry } from 'prom-client';

/** What the gauge reads when scraped: the freshness tracker. */
interface StaleCounts {
  staleCounts(): Readonly<Record<string, number>>;
}

/** Markets stale right now, by reason: read from the freshness tracker when scraped, which counts every reason (zeros too). Never labelled by market. */
export class FreshnessMetrics {
  private source: StaleCounts | undefined;

  constructor(registry: Registry) {
    const counts = () => this.source?.staleCounts() ?? {};
    new Gauge({
      name: 'odds_markets_stale', help: 'Markets whose prices are stale, by reason (bus, publisher, unreliable, late)', labelNames: ['reason'], registers: [registry],
      collect() {
        for (const [reason, n] of Object.entries(counts())) this.set({ reason }, n);
      },
    });
  }

  /** Where the gauge reads from when scraped. */
  watch(source: StaleCounts): void {
    this.source = source;
  }
}
