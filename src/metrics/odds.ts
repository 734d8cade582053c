import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export interface SocketCounts {
  sockets(format: 'json' | 'proto'): number;
  subscriptions(): number;
  feedStale(): boolean;
}

/** The feed: sockets, subscriptions, what was ingested, published, delivered and skipped. */
export class OddsMetrics {
  readonly oddsIngested: Counter;
  readonly ingestItems: Counter<'kind'>;
  readonly ingestBatches: Counter<'outcome'>;
  readonly framesPublished: Counter<'format'>;
  readonly framesDelivered: Counter<'format'>;
  readonly framesSkipped: Counter;
  readonly resyncs: Counter;
  readonly slowCloses: Counter;
  readonly ingestToPublish: Histogram;
  private counts: SocketCounts | undefined;

  constructor(registry: Registry) {
    const registers = [registry];
    const counts = {
      sockets: (f: 'json' | 'proto') => this.counts?.sockets(f) ?? 0,
      subscriptions: () => this.counts?.subscriptions() ?? 0,
      feedStale: () => this.counts?.feedStale() ?? false,
    };
    new Gauge({
      name: 'odds_ws_connections', help: 'Open subscriber sockets by frame format', labelNames: ['format'], registers,
      collect() {
        this.set({ format: 'json' }, counts.sockets('json'));
        this.set({ format: 'proto' }, counts.sockets('proto'));
      },
    });
    new Gauge({ name: 'odds_ws_subscriptions', help: 'Market subscriptions held by open sockets', registers, collect() { this.set(counts.subscriptions()); } });
    new Gauge({ name: 'odds_feed_stale', help: '1 while no publisher has sent anything for FEED_STALE_MS', registers, collect() { this.set(counts.feedStale() ? 1 : 0); } });
    this.oddsIngested = new Counter({ name: 'odds_updates_ingested_total', help: 'Odds images accepted from publishers', registers });
    this.ingestItems = new Counter({ name: 'odds_ingest_items_total', help: 'Ingest items accepted, by kind', labelNames: ['kind'], registers });
    this.ingestBatches = new Counter({ name: 'odds_ingest_batches_total', help: 'Ingest batches by outcome (ok, rejected, unavailable)', labelNames: ['outcome'], registers });
    this.framesPublished = new Counter({ name: 'odds_frames_published_total', help: 'Frames published to a market topic, by format', labelNames: ['format'], registers });
    this.framesDelivered = new Counter({ name: 'odds_frames_delivered_total', help: 'Frames handed to sockets (published frames times subscribers, plus direct sends), by format', labelNames: ['format'], registers });
    this.framesSkipped = new Counter({ name: 'odds_frames_skipped_total', help: 'Odds frames skipped for slow sockets', registers });
    this.resyncs = new Counter({ name: 'odds_resyncs_total', help: 'Slow sockets that drained and were sent the newest images', registers });
    this.slowCloses = new Counter({ name: 'odds_slow_consumer_closes_total', help: 'Sockets closed for staying behind (4008)', registers });
    this.ingestToPublish = new Histogram({
      name: 'odds_ingest_to_publish_seconds', help: 'Time from an odds batch arriving to its frames being published', registers,
      buckets: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25],
    });
  }

  /** Where the socket gauges read from when scraped: the broadcaster, which is built with these metrics. */
  watch(counts: SocketCounts): void {
    this.counts = counts;
  }
}
