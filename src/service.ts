import { readFileSync } from 'node:fs';
import type { Config } from './config.js';
import type { Logger } from './log.js';
import { createPool } from './db/pool.js';
import { migrate } from './db/migrate.js';
import { Listener } from './db/listen.js';
import { ReadModel, goneMarkets } from './refdata/model.js';
import { ModelSync } from './refdata/sync.js';
import { loadDemoIfEmpty } from './demo/load.js';
import { startSimulator } from './demo/run.js';
import { Book } from './odds/book.js';
import { Hub } from './hub/hub.js';
import { Broadcaster } from './hub/broadcaster.js';
import { MarketStates } from './hub/states.js';
import { Sweeper } from './hub/sweep.js';
import { SocketSubscriptions } from './hub/socket-subscriptions.js';
import { FeedMonitor } from './relay/feed-monitor.js';
import { OddsRelay } from './relay/odds-relay.js';
import { Freshness } from './relay/freshness.js';
import { referenceFrames } from './relay/reference-frames.js';
import { StoredSets } from './stored-sets/stored-sets.js';
import { Ingest } from './ingest/ingest.js';
import { KeyQueues } from './ingest/lane.js';
import { LoopDelay } from './lib/loop-delay.js';
import { validateOdds } from './ingest/validate-odds.js';
import { OutsideFeeds } from './ingest/outside.js';
import { createApp } from './http/app.js';
import { uwsBuild } from './http/uws.js';
import { Router } from './http/router.js';
import { registerRest } from './http/rest.js';
import { Admission } from './http/admission.js';
import { registerWs } from './http/ws.js';
import { registerIngest } from './http/ingest-routes.js';
import { registerDocs } from './http/docs.js';
import { registerWeb } from './http/web.js';
import { OriginPolicy } from './http/origin.js';
import { HostPolicy } from './http/host.js';
import { ClientAddresses } from './http/address.js';
import { registerMetrics } from './http/metrics.js';
import { ServiceMetrics } from './metrics/registry.js';
import { HttpMetrics } from './metrics/http.js';
import { OddsMetrics } from './metrics/odds.js';
import { BusMetrics } from './metrics/bus.js';
import { FreshnessMetrics } from './metrics/freshness.js';
import { AuthMetrics } from './metrics/auth.js';
import { createBus } from './bus/create.js';
import { Auth } from './auth/auth.js';
import { FailedKeys } from './auth/failures.js';
import { KEY_APPLIED } from './auth/key-change.js';
import { run, type Service } from './lifecycle.js';

export type { Service } from './lifecycle.js';

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/**
 * Builds the service from its parts and starts it (lifecycle.ts): Postgres
 * schema, demo seed, read model, odds book, bus, HTTP and sockets. Process
 * concerns (signals, the embedded server) stay in main.ts; tests run this
 * in-process. Each part takes its dependencies by name.
 */
export interface ServiceOptions {
  /** Why the database is gone for good (the embedded server's restarts ran out): /ready then answers 503. */
  databaseLost?(): string | undefined;
}

