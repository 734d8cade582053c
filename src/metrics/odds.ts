import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { FORMATS, type Format } from '../lib/encodings.js';
import { notsentLowat } from '../lib/kernel.js';

/** One sport's delay histograms, made once per sport name. */
export interface SportDelays {
  /** The source's time (`ts`) to the batch's arrival, per image. */
  sourceToIngest: Histogram.Internal<'sport'>;
  /** The batch's arrival to its frames being published, per batch. */
  ingestToPublish: Histogram.Internal<'sport'>;
  /** The source's time to the frames being published, per image: what the delay alert watches. */
  sourceToPublish: Histogram.Internal<'sport'>;
}

/** Seconds from a source's time: delays of seconds to minutes matter, and a replay of old data lands in +Inf. */
const FROM_SOURCE = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2.5, 5, 10, 30];

/** What the socket gauges read when scraped: the hub. */
interface SocketCounts {
  count(format: Format): number;
  subscriptions(): number;
}

/** What the feed gauge reads when scraped: the feed monitor. */
interface FeedState {
  readonly status: 'OK' | 'STALE';
}

/**
 * The feed: sockets, subscriptions, what was ingested, published, delivered
 * and skipped. Frames are counted per publish on the hottest path, so those
 * counts are plain numbers, folded into their counters when scraped.
 */
export class OddsMetrics {
  readonly published: Record<Format, number> = { json: 0, proto: 0 };
  readonly delivered: Record<Format, number> = { json: 0, proto: 0 };
  readonly oddsIngested: Counter;
  readonly ingestItems: Counter<'kind'>;
  readonly ingestBatches: Counter<'outcome'>;
  readonly framesSkipped: Counter;
  readonly resyncs: Counter;
  readonly slowCloses: Counter;
  readonly fellBehind: Counter;
  readonly behindNotices: Counter;
  /** How long each probe waited for its pong: how old what a socket reads is, when it reads it. */
  readonly readDelay: Histogram;
  private readonly sourceToIngest: Histogram<'sport'>;
  private readonly ingestToPublish: Histogram<'sport'>;
  private readonly sourceToPublish: Histogram<'sport'>;
  private readonly sports = new Map<string, SportDelays>();
  private sockets: SocketCounts | undefined;
  private feed: FeedState | undefined;

  constructor(registry: Registry) {
    const registers = [registry];
    // collect() runs with the gauge as `this`: these reach what watch() was given.
    const sockets = (): SocketCounts | undefined => this.sockets;
    const feed = (): FeedState | undefined => this.feed;
    const plain = (name: string, help: string, from: Record<Format, number>) => {
      let folded: Record<Format, number> = { json: 0, proto: 0 };
      new Counter({
        name, help, labelNames: ['format'], registers,
        collect() {
          for (const f of FORMATS) {
            if (from[f] > folded[f]) this.inc({ format: f }, from[f] - folded[f]);
          }
          folded = { ...from };
        },
      });
    };
    new Gauge({
      name: 'odds_ws_connections', help: 'Open subscriber sockets by frame format', labelNames: ['format'], registers,
      collect() {
        this.set({ format: 'json' }, sockets()?.count('json') ?? 0);
        this.set({ format: 'proto' }, sockets()?.count('proto') ?? 0);
      },
    });
    new Gauge({ name: 'odds_ws_subscriptions', help: 'Market subscriptions held by open sockets', registers, collect() { this.set(sockets()?.subscriptions() ?? 0); } });
    new Gauge({ name: 'odds_feed_stale', help: '1 while the feed is STALE: no publisher heard for FEED_STALE_MS, or the bus is down', registers, collect() { this.set(feed()?.status === 'STALE' ? 1 : 0); } });
    this.oddsIngested = new Counter({ name: 'odds_updates_ingested_total', help: 'Odds images accepted from publishers', registers });
    this.ingestItems = new Counter({ name: 'odds_ingest_items_total', help: 'Ingest items accepted, by kind', labelNames: ['kind'], registers });
    this.ingestBatches = new Counter({ name: 'odds_ingest_batches_total', help: 'Ingest batches by outcome (ok, rejected, unavailable)', labelNames: ['outcome'], registers });
    plain('odds_frames_published_total', 'Frames published to a market topic, by format', this.published);
    plain('odds_frames_delivered_total', 'Frames handed to sockets (published frames times subscribers, plus direct sends), by format', this.delivered);
    this.framesSkipped = new Counter({ name: 'odds_frames_skipped_total', help: 'Odds frames skipped for slow sockets', registers });
    this.resyncs = new Counter({ name: 'odds_resyncs_total', help: 'Rounds in which a socket that fell behind was sent what changed', registers });
    this.slowCloses = new Counter({ name: 'odds_slow_consumer_closes_total', help: 'Sockets closed for staying behind (4008)', registers });
    this.fellBehind = new Counter({ name: 'odds_ws_fell_behind_total', help: 'Times a socket fell behind: what was on its way could not be read within half of WS_MAX_AGE_MS', registers });
    this.behindNotices = new Counter({ name: 'odds_ws_behind_notices_total', help: 'Markets a socket was told are behind (freshness why=behind)', registers });
    new Gauge({
      name: 'odds_tcp_notsent_lowat_bytes', help: 'What the kernel lets a socket hold unsent (net.ipv4.tcp_notsent_lowat); 0: unbounded, the default', registers,
    }).set(notsentLowat());
    this.readDelay = new Histogram({
      name: 'odds_ws_read_delay_seconds', help: 'How long a socket took to read what it was sent (a probe to its pong): the age of what it reads', registers,
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
    });
    // By sport, never by market: a label per market ID would grow without bound.
    this.sourceToIngest = new Histogram({
      name: 'odds_source_to_ingest_seconds', help: 'Time from an odds image\'s source time (ts) to its batch arriving, by sport', labelNames: ['sport'], registers,
      buckets: FROM_SOURCE,
    });
    this.ingestToPublish = new Histogram({
      name: 'odds_ingest_to_publish_seconds', help: 'Time from an odds batch arriving to its frames being published, by sport', labelNames: ['sport'], registers,
      buckets: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    });
    this.sourceToPublish = new Histogram({
      name: 'odds_source_to_publish_seconds', help: 'Time from an odds image\'s source time (ts) to its frames being published, by sport', labelNames: ['sport'], registers,
      buckets: FROM_SOURCE,
    });
  }

  /** The delay histograms of a sport (its name, as the read model holds it). */
  delays(sport: string): SportDelays {
    let d = this.sports.get(sport);
    if (!d) {
      d = { sourceToIngest: this.sourceToIngest.labels(sport), ingestToPublish: this.ingestToPublish.labels(sport), sourceToPublish: this.sourceToPublish.labels(sport) };
      this.sports.set(sport, d);
    }
    return d;
  }

  /** Where the socket and feed gauges read from when scraped. */
  watch(sockets: SocketCounts, feed: FeedState): void {
    this.sockets = sockets;
    this.feed = feed;
  }
}
