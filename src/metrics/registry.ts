import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type pg from 'pg';
import type { Clock } from '../lib/clock.js';

/** What the read model's gauge reads when scraped: the read model itself. */
interface ModelSize {
  readonly size: { sports: number; events: number; markets: number; results: number };
}

interface ServiceGauges {
  /** Its connections are gauged, and each idle client it loses counted. */
  pool: pg.Pool;
  model: ModelSize;
  /** The uWebSockets.js build loaded (http/uws.ts): 20.57 or 20.30. */
  uws: string;
  version: string;
  /** How long one render of the exposition answers every scrape (METRICS_CACHE_MS). */
  reuseMs: number;
  /** What the render's age is read from. */
  clock: Pick<Clock, 'now'>;
}

/**
 * The registry every metric of the service lives in: Node's default process
 * metrics (unprefixed, as dashboards expect them) and the service's own, all
 * prefixed `odds_`. Gauges read their value when scraped, so nothing is kept
 * up to date on hot paths.
 */
export class ServiceMetrics {
  readonly registry = new Registry();
  readonly pgErrors: Counter<'kind'>;
  readonly refreshLag: Histogram;
  private readonly renders: Counter;
  private readonly reuseMs: number;
  private readonly clock: Pick<Clock, 'now'>;
  /** The newest render, finished or still being made, and when it finished (0 while it is being made). */
  private rendered: Promise<Buffer> | undefined;
  private renderedAt = 0;

  constructor(g: ServiceGauges) {
    this.reuseMs = g.reuseMs;
    this.clock = g.clock;
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    // These list every handle, resource or file descriptor on each scrape: with
    // tens of thousands of sockets that is a stall of the event loop per scrape
    // (7 ms for process_open_fds at 10,000 sockets, measured). Sockets are
    // counted by odds_ws_connections instead.
    for (const name of ['process_open_fds', 'nodejs_active_handles', 'nodejs_active_handles_total', 'nodejs_active_resources', 'nodejs_active_resources_total', 'nodejs_active_requests', 'nodejs_active_requests_total']) {
      this.registry.removeSingleMetric(name);
    }
    new Gauge({ name: 'odds_build_info', help: 'Always 1; labels carry the version', labelNames: ['version', 'node'], registers })
      .set({ version: g.version, node: process.version }, 1);
    new Gauge({ name: 'odds_uws_build_info', help: 'Always 1; the label names the uWebSockets.js build in use (20.57 or 20.30)', labelNames: ['build'], registers })
      .set({ build: g.uws }, 1);
    new Gauge({
      name: 'odds_pg_pool_connections', help: 'Postgres pool connections by state', labelNames: ['state'], registers,
      collect() {
        const p = g.pool;
        this.set({ state: 'total' }, p.totalCount);
        this.set({ state: 'idle' }, p.idleCount);
        this.set({ state: 'waiting' }, p.waitingCount);
      },
    });
    new Gauge({
      name: 'odds_read_model_items', help: 'Rows held by the in-memory read model, by kind', labelNames: ['kind'], registers,
      collect() {
        for (const [kind, n] of Object.entries(g.model.size)) this.set({ kind }, n);
      },
    });
    this.pgErrors = new Counter({ name: 'odds_pg_errors_total', help: 'Postgres errors, by kind (idle client lost, unavailable, refresh)', labelNames: ['kind'], registers });
    g.pool.on('error', () => this.pgErrors.inc({ kind: 'idle_client_lost' }));
    this.renders = new Counter({ name: 'odds_metrics_renders_total', help: 'Renders of the /metrics exposition: scrapes within METRICS_CACHE_MS of one, or while it is made, share it', registers });
    this.refreshLag = new Histogram({
      name: 'odds_read_model_refresh_lag_seconds', help: 'Time from a NOTIFY arriving, or this pod committing a write, to the read model reflecting it', registers,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
    });
  }

  /** Postgres could not answer a stored-set read or change. */
  databaseUnavailable(): void {
    this.pgErrors.inc({ kind: 'unavailable' });
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /**
   * The exposition, as the bytes a scrape is answered with. Scrapes that come
   * while it is being made wait for that render, and a finished one answers
   * every scrape for `reuseMs`: however many scrapes come, they cost one
   * render per interval, and the odds path never waits on a scrape flood.
   */
  exposition(): Promise<Buffer> {
    if (this.rendered && (this.renderedAt === 0 || this.clock.now() - this.renderedAt < this.reuseMs)) return this.rendered;
    this.renders.inc();
    this.renderedAt = 0;
    const render = this.registry.metrics().then(
      (text) => {
        this.renderedAt = this.clock.now();
        return Buffer.from(text);
      },
      (err: unknown) => {
        // A failed render is not kept: the next scrape tries again.
        if (this.rendered === render) this.rendered = undefined;
        throw err;
      },
    );
    this.rendered = render;
    return render;
  }
}
