import pg from 'pg';
import type { Logger } from '../log.js';
import { Backoff } from '../lib/retry.js';

export interface ListenerHandlers {
  /** Called after every (re)connect, once LISTEN is in place: anything may have been missed before it. */
  onConnect(): void;
  onNotify(payload: string): void;
  onDisconnect(): void;
}

/**
 * One dedicated connection for LISTEN, kept out of the pool because a pooled
 * client is handed to other work and would lose the subscription. When it
 * drops it reconnects with capped exponential backoff until stopped.
 */
export class Listener {
  private client: pg.Client | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly backoff = new Backoff(100, 5000);
  private stopped = false;
  connected = false;

  constructor(
    private readonly url: string,
    private readonly channel: string,
    private readonly handlers: ListenerHandlers,
    private readonly log: Logger,
    private readonly connectTimeoutMs: number,
  ) {}

  start(): void {
    void this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    const client = this.client;
    this.client = undefined;
    if (client) await client.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: this.connectTimeoutMs, keepAlive: true });
    this.client = client;
    client.on('notification', (msg) => {
      if (msg.payload) this.handlers.onNotify(msg.payload);
    });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${this.channel}`);
    } catch (err) {
      this.lost(client, err as Error);
      return;
    }
    if (this.client !== client) return;
    this.connected = true;
    this.backoff.reset();
    this.log.info('postgres listener connected', { channel: this.channel });
    this.handlers.onConnect();
  }

  private lost(client: pg.Client, err?: Error): void {
    if (this.client !== client || this.stopped) return;
    this.client = undefined;
    client.end().catch(() => undefined);
    if (this.connected) {
      this.connected = false;
      this.log.warn('postgres listener lost', { err: err?.message });
      this.handlers.onDisconnect();
    }
    this.timer = setTimeout(() => void this.connect(), this.backoff.next());
  }
}