export async function startService(config: Config, databaseUrl: string, log: Logger, opts: ServiceOptions = {}): Promise<Service> {
  const pool = createPool(databaseUrl, config, log, () => metrics.pgErrors.inc({ kind: 'idle_client_lost' }));
  const model = new ReadModel();
  const metrics = new ServiceMetrics({ pool, modelSize: () => model.size, uws: uwsBuild.name ?? 'none', version: VERSION, reuseMs: config.metricsCacheMs });
  const state = { starting: true, draining: false };
  /** Data routes and sockets answer 503 until the read model is loaded; probes and metrics always answer. */
  const gate = () => (state.starting ? 'starting: the read model is not loaded yet' : undefined);
  const app = createApp();
  const book = new Book();
  const states = new MarketStates();
  const odds = new OddsMetrics(metrics.registry);
  const authMetrics = new AuthMetrics(metrics.registry);
  const hub = new Hub({ perKey: config.wsMaxSocketsPerKey, total: config.wsMaxSockets, countPerKey: config.auth, markets: config.wsMaxMarkets }, {
    refused: (reason) => authMetrics.socketsRefused.inc({ reason }),
    concluded: (mid) => model.concluded(mid),
  });
  const monitor = new FeedMonitor({ staleMs: config.feedStaleMs, changed: (status) => bc.feedChanged(status) });
  const bc = new Broadcaster({ topics: app, hub, book, states, metrics: odds, log, feed: monitor, compress: config.wsCompression });
  const sweeper = new Sweeper({ bc, hub, book, states, limits: { slowBytes: config.wsSlowBytes, maxBytes: config.wsMaxBackpressure, slowCloseMs: config.wsSlowCloseMs }, metrics: odds, log });
  const socketSubs = new SocketSubscriptions({ hub, bc, book, model });
  odds.watch({ sockets: (f) => hub.count(f), subscriptions: () => hub.subscriptions(), feedStale: () => monitor.status === 'STALE' });
  const busMetrics = new BusMetrics(metrics.registry, config.bus);
  const bus = createBus(config, { book, log, check: validateOdds, metrics: busMetrics });
  const freshness = new Freshness({
    changed: (msg) => bc.publishState(msg),
    share: (states) => bus.shareFreshness(states),
    known: (mid) => model.typeOf(mid) !== undefined || book.get(mid) !== undefined,
    held: () => [...book.values()].map((e) => e.mid),
  });
  new FreshnessMetrics(metrics.registry).watch(() => freshness.staleCounts());
  const loop = new LoopDelay(config.ingestMaxLoopDelayMs);
  const relay = new OddsRelay({ book, bc, bus, monitor, freshness, metrics: busMetrics, pressure: [bc, loop] });
  const failedKeys = new FailedKeys({ burst: config.authFailureBurst, perSecond: config.authFailuresPerSecond, sources: config.authFailureSources }, log);
  const auth = new Auth(config.auth, config.restRateLimit, authMetrics, (keyId) => hub.revoke(keyId, () => authMetrics.revokedCloses.inc()), failedKeys);
  const storedSets = new StoredSets({
    pool, hub, bc, bus, maxStored: config.clientMaxMarkets, log,
    unavailable: () => metrics.pgErrors.inc({ kind: 'unavailable' }),
  });
  const outside = new OutsideFeeds();
  // Each keeps state per subscriber socket beside the hub's indexes: told of every open and close, in this order.
  hub.watch(bc);
  hub.watch(sweeper);
  hub.watch(storedSets);
  bc.watchSends(sweeper);
  const hosts = new HostPolicy(config.allowedHosts);
  const addresses = new ClientAddresses(config.trustedProxies, config.proxyHeader);
  // uWS sets up its topics with the first socket route: publishing before it would crash the process.
  registerWs(app, {
    bc, socketSubs, sweeper, auth, hub, gate, metrics: authMetrics, log, hosts, addresses,
    origins: new OriginPolicy('/ws', 'WS_ORIGINS', config.wsOrigins, hosts),
    admission: new Admission({
      handshakesPerSource: config.wsHandshakesPerSource, handshakesTotal: config.wsHandshakesPerSecond,
      subscribesPerSource: config.wsSubscribesPerSource, subscribesTotal: config.wsSubscribesPerSecond, maxSources: config.wsAdmissionSources,
      source: config.auth ? 'key' : 'address',
    }, (scope) => (scope.startsWith('handshake') ? authMetrics.socketsRefused.inc({ reason: scope }) : authMetrics.rateLimited.inc({ scope }))),
    limits: {
      maxMessageBytes: config.wsMaxMessageBytes, idleTimeoutS: config.wsIdleTimeoutS, compression: config.wsCompression,
      perSocket: config.wsMessagesPerSecond, keyMessages: config.wsKeyMessagesPerSecond, keyBytes: config.wsKeyBytesPerSecond, perKey: config.auth,
    },
  });
  const frames = referenceFrames(bc, (mid, eid, si) => socketSubs.appeared(mid, eid, si));
  const sync = new ModelSync(pool, model, log, {
    changes: (changes) => {
      frames(changes);
      outside.forgetGone(changes);
      for (const mid of goneMarkets(changes)) freshness.forget(mid);
    },
    lag: (s) => metrics.refreshLag.observe(s),
    failed: () => metrics.pgErrors.inc({ kind: 'refresh' }),
  });
  const ingest = new Ingest({ pool, model, sync, relay, monitor, freshness, maxItems: config.ingestMaxItems, metrics: odds, log, outside });
  /** A key command waits for every pod to say, from its LISTEN connection, that its auth holds the change. */
  const keyChanged = (id: string) => void auth.refresh(pool, [id], log).then(() => listener.notify(KEY_APPLIED, id));
  const listener = new Listener({
    url: databaseUrl, channel: 'refdata', log, connectTimeoutMs: config.pgConnectTimeoutMs, pingMs: config.pgListenPingMs,
    handlers: {
      // Notifications sent while the listener was away are lost: reload everything.
      onConnect: () => {
        sync.reloadAll();
        if (config.auth) void auth.refresh(pool, 'all', log);
      },
      onNotify: (key) => (key.startsWith('key:') ? keyChanged(key.slice(4)) : sync.notify(key)),
      onDisconnect: () => metrics.pgErrors.inc({ kind: 'listener_lost' }),
    },
  });
  const httpMetrics = new HttpMetrics(metrics.registry);
  const router = new Router(app, httpMetrics, auth, gate, log, hosts, addresses);
  const notReady = () => (state.draining ? 'draining' : gate() ?? opts.databaseLost?.());
  registerRest(router, { model, maxBodyBytes: config.maxBodyBytes, answerCacheBytes: config.answerCacheBytes, subscriptions: storedSets, notReady });
  const metricsApp = createApp();
  const metricsRouter = new Router(metricsApp, httpMetrics, auth, gate, log, hosts, addresses);
  let metricsPort: number | undefined;
  registerMetrics(router, metricsRouter, {
    exposition: () => metrics.exposition(), contentType: metrics.registry.contentType, token: config.metricsToken, notReady, port: () => metricsPort,
  });
  registerIngest(app, router, {
    ingest, freshness, auth, hub, gate, log, hosts, addresses, origins: new OriginPolicy('/ingest', 'INGEST_ORIGINS', config.ingestOrigins, hosts),
    maxBodyBytes: config.maxBodyBytes, maxInFlight: config.ingestMaxInFlight, maxItems: config.ingestMaxItems,
    maxQueuedBytes: config.ingestQueueBytes, keyQueues: new KeyQueues(config.ingestKeyQueueBytes),
  });
  registerDocs(router);
  registerWeb(app, hosts);
  router.fallbacks(['/ws', '/ingest']);

  return run({
    config, log, app, pool, router, state, metrics: { app: metricsApp, router: metricsRouter, listening: (port) => (metricsPort = port) },
    steps: {
      prepare: async () => {
        await migrate(pool, log);
        if (config.demoData) await loadDemoIfEmpty(pool, log);
        if (config.auth) await auth.loadAll(pool);
        listener.start();
        await sync.whenLoaded();
        await bus.start(relay, { client: (op, client, mids) => storedSets.apply(op, client, mids) }, freshness);
      },
      started: () => {
        sweeper.start();
        loop.start();
        monitor.start();
        freshness.start();
        return config.simulator
          ? startSimulator({ model, ingest, outside, feeder: freshness.connect(), intervalMs: config.simulatorIntervalMs, lifecycleMs: config.lifecycleIntervalMs, log })
          : undefined;
      },
      sockets: () => hub.sockets,
      publishers: () => hub.drainPublishers(),
      closeSockets: () => {
        sweeper.stop();
        loop.stop();
        monitor.stop();
        freshness.stop();
        bc.stop();
        hub.closeSubscribers();
      },
      stop: async () => {
        sync.stop();
        await bus.close();
        await listener.stop();
      },
    },
    expose: { model, book, hub, broadcaster: bc, ingest },
  });
}
