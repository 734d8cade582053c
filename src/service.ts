import type pg from 'pg';
import { readFileSync } from 'node:fs';
import type { Config } from './config.js';
import type { Logger } from './log.js';
import { createPool, Postgres, UntilReachable } from './db/pool.js';
import { Migrations } from './db/migrate.js';
import { Listener } from './db/listen.js';
import { ReadModel } from './refdata/model.js';
import { ModelSync } from './refdata/sync.js';
import { DemoSeed } from './demo/load.js';
import { DemoSimulator } from './demo/run.js';
import { Book } from './odds/book.js';
import { Hub } from './hub/hub.js';
import { Broadcaster } from './hub/broadcaster.js';
import { MarketStates } from './hub/states.js';
import { MarketIndex } from './hub/market-index.js';
import { Sweep } from './hub/sweep.js';
import type { Subscriber, SubscriberDeps } from './hub/subscriber.js';
import { systemClock, type Clock } from './lib/clock.js';
import { notsentLowat } from './lib/kernel.js';
import { SocketSubscriptions } from './hub/socket-subscriptions.js';
import { FeedMonitor } from './relay/feed-monitor.js';
import { OddsRelay } from './relay/odds-relay.js';
import { Freshness, KnownMarkets } from './relay/freshness.js';
import { ReferenceFrames } from './relay/reference-frames.js';
import { StoredSets } from './stored-sets/stored-sets.js';
import { Ingest } from './ingest/ingest.js';
import { KeyQueues } from './ingest/lane.js';
import { LoopDelay } from './lib/loop-delay.js';
import { validateOdds } from './ingest/validate-odds.js';
import { OutsideFeeds } from './ingest/outside.js';
import { createApp } from './http/app.js';
import { uwsBuild } from './http/uws.js';
import { Router } from './http/router.js';
import { BodyBudget } from './http/request.js';
import { registerRest } from './http/rest.js';
import { Admission } from './http/admission.js';
import { registerWs } from './http/ws.js';
import { registerIngest } from './http/ingest-routes.js';
import { registerDocs } from './http/docs.js';
import { registerRecord } from './http/record-routes.js';
import { RecordSnapshots } from './record/snapshot.js';
import { registerWeb } from './http/web.js';
import { OriginPolicy } from './http/origin.js';
import { HostPolicy } from './http/host.js';
import { ClientAddresses } from './http/address.js';
import { registerMetrics } from './http/metrics.js';
import { Listeners } from './http/listeners.js';
import { PublicEdge } from './http/edge.js';
import { Readiness } from './http/readiness.js';
import { ServiceMetrics } from './metrics/registry.js';
import { HttpMetrics } from './metrics/http.js';
import { OddsMetrics } from './metrics/odds.js';
import { BusMetrics } from './metrics/bus.js';
import { FreshnessMetrics } from './metrics/freshness.js';
import { AuthMetrics } from './metrics/auth.js';
import { BusConnection, createBus } from './bus/create.js';
import { ApiKeys, Auth } from './auth/auth.js';
import { FailedKeys } from './auth/failures.js';
import { Named, type Component } from './lib/component.js';
import { Lifecycle, type Service } from './lifecycle.js';
import { Notifications, RecordedStates, ReferenceChanges, Revocations } from './listeners.js';
import { RecordMetrics } from './metrics/record.js';
import { Recorder } from './record/recorder.js';
import { RecordTaps, newPodName } from './record/taps.js';
import { RecordedLedger, UNRECORDED } from './record/ledger.js';
import type { RecordLog } from './bus/types.js';

export type { Service } from './lifecycle.js';

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

export interface ServiceOptions {
  /** Why the database is gone for good (the embedded server's restarts ran out): /ready then answers 503. */
  databaseLost?(): string | undefined;
  /** Aborted while starting (a signal), it stops what has started and the start rejects. */
  stopping?: AbortSignal;
  /** What every limit, bound and timer of the service reads time from: the system's, unless a test moves its own. */
  clock?: Clock;
}

