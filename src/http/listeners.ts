import type { TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import type { Logger } from '../log.js';
import type { Component } from '../lib/component.js';
import { closeListen, listen } from './app.js';
import type { Router } from './router.js';

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

/** `http://host:port`, with a wildcard address written as loopback so it can be used from here. */
const urlOf = (host: string, port: number): string => `http://${reachable(host)}:${port}`;

export interface ListenersOptions {
  /** The public port's app, on HOST and PORT. */
  app: TemplatedApp;
  host: string;
  port: number;
  /** The metrics port's app and routes, on METRICS_HOST and METRICS_PORT. */
  metricsApp: TemplatedApp;
  metricsRouter: Router;
  metricsHost: string;
  metricsPort: number;
  log: Logger;
}

/**
 * Both listen sockets, the public one first; neither is left open when the
 * other fails. The service starts them before anything else, so /health
 * answers (and a taken port fails) while Postgres is awaited, and stops them
 * last: the public one closes early in the drain (`closePublic`, by the
 * public edge), the metrics one at the very end, so Prometheus sees the drain.
 */
export class Listeners implements Component {
  readonly name = 'listeners';
  /** 0 until bound. */
  port = 0;
  metricsPort = 0;
  /** Where a client on this machine reaches each, and the public bind in words. */
  url = '';
  metricsUrl = '';
  bound = '';
  private main: us_listen_socket | undefined;
  private metrics: us_listen_socket | undefined;

  constructor(private readonly o: ListenersOptions) {}

  async start(): Promise<void> {
    const { o } = this;
    const main = await listenNaming(o.app, o.host, o.port, 'PORT');
    this.main = main.socket;
    const metrics = await listenNaming(o.metricsApp, o.metricsHost, o.metricsPort, 'METRICS_PORT');
    this.metrics = metrics.socket;
    this.port = main.port;
    this.metricsPort = metrics.port;
    this.url = urlOf(o.host, main.port);
    this.metricsUrl = urlOf(o.metricsHost, metrics.port);
    this.bound = describeBound(o.host, main.port);
    o.log.info('listening; starting', { url: this.url, bound: this.bound, metrics: this.metricsUrl });
  }

  /** No new connection on the public port; those open go on. */
  closePublic(): void {
    if (this.main) closeListen(this.main);
    this.main = undefined;
  }

  async stop(): Promise<void> {
    this.closePublic();
    if (this.metrics) closeListen(this.metrics);
    this.metrics = undefined;
    await this.o.metricsRouter.drain();
  }
}

/** Listens, a failure naming the variable that sets the port: the fix (another port) is plain from the one line. */
async function listenNaming(app: TemplatedApp, host: string, port: number, variable: string): ReturnType<typeof listen> {
  try {
    return await listen(app, host, port);
  } catch (err) {
    throw new Error(`${(err as Error).message} (${variable})`);
  }
}
