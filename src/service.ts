import type pg from 'pg';
import type { us_listen_socket } from 'uWebSockets.js';
import type { Config } from './config.js';
import type { Logger } from './log.js';
import { createPool } from './db/pool.js';
import { migrate } from './db/migrate.js';
import { Listener } from './db/listen.js';
import { ReadModel } from './refdata/model.js';
import { ModelSync } from './refdata/sync.js';
import { addMarkets, removeMarkets } from './clients/markets.js';
import { loadDemoIfEmpty } from './demo/load.js';
import { closeListen, createApp, listen } from './http/app.js';
import { registerRest } from './http/rest.js';

export interface Service {
  readonly port: number;
  readonly url: string;
  readonly pool: pg.Pool;
  readonly model: ReadModel;
  close(): Promise<void>;
}

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
 * server): Postgres schema, demo seed, read model, HTTP. Tests run it in-process.
 */
export async function startService(config: Config, databaseUrl: string, log: Logger): Promise<Service> {
  const pool = createPool(databaseUrl, config, log);
  let draining = false;
  let listenSocket: us_listen_socket | undefined;
  const model = new ReadModel();
  const sync = new ModelSync(pool, model, log);
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

  const app = createApp();
  registerRest(app, {
    model,
    log,
    maxBodyBytes: config.maxBodyBytes,
    subscriptions: {
      subscribe: (client, mids) => addMarkets(pool, client, mids),
      unsubscribe: (client, mids) => removeMarkets(pool, client, mids),
    },
    notReady: () => (draining ? 'draining' : sync.loaded ? undefined : 'starting'),
  });
  const bound = await listen(app, config.host, config.port);
  listenSocket = bound.socket;
  const host = config.host === '0.0.0.0' ? '127.0.0.1' : config.host;
  const url = `http://${host}:${bound.port}`;
  log.info('listening', { url, model: model.size });

  return {
    port: bound.port,
    url,
    pool,
    model,
    close: async () => {
      draining = true;
      if (listenSocket) closeListen(listenSocket);
      listenSocket = undefined;
      sync.stop();
      await listener.stop();
      await pool.end();
    },
  };
}