/** A write the record's Postgres leaves unanswered this long is given up and tried again on a new connection. */
const RECORD_WRITE_TIMEOUT_MS = 30_000;
/** Connections the record's routes use on the record's own Postgres. */
const RECORD_POOL_MAX = 4;

/** The recorder (which runs on the pod holding its lease) and what this pod hands it. */
function recordParts(config: Config, databaseUrl: string, log: RecordLog, metrics: RecordMetrics, logger: Logger): { recorder: Recorder; taps: RecordTaps } {
  const recorder = new Recorder(
    { url: config.recordDatabaseUrl ?? databaseUrl, days: config.recordDays, batch: config.recordBatch, flushMs: config.recordFlushMs, settleMs: config.recordSettleMs, connectTimeoutMs: config.pgConnectTimeoutMs, writeTimeoutMs: RECORD_WRITE_TIMEOUT_MS },
    { log, metrics, logger },
  );
  metrics.watch({ lag: () => recorder.lag(), backlog: () => log.backlog(), get leading() { return recorder.leading; } });
  return { recorder, taps: new RecordTaps(log, newPodName(), recorder) };
}

/**
 * The record's parts on this pod when the bus keeps a log for it: the recorder and its taps, the
 * states and the ledger that write to it, the snapshots its routes read (in its own Postgres when
 * it has one), and what of it runs; without a log, the plain states, no ledger, nothing to run.
 */
function recording(config: Config, databaseUrl: string, log: RecordLog | undefined, metrics: RecordMetrics, pool: pg.Pool, logger: Logger, clock: Clock) {
  const record = log && recordParts(config, databaseUrl, log, metrics, logger);
  // The record's routes read its own Postgres when it has one: a pool of a few connections, apart from the service's.
  // One connection beyond the reads' share: a read whose client hung up is cancelled over it (snapshot.ts).
  const recordPool = config.recordDatabaseUrl && record ? createPool(config.recordDatabaseUrl, { ...config, pgPoolMax: RECORD_POOL_MAX + 1 }, logger) : pool;
  const recordedStates = record && new RecordedStates(record.taps);
  if (recordedStates) record.recorder.watch(recordedStates);
  const running: Component[] = [
    ...(record ? [record.recorder] : []),
    ...(recordPool !== pool ? [new Named('record pool', { stop: () => void recordPool.end() })] : []),
  ];
  // In the service's own pool the record's reads take a quarter of it at most; in a pool of their own, all of it.
  const share = { concurrent: recordPool === pool ? Math.max(1, Math.floor(config.pgPoolMax / 4)) : RECORD_POOL_MAX, waitMs: config.pgConnectTimeoutMs };
  const snapshots = record && new RecordSnapshots(recordPool, share, clock);
  return { record, snapshots, states: recordedStates ?? new MarketStates(), ledger: record ? new RecordedLedger(record.taps) : UNRECORDED, running };
}

/** Starts the parts in order; aborted meanwhile (a signal), it stops what has started and the start rejects. */
async function startAll(lifecycle: Lifecycle, stopping: AbortSignal | undefined): Promise<void> {
  const abort = () => void lifecycle.stop();
  stopping?.addEventListener('abort', abort, { once: true });
  if (stopping?.aborted) abort();
  try {
    await lifecycle.start();
  } finally {
    stopping?.removeEventListener('abort', abort);
  }
}

/**
 * Builds the service from its parts and starts it. Each part takes its
 * dependencies by name and is declared before it is used; where two need each
 * other, the later one registers into the earlier through a named interface
 * (`monitor.listen(broadcaster)`, `listener.listen(...)`, `hub.watch(...)`). The parts
 * that run are then listed as components, started in order and stopped in
 * reverse (lifecycle.ts). Process concerns (signals, the embedded server) stay
 * in main.ts; tests run this in-process.
 */
