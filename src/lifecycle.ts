import type pg from 'pg';
import type { TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import type { Config } from './config.js';
import type { Logger } from './log.js';
import { closeListen, listen } from './http/app.js';
import type { Router } from './http/router.js';
import { retry, sleep } from './lib/retry.js';
import type { ReadModel } from './refdata/model.js';
import type { Book } from './odds/book.js';
import type { Hub } from './hub/hub.js';
import type { Broadcaster } from './hub/broadcaster.js';
import type { Ingest } from './ingest/ingest.js';

export interface Service {
  readonly port: number;
  /** Where a client on this machine reaches it. */
  readonly url: string;
  /** The address and port the listen socket is bound to, in words: `0.0.0.0:8080 (every interface)`. */
  readonly bound: string;
  /** Where `/metrics` (and the probes) listen, apart from the public port. */
  readonly metricsPort: number;
  readonly metricsUrl: string;
  readonly pool: pg.Pool;
  readonly model: ReadModel;
  readonly book: Book;
  readonly hub: Hub;
  readonly broadcaster: Broadcaster;
  readonly ingest: Ingest;
  /** Drains and stops: not ready, no new connections, requests finish, publishers answered, sockets get 1001, Postgres closes. */
  close(): Promise<void>;
}

/** The parts' own steps, in the order the service runs them. */
interface Steps {
  /** After Postgres answers: schema, seed, read model, bus. */
  prepare(): Promise<void>;
  /** Ready: timers and the simulator. */
  started(): { stop(): void } | undefined;
  /** Open sockets, subscribers and publishers: what the drain waits for. */
  sockets(): number;
  /** Publishers stop taking batches, answer those they took, and close. */
  publishers(): Promise<void>;
  closeSockets(): void;
  /** Everything that talks to Postgres or NATS, before the pool ends. */
  stop(): Promise<void>;
}

interface RunOptions {
  config: Config;
  log: Logger;
  app: TemplatedApp;
  pool: pg.Pool;
  router: Router;
  /** The metrics listener's app and routes; told its port once it listens. */
  metrics: { app: TemplatedApp; router: Router; listening(port: number): void };
  state: { starting: boolean; draining: boolean };
  steps: Steps;
  expose: Pick<Service, 'model' | 'book' | 'hub' | 'broadcaster' | 'ingest'>;
}

const ANY = new Set(['0.0.0.0', '::']);
const bracketed = (host: string): string => (host.includes(':') ? `[${host}]` : host);

/** The address a local client dials: a wildcard bind is reached on loopback. */
function reachable(host: string): string {
  return host === '::' ? '[::1]' : host === '0.0.0.0' ? '127.0.0.1' : bracketed(host);
}

/** The bound address as the log and start line show it, saying plainly when it is every interface. */
function describeBound(host: string, port: number): string {
  return `${bracketed(host)}:${port}${ANY.has(host) ? ' (every interface)' : ''}`;
}

/** How often the drain looks whether every socket has gone. */
const DRAIN_POLL_MS = 50;

/**
 * Lets sockets keep their feed for up to `ms` while their clients move away,
 * ending as soon as none is left: with nothing to drain, shutdown goes on at once.
 */
async function drainSockets(sockets: () => number, ms: number): Promise<void> {
  const end = Date.now() + ms;
  for (let left = ms; sockets() > 0 && left > 0; left = end - Date.now()) await sleep(Math.min(DRAIN_POLL_MS, left));
}

/** Waits for Postgres with capped backoff: pods may start before their database does. */
async function waitForPostgres(pool: pg.Pool, log: Logger): Promise<void> {
  await retry(() => pool.query('SELECT 1'), {
    attempts: 60, minMs: 200, maxMs: 5000,
    onRetry: (err, attempt) => log.warn('postgres not reachable yet', { attempt, err: (err as Error).message }),
  });
}

/** `http://host:port`, with a wildcard address written as loopback so it can be used from here. */
const urlOf = (host: string, port: number): string => `http://${reachable(host)}:${port}`;

/** Both listeners, the public one first; neither is left open when the other fails. */
async function listenBoth(o: RunOptions): Promise<{ main: us_listen_socket; port: number; metrics: us_listen_socket; metricsPort: number }> {
  const { config, app, metrics, pool } = o;
  try {
    const main = await listen(app, config.host, config.port);
    const m = await listen(metrics.app, config.metricsHost, config.metricsPort).catch((err: Error) => {
      closeListen(main.socket);
      throw new Error(`${err.message} (METRICS_PORT)`);
    });
    return { main: main.socket, port: main.port, metrics: m.socket, metricsPort: m.port };
  } catch (err) {
    await pool.end();
    throw err;
  }
}

/**
 * Start and shutdown, in order. Listening comes first, so /health answers (and
 * a taken port fails) while Postgres is awaited. The metrics listener closes
 * last, so Prometheus sees the drain. Shutdown takes the pod out of
 * rotation, lets requests and sockets finish, answers every batch a publisher
 * sent, and only then closes the bus and Postgres, so nothing is acked that
 * could no longer be written or published.
 */
export async function run(o: RunOptions): Promise<Service> {
  const { config, log, pool, router, state, steps } = o;
  const bound = await listenBoth(o);
  let listenSocket: us_listen_socket | undefined = bound.main;
  o.metrics.listening(bound.metricsPort);
  const url = urlOf(config.host, bound.port);
  const metricsUrl = urlOf(config.metricsHost, bound.metricsPort);
  const where = describeBound(config.host, bound.port);
  log.info('listening; starting', { url, bound: where, metrics: metricsUrl });
  try {
    await waitForPostgres(pool, log);
    await steps.prepare();
  } catch (err) {
    closeListen(bound.main);
    closeListen(bound.metrics);
    await steps.stop();
    await pool.end();
    throw err;
  }
  state.starting = false;
  const simulator = steps.started();
  log.info('ready', { url, bus: config.bus, auth: config.auth });

  const shutdown = async (): Promise<void> => {
    state.draining = true;
    log.info('shutdown: readiness off');
    simulator?.stop();
    if (listenSocket) closeListen(listenSocket);
    listenSocket = undefined;
    log.info('shutdown: listen socket closed');
    await router.drain();
    log.info('shutdown: in-flight requests finished; draining sockets', { sockets: steps.sockets(), drainDelayMs: config.drainDelayMs });
    await drainSockets(steps.sockets, config.drainDelayMs);
    await steps.publishers();
    log.info('shutdown: publishers answered and closed');
    steps.closeSockets();
    log.info('shutdown: sockets closed');
    await steps.stop();
    // Connections closing now are ours closing, not Postgres being lost.
    pool.removeAllListeners('error').on('error', () => undefined);
    await pool.end();
    log.info('shutdown: postgres pool closed');
    closeListen(bound.metrics);
    await o.metrics.router.drain();
  };
  let closing: Promise<void> | undefined;
  return {
    port: bound.port, url, bound: where, metricsPort: bound.metricsPort, metricsUrl, pool, ...o.expose,
    close: () => (closing ??= shutdown()),
  };
}
