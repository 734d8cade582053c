import { Events, connect, type NatsConnection } from 'nats';
import type { Logger } from '../../log.js';
import { retry } from '../../lib/retry.js';

export interface LinkEvents {
  /** Connected, first time or again: subscriptions are in place, a sync is due. */
  up(nc: NatsConnection): void;
  /** The connection dropped; the client keeps reconnecting. */
  down(): void;
}

/**
 * One NATS connection for the life of the pod. A pod must start and serve
 * while NATS is away, so the first connect is not awaited past its first
 * failure: it keeps trying in the background, with backoff, for ever; once
 * connected, the client's own reconnect takes over, and a connection that
 * ends for good starts the loop again.
 */
export class NatsLink {
  private nc: NatsConnection | undefined;
  private closing = false;

  constructor(private readonly url: string, private readonly name: string, private readonly log: Logger, private readonly events: LinkEvents) {}

  get connection(): NatsConnection | undefined {
    return this.nc;
  }

  /** Tries once; on failure keeps trying in the background. Resolves whether it connected. */
  async start(): Promise<boolean> {
    try {
      await this.connectOnce();
      return true;
    } catch (err) {
      this.log.warn('nats unreachable; serving alone until it returns', { url: this.url, err: (err as Error).message });
      void this.keepTrying();
      return false;
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    const nc = this.nc;
    this.nc = undefined;
    if (nc && !nc.isClosed()) await nc.drain().catch(() => nc.close());
  }

  private async keepTrying(): Promise<void> {
    await retry(() => this.connectOnce(), { minMs: 250, maxMs: 5000, cancelled: () => this.closing }).catch(() => undefined);
  }

  private async connectOnce(): Promise<void> {
    if (this.closing) return;
    const nc = await connect({ servers: this.url, name: this.name, maxReconnectAttempts: -1, reconnectTimeWait: 250, timeout: 2000 });
    if (this.closing) {
      await nc.close();
      return;
    }
    this.nc = nc;
    this.log.info('nats connected', { url: this.url });
    void this.watch(nc);
    void nc.closed().then(() => {
      if (this.closing || this.nc !== nc) return;
      this.nc = undefined;
      this.events.down();
      void this.keepTrying();
    });
    this.events.up(nc);
  }

  private async watch(nc: NatsConnection): Promise<void> {
    for await (const s of nc.status()) {
      if (s.type === Events.Disconnect) {
        this.log.warn('nats disconnected; reconnecting');
        this.events.down();
      } else if (s.type === Events.Reconnect) {
        this.log.info('nats reconnected; resyncing');
        this.events.up(nc);
      }
    }
  }
}
