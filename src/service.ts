import { readFileSync } from 'node:fs';
import type pg from 'pg';
import type { us_listen_socket } from 'uWebSockets.js';
import type { Config } from './config.js';
import type { Logger } from './log.js';
import { createPool, isUnavailable } from './db/pool.js';
import { retry, sleep } from './lib/retry.js';
import { migrate } from './db/migrate.js';
import { Listener } from './db/listen.js';
import { ReadModel } from './refdata/model.js';
import { ModelSync } from './refdata/sync.js';
import { StoredSets, addMarkets, removeMarkets } from './clients/markets.js';
import { loadDemoIfEmpty } from './demo/load.js';
import { startSimulator } from './demo/run.js';
import { Book } from './odds/book.js';
import { Broadcaster, CLOSE_GOING_AWAY } from './odds/broadcaster.js';
import { stateFrames } from './odds/state.js';
import { Ingest } from './ingest/ingest.js';
import { closeListen, createApp, listen, nativeUws } from './http/app.js';
import { Router } from './http/router.js';
import { registerRest } from './http/rest.js';
import { registerWs } from './http/ws.js';
import { registerIngest } from './http/ingest.js';
import { ServiceMetrics } from './metrics/registry.js';
import { HttpMetrics } from './metrics/http.js';
import { OddsMetrics } from './metrics/odds.js';
import { BusMetrics } from './metrics/bus.js';
import { createBus, linkBus } from './bus/link.js';
import { Auth } from './auth/auth.js';
import { SocketRegistry } from './auth/sockets.js';
import { AuthMetrics } from './metrics/auth.js';

export interface Service {
  readonly port: number;
  readonly url: string;
  readonly pool: pg.Pool;
  readonly model: ReadModel;
  readonly book: Book;
  readonly broadcaster: Broadcaster;
  readonly ingest: Ingest;
  /** Drains and stops: not ready, no new connections, requests finish, sockets get 1001, Postgres closes. */
  close(): Promise<void>;
}

/** How often sockets are checked for backpressure and heartbeats. */
const SWEEP_MS = 100;
const FEED_CHECK_MS = 250;
const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** Waits for Postgres with capped backoff: pods may start before their database does. */
async function waitForPostgres(pool: pg.Pool, log: Logger): Promise<void> {
  await retry(() => pool.query('SELECT 1'), {
    attempts: 60, minMs: 200, maxMs: 5000,
    onRetry: (err, attempt) => log.warn('postgres not reachable yet', { attempt, err: (err as Error).message }),
  });
}

/**
 * Starts everything but the process-level concerns (signals, the embedded
 * server): Postgres schema, demo seed, read model, odds book, HTTP and
 * sockets. Tests run it in-process.
 */
