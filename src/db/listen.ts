import pg from 'pg';
import type { Logger } from '../log.js';
import { Backoff } from '../lib/retry.js';
import type { Component } from '../lib/component.js';

/** What the LISTEN connection tells: registered with `listen` before it starts. */
export interface ListenerHandlers {
  /** Called after every (re)connect, once LISTEN is in place: anything may have been missed before it. */
  onConnect(): void;
  onNotify(payload: string): void;
  onDisconnect(): void;
}

/** How the LISTEN connection names itself in pg_stat_activity, so an operator can tell it from the pool's. */
export const LISTENER_NAME = 'odds-service-listen';

interface ListenerOptions {
  url: string;
  channel: string;
  log: Logger;
  connectTimeoutMs: number;
  /** How often the connection is pinged; an unanswered ping (half the interval) counts as lost. */
  pingMs: number;
}

/**
 * One dedicated connection for LISTEN, kept out of the pool because a pooled
 * client is handed to other work and would lose the subscription. When it
 * drops it reconnects with capped exponential backoff until stopped. A
 * connection can also go half-open (the server or the network gone without a
 * word), which TCP alone notices only after hours: a periodic ping finds it.
 */
export class Listener implements Component {
  readonly name = 'postgres listener';
  private handlers: ListenerHandlers | undefined;
  private client: pg.Client | undefined;
  private timer: NodeJS.Timeout | undefined;
  private ping: NodeJS.Timeout | undefined;
  private readonly backoff = new Backoff(100, 5000);
  private stopped = false;
  connected = false;

  constructor(private readonly opts: ListenerOptions) {}

  /** Who is told of each connect, notification and loss: one of them, registered before the start. */
  listen(handlers: ListenerHandlers): void {
    this.handlers = handlers;
  }

  start(): void {
    void this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.ping);
    const client = this.client;
    this.client = undefined;
    if (client) await client.end().catch(() => undefined);
  }

  /**
   * Sends a notification from this connection, so that its receivers can tell
   * which pod it came from (the backend pid of this pod's LISTEN connection).
   * Dropped while disconnected: the pod reloads everything when it is back.
   */
  notify(channel: string, payload: string): void {
    if (!this.connected) return;
    this.client?.query('SELECT pg_notify($1, $2)', [channel, payload]).catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const { url, channel, connectTimeoutMs, pingMs, log } = this.opts;
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: connectTimeoutMs, keepAlive: true, query_timeout: Math.max(500, pingMs / 2), application_name: LISTENER_NAME });
    this.client = client;
    client.on('notification', (msg) => {
      if (msg.payload) this.handlers?.onNotify(msg.payload);
    });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${channel}`);
    } catch (err) {
      this.lost(client, err as Error);
      return;
    }
    if (this.client !== client) return;
    this.connected = true;
    this.backoff.reset();
    log.info('postgres listener connected', { channel });
    clearInterval(this.ping);
    this.ping = setInterval(() => {
      client.query('SELECT 1').catch((err: Error) => this.lost(client, new Error(`ping unanswered: ${err.message}`)));
    }, pingMs);
    this.handlers?.onConnect();
  }

  private lost(client: pg.Client, err?: Error): void {
    if (this.client !== client || this.stopped) return;
    this.client = undefined;
    clearInterval(this.ping);
    // end() waits for the server's goodbye, which a half-open connection never sends.
    (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
    client.end().catch(() => undefined);
    if (this.connected) {
      this.connected = false;
      this.opts.log.warn('postgres listener lost', { err: err?.message });
      this.handlers?.onDisconnect();
    }
    this.timer = setTimeout(() => void this.connect(), this.backoff.next());
  }
}
