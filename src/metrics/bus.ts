import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** Which bus subject a refused message came on: live images, stored images (the stream), client changes, markets' freshness, or pods' announcements. */
export type BusSubjectKind = 'image' | 'stream' | 'client' | 'freshness' | 'pod';

/** The bus between pods: whether it is up, how far behind other pods' images arrive, and what it refused. */
export class BusMetrics {
  readonly connected: Gauge;
  readonly received: Counter;
  readonly lag: Histogram;
  readonly rejected: Counter<'subject_kind' | 'reason'>;

  constructor(registry: Registry, kind: string) {
    const registers = [registry];
    this.connected = new Gauge({ name: 'odds_bus_connected', help: `1 while the ${kind} bus is connected and synced`, registers });
    this.received = new Counter({ name: 'odds_bus_images_received_total', help: 'Odds images received from other pods', registers });
    this.lag = new Histogram({
      name: 'odds_bus_lag_seconds', help: 'Publish time on the ingesting pod to arrival here', registers,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    });
    this.rejected = new Counter({
      name: 'odds_bus_rejected_total', registers, labelNames: ['subject_kind', 'reason'],
      help: 'Messages read from the bus and dropped as malformed or inconsistent with the stream, by subject kind and reason',
    });
  }
}
