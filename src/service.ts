import type pg from 'pg';
import type { us_listen_socket } from 'uWebSockets.js';
import type { Config } from './config.js';
import type { Logger } from './log.js';
import { createPool } from './db/pool.js';
import { migrate } from './db/migrate.js';
import { Listener } from './db/listen.js';
import { ReadModel } from './refdata/model.js';
import { ModelSync } from './refdata/sync.js';
import { addMarkets, listMarkets, removeMarkets } from './clients/markets.js';
import { loadDemoIfEmpty } from './demo/load.js';
import { startSimulator } from './demo/run.js';
import { Book } from './odds/book.js';
import { Broadcaster, CLOSE_GOING_AWAY } from './odds/broadcaster.js';
import { stateFrames } from './odds/state.js';
import { Ingest } from './ingest/ingest.js';
import { closeListen, createApp, listen } from './http/app.js';
import { ROUTES, SOCKET_ROUTES, registerFallbacks, registerRest } from './http/rest.js';
import { registerWs } from './http/ws.js';
import { registerIngest } from './http/ingest.js';

export interface Service {
  readonly port: number;
  readonly url: string;
  readonly pool: pg.Pool;
  readonly model: ReadModel;
  readonly book: Book;
  readonly broadcaster: Broadcaster;
  readonly ingest: Ingest;
  close(): Promise<void>;
}

/** How often sockets are checked for backpressure and heartbeats. */
const SWEEP_MS = 100;
const FEED_CHECK_MS = 250;

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

/** Waits for Postgres with capped backoff: pods may start before their database does. */
async function waitForPostgres(pool: pg.Pool, log: Logger, attempts = 60): Promise<void> {
  for (let i = 1; ; i++) {
    try {
      await pool.query('SELECT 1');
      return;
    } catch (err) {
      if (i >= attempts) throw err;
      log.warn('postgres not reachable yet', { attempt: i, err: (err as Error).message });
      await sleep(Math.min(100 * 2 ** i, 5000));
    }
  }
}

/**
 * Starts everything but the process-level concerns (signals, the embedded
 * server): Postgres schema, demo seed, read model, odds book, HTTP and
 * sockets. Tests run it in-process.
 */
export async function startService(config: Config, databaseUrl: string, log: Logger): Promise<Service> {
  const pool = createPool(databaseUrl, config, log);
  let draining = false;
  let listenSocket: us_listen_socket | undefined;
  const app = createApp();
  const book = new Book();
  const broadcaster = new Broadcaster(app, book, { slowBytes: config.wsSlowBytes, maxBytes: config.wsMaxBackpressure, slowCloseMs: config.wsSlowCloseMs }, log);
  const model = new ReadModel();
  const sync = new ModelSync(pool, model, log, stateFrames(broadcaster));
  const listener = new Listener(databaseUrl, 'refdata', {
    onConnect: () => sync.reloadAll(),
    onNotify: (key) => sync.notify(key),
    onDisconnect: () => undefined,
  }, log, config.pgConnectTimeoutMs);

  try {
    await waitForPostgres(pool, log);
    await migrate(pool, log);
    if (config.demoData) await loadDemoIfEmpty(pool, log);
    listener.start();
    await sync.whenLoaded();
  } catch (err) {
    await listener.stop();
    await pool.end();
    throw err;
  }

  const ingest = new Ingest(pool, model, book, broadcaster, config.ingestMaxItems, log);
  registerRest(app, {
    model,
    log,
    maxBodyBytes: config.maxBodyBytes,
    subscriptions: {
      // Live sockets change only after the stored set did, so a 503 leaves both as they were.
      subscribe: async (client, mids) => {
        await addMarkets(pool, client, mids);
        broadcaster.attachClient(client, mids);
      },
      unsubscribe: async (client, mids) => {
        await removeMarkets(pool, client, mids);
        broadcaster.detachClient(client, mids);
      },
    },
    notReady: () => (draining ? 'draining' : sync.loaded ? undefined : 'starting'),
  });
  registerWs(app, {
    broadcaster,
    log,
    storedMarkets: (client) => listMarkets(pool, client),
    limits: {
      maxMarkets: config.wsMaxMarkets, maxMessageBytes: config.wsMaxMessageBytes, messagesPerSecond: config.wsMessagesPerSecond,
      idleTimeoutS: config.wsIdleTimeoutS,
    },
  });
  registerIngest(app, ingest, config.maxBodyBytes, log);
  registerFallbacks(app, ROUTES, SOCKET_ROUTES);

  const sweep = setInterval(() => broadcaster.sweep(), SWEEP_MS);
  const feed = setInterval(() => {
    if (Date.now() - ingest.lastAt > config.feedStaleMs) broadcaster.setFeed('STALE');
  }, FEED_CHECK_MS);
  const simulator = config.simulator ? startSimulator(model, ingest, config.simulatorIntervalMs, config.lifecycleIntervalMs, log) : undefined;

  const bound = await listen(app, config.host, config.port);
  listenSocket = bound.socket;
  const host = config.host === '0.0.0.0' ? '127.0.0.1' : config.host;
  const url = `http://${host}:${bound.port}`;
  log.info('listening', { url, model: model.size });

  let closing: Promise<void> | undefined;
  const shutdown = async (): Promise<void> => {
    draining = true;
    simulator?.stop();
    clearInterval(sweep);
    clearInterval(feed);
    if (listenSocket) closeListen(listenSocket);
    listenSocket = undefined;
    broadcaster.closeAll(CLOSE_GOING_AWAY, 'server shutting down');
    sync.stop();
    await listener.stop();
    await pool.end();
  };

  return {
    port: bound.port,
    url,
    pool,
    model,
    book,
    broadcaster,
    ingest,
    close: () => (closing ??= shutdown()),
  };
}