export async function startService(config: Config, databaseUrl: string, log: Logger): Promise<Service> {
  const pool = createPool(databaseUrl, config, log, () => metrics.pgErrors.inc({ kind: 'idle_client_lost' }));
  const model = new ReadModel();
  const metrics = new ServiceMetrics({ pool, modelSize: () => model.size, nativeUws, version: VERSION });
  let starting = true;
  let draining = false;
  /** Data routes and sockets answer 503 until the read model is loaded; probes and metrics always answer. */
  const gate = () => (starting ? 'starting: the read model is not loaded yet' : undefined);
  const app = createApp();
  const book = new Book();
  const odds = new OddsMetrics(metrics.registry);
  const authMetrics = new AuthMetrics(metrics.registry);
  const sockets = new SocketRegistry(config.wsMaxSocketsPerKey, config.wsMaxSockets, config.auth, authMetrics);
  const auth = new Auth(config.auth, config.restRateLimit, authMetrics, (keyId) => sockets.closeKey(keyId));
  const storedSets = new StoredSets(pool);
  const bc = new Broadcaster(app, book, { slowBytes: config.wsSlowBytes, maxBytes: config.wsMaxBackpressure, slowCloseMs: config.wsSlowCloseMs }, odds, log);
  // uWS sets up its topics with the first socket route: publishing before it would crash the process.
  registerWs(app, {
    broadcaster: bc, auth, sockets, gate, metrics: authMetrics, log,
    storedMarkets: (client) => storedSets.get(client),
    limits: { maxMarkets: config.wsMaxMarkets, maxMessageBytes: config.wsMaxMessageBytes, messagesPerSecond: config.wsMessagesPerSecond, idleTimeoutS: config.wsIdleTimeoutS },
  });
  const sync = new ModelSync(pool, model, log, {
    changes: stateFrames(bc),
    lag: (s) => metrics.refreshLag.observe(s),
    failed: () => metrics.pgErrors.inc({ kind: 'refresh' }),
  });
  const listener = new Listener(databaseUrl, 'refdata', {
    onConnect: () => {
      sync.reloadAll();
      if (config.auth) auth.loadAll(pool).catch((err) => log.warn('api keys reload failed', { err: (err as Error).message }));
    },
    onNotify: (key) => {
      if (!key.startsWith('key:')) return sync.notify(key);
      auth.reload(pool, [key.slice(4)]).catch((err) => log.warn('api key reload failed', { err: (err as Error).message }));
    },
    onDisconnect: () => metrics.pgErrors.inc({ kind: 'listener_lost' }),
  }, log, config.pgConnectTimeoutMs);
  const bus = createBus(config, log);
  const ingest = new Ingest(pool, model, book, bc, bus, config.ingestMaxItems, odds, log);
  const link = linkBus(book, bc, ingest, storedSets, new BusMetrics(metrics.registry, bus.kind));
  const router = new Router(app, new HttpMetrics(metrics.registry), auth, gate, log);
  /** Counts Postgres being unreachable for a write, then lets the error answer 503. */
  const counted = async (work: Promise<void>): Promise<void> => {
    await work.catch((err) => {
      if (isUnavailable(err)) metrics.pgErrors.inc({ kind: 'unavailable' });
      throw err;
    });
  };
  registerRest(router, {
    model,
    maxBodyBytes: config.maxBodyBytes,
    answerCacheBytes: config.answerCacheBytes,
    subscriptions: {
      // Live sockets change only after the stored set did, so a 503 leaves both as they were.
      subscribe: async (client, mids) => {
        await counted(addMarkets(pool, client, mids));
        storedSets.invalidate(client);
        bc.attachClient(client, mids);
        bus.publishClient('attach', client, mids);
      },
      unsubscribe: async (client, mids) => {
        await counted(removeMarkets(pool, client, mids));
        storedSets.invalidate(client);
        bc.detachClient(client, mids);
        bus.publishClient('detach', client, mids);
      },
    },
    notReady: () => (draining ? 'draining' : gate()),
  });
  router.getAsync('/metrics', async () => ({ body: await metrics.text(), type: metrics.registry.contentType }));
  registerIngest(app, router, ingest, { auth, sockets, gate }, config.maxBodyBytes, log);
  router.fallbacks(['/ws', '/ingest']);

  // Listening comes first, so /health answers (and a taken port fails) while Postgres is awaited.
  const bound = await listen(app, config.host, config.port).catch(async (err) => {
    await pool.end();
    throw err;
  });
  let listenSocket: us_listen_socket | undefined = bound.socket;
  const host = config.host === '0.0.0.0' ? '127.0.0.1' : config.host;
  const url = `http://${host}:${bound.port}`;
  log.info('listening; starting', { url });
  try {
    await waitForPostgres(pool, log);
    await migrate(pool, log);
    if (config.demoData) await loadDemoIfEmpty(pool, log);
    if (config.auth) await auth.loadAll(pool);
    listener.start();
    await sync.whenLoaded();
    await bus.start(link);
  } catch (err) {
    closeListen(bound.socket);
    await listener.stop();
    await bus.close();
    await pool.end();
    throw err;
  }
  starting = false;

  const sweep = setInterval(() => bc.sweep(), SWEEP_MS);
  const feed = setInterval(() => {
    if (link.isDown() || Date.now() - ingest.lastAt > config.feedStaleMs) bc.setFeed('STALE');
  }, FEED_CHECK_MS);
  const simulator = config.simulator ? startSimulator(model, ingest, config.simulatorIntervalMs, config.lifecycleIntervalMs, log) : undefined;
  log.info('ready', { url, model: model.size, bus: bus.kind, auth: config.auth });

  const shutdown = async (): Promise<void> => {
    draining = true;
    log.info('shutdown: readiness off');
    simulator?.stop();
    if (listenSocket) closeListen(listenSocket);
    listenSocket = undefined;
    log.info('shutdown: listen socket closed');
    await router.drain();
    log.info('shutdown: in-flight requests finished; draining sockets', { sockets: bc.size, drainDelayMs: config.drainDelayMs });
    await sleep(config.drainDelayMs);
    clearInterval(sweep);
    clearInterval(feed);
    bc.closeAll(CLOSE_GOING_AWAY, 'server shutting down');
    log.info('shutdown: sockets closed');
    sync.stop();
    await bus.close();
    await listener.stop();
    // Connections closing now are ours closing, not Postgres being lost.
    pool.removeAllListeners('error').on('error', () => undefined);
    await pool.end();
    log.info('shutdown: postgres pool closed');
  };
  let closing: Promise<void> | undefined;

  return {
    port: bound.port, url, pool, model, book, broadcaster: bc, ingest,
    close: () => (closing ??= shutdown()),
  };
}