export async function startService(config: Config, databaseUrl: string, log: Logger, opts: ServiceOptions = {}): Promise<Service> {
  const clock = opts.clock ?? systemClock;
  const pool = createPool(databaseUrl, config, log);
  const model = new ReadModel();
  const metrics = new ServiceMetrics({ pool, model, uws: uwsBuild.name ?? 'none', version: VERSION, reuseMs: config.metricsCacheMs, clock });
  const readiness = new Readiness({ log, databaseLost: opts.databaseLost });
  const app = createApp();
  const book = new Book();
  const busMetrics = new BusMetrics(metrics.registry, config.bus);
  const recordMetrics = new RecordMetrics(metrics.registry);
  const bus = await createBus(config, {
    book, log, check: validateOdds, metrics: busMetrics,
    record: { appended: () => recordMetrics.appended.inc(), dropped: (n, where) => recordMetrics.lost.inc({ where }, n) },
  });
  const recorded = recording(config, databaseUrl, bus.record, recordMetrics, pool, log, clock);
  const { record, snapshots, states, ledger } = recorded;
  const odds = new OddsMetrics(metrics.registry);
  const authMetrics = new AuthMetrics(metrics.registry);
  const index = new MarketIndex<Subscriber>();
  const hub = new Hub(
    { perKey: config.wsMaxSocketsPerKey, total: config.wsMaxSockets, countPerKey: config.auth, markets: config.wsMaxMarkets },
    { refusals: authMetrics, markets: model, index },
  );
  const broadcaster = new Broadcaster({ topics: app, index, book, states, metrics: odds, log, clock, clockMs: config.wsClockMs, compress: config.wsCompression, ledger });
  const monitor = new FeedMonitor({ staleMs: config.feedStaleMs, clock });
  monitor.listen(broadcaster);
  const sweep = new Sweep(index, clock);
  broadcaster.watch(sweep);
  const subscribers: SubscriberDeps = {
    index, publishing: broadcaster, book, states, looks: sweep, metrics: odds, log, clock, compress: config.wsCompression, ledger,
    limits: { maxAgeMs: config.wsMaxAgeMs, slowBytes: config.wsSlowBytes, maxBytes: config.wsMaxBackpressure, slowCloseMs: config.wsSlowCloseMs },
  };
  const socketSubs = new SocketSubscriptions({ hub, index, book, model });
  odds.watch(hub, monitor);
  const freshness = new Freshness({ listener: broadcaster, bus, markets: new KnownMarkets(model, book), clock });
  new FreshnessMetrics(metrics.registry).watch(freshness);
  const loop = new LoopDelay(config.ingestMaxLoopDelayMs, clock);
  const relay = new OddsRelay({ book, broadcaster, bus, monitor, freshness, metrics: busMetrics, pressure: [broadcaster, loop], record: record?.taps });
  const failedKeys = new FailedKeys({ burst: config.authFailureBurst, perSecond: config.authFailuresPerSecond, sources: config.authFailureSources }, log, clock);
  const auth = new Auth(config.auth, config.restRateLimit, authMetrics, new Revocations(hub, freshness, authMetrics), failedKeys, clock);
  const storedSets = new StoredSets({
    pool, hub, bus, maxStored: config.clientMaxMarkets, log, outages: metrics,
  });
  const outside = new OutsideFeeds();
  hub.watch(storedSets);
  const hosts = new HostPolicy(config.allowedHosts);
  const addresses = new ClientAddresses(config.trustedProxies, config.proxyHeader);
  // uWS sets up its topics with the first socket route: publishing before it would crash the process.
  registerWs(app, {
    subscribers, socketSubs, sweep, auth, hub, gate: readiness, metrics: authMetrics, log, hosts, addresses,
    origins: new OriginPolicy('/ws', 'WS_ORIGINS', config.wsOrigins, hosts),
    admission: new Admission({
      handshakesPerSource: config.wsHandshakesPerSource, handshakesTotal: config.wsHandshakesPerSecond,
      subscribesPerSource: config.wsSubscribesPerSource, subscribesTotal: config.wsSubscribesPerSecond, maxSources: config.wsAdmissionSources,
      source: config.auth ? 'key' : 'address',
    }, authMetrics, clock),
    limits: {
      maxMessageBytes: config.wsMaxMessageBytes, idleTimeoutS: config.wsIdleTimeoutS, compression: config.wsCompression,
      perSocket: config.wsMessagesPerSecond, keyMessages: config.wsKeyMessagesPerSecond, keyBytes: config.wsKeyBytesPerSecond, perKey: config.auth,
    },
  });
  const frames = new ReferenceFrames(broadcaster, socketSubs);
  const sync = new ModelSync(pool, model, log, new ReferenceChanges({ frames, outside, freshness, metrics }));
  const ingest = new Ingest({
    pool, model, sync, relay, monitor, freshness, maxItems: config.ingestMaxItems, lockWaitMs: config.pgLockWaitMs, metrics: odds, log, outside,
    sourceTime: { maxSkewMs: config.ingestMaxSkewMs, lateMs: config.ingestLateMs },
  });
  const listener = new Listener({ url: databaseUrl, channel: 'refdata', log, connectTimeoutMs: config.pgConnectTimeoutMs, pingMs: config.pgListenPingMs });
  listener.listen(new Notifications({ sync, auth, pool, listener, metrics, log }));
  const httpMetrics = new HttpMetrics(metrics.registry);
  const router = new Router(app, httpMetrics, auth, readiness, log, hosts, addresses, new BodyBudget(config.bodyBytesPerSource));
  registerRest(router, { model, maxBodyBytes: config.maxBodyBytes, answerCacheBytes: config.answerCacheBytes, subscriptions: storedSets, readiness });
  const metricsApp = createApp();
  const metricsRouter = new Router(metricsApp, httpMetrics, auth, readiness, log, hosts, addresses);
  const listeners = new Listeners({
    app, host: config.host, port: config.port, metricsApp, metricsRouter, metricsHost: config.metricsHost, metricsPort: config.metricsPort, log,
  });
  registerMetrics(router, metricsRouter, { metrics, token: config.metricsToken, readiness, listening: listeners });
  registerIngest(app, router, {
    ingest, freshness, auth, hub, gate: readiness, log, hosts, addresses, origins: new OriginPolicy('/ingest', 'INGEST_ORIGINS', config.ingestOrigins, hosts),
    maxBodyBytes: config.maxBodyBytes, maxInFlight: config.ingestMaxInFlight, maxItems: config.ingestMaxItems,
    maxQueuedBytes: config.ingestQueueBytes, maxUnreadBytes: config.wsMaxBackpressure, keyQueues: new KeyQueues(config.ingestKeyQueueBytes),
  });
  registerRecord(router, { record: snapshots });
  registerDocs(router);
  registerWeb(app, hosts);
  router.fallbacks(['/ws', '/ingest']);

  // Started in this order, stopped in reverse (lifecycle.ts).
  const lifecycle = new Lifecycle([
    listeners,
    new Postgres(pool, log),
    new UntilReachable(new Migrations(pool, log), log),
    ...(config.demoData ? [new UntilReachable(new DemoSeed(pool, log), log)] : []),
    new UntilReachable(new ApiKeys(auth, pool), log),
    listener,
    sync,
    new BusConnection(bus, { odds: relay, clients: storedSets, freshness }),
    // Stopped after every socket and publisher, so what they left in the record's log is written first.
    ...recorded.running,
    new Named('broadcaster', broadcaster),
    freshness,
    monitor,
    new Named('sweep', sweep),
    loop,
    new PublicEdge({ listeners, router, sockets: hub, drainDelayMs: config.drainDelayMs, log }),
    ...(config.simulator
      ? [new DemoSimulator({ model, ingest, outside, freshness, intervalMs: config.simulatorIntervalMs, lifecycleMs: config.lifecycleIntervalMs, maxItems: config.ingestMaxItems, log, clock })]
      : []),
    readiness,
  ]);
  await startAll(lifecycle, opts.stopping);
  log.info('ready', { url: listeners.url, bus: config.bus, auth: config.auth, tcp_notsent_lowat: notsentLowat() || 'unbounded' });
  return {
    port: listeners.port, url: listeners.url, bound: listeners.bound, metricsPort: listeners.metricsPort, metricsUrl: listeners.metricsUrl,
    pool, model, book, hub, broadcaster, ingest,
    close: () => lifecycle.stop(),
  };
}
