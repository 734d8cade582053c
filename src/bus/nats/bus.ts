import { randomUUID } from 'node:crypto';
import { JSONCodec, type NatsConnection } from 'nats';
import type { Book } from '../../odds/book.js';
import type { OddsImage } from '../../odds/messages.js';
import type { Logger } from '../../log.js';
import { SerialByKey } from '../../lib/serial.js';
import type { Bus, BusHandlers, ClientOp } from '../types.js';
import { NatsLink } from './connection.js';
import { unwrap } from './stream.js';
import { Sequencer } from './sequencer.js';

interface ClientChange {
  from: string;
  op: ClientOp;
  client: string;
  mids: string[];
}

const json = JSONCodec<ClientChange>();
/** How long a start waits for the first sync before serving with the feed STALE. */
const START_SYNC_WAIT_MS = 5000;

export interface NatsBusOptions {
  url: string;
  prefix: string;
  book: Book;
  log: Logger;
}

/**
 * NATS between pods. Every image is first stored in a JetStream stream, one
 * subject per market, under an expected last sequence, so its (epoch, seq)
 * is the same on every pod whichever pod took the ingest (sequencer.ts); the
 * pod then fans the stored frame out on `<prefix>.img.<mid>`, the very
 * protobuf frame subscribers get, prefixed by its stream sequence. Client
 * changes go on `<prefix>.ctl.client`, tagged with the sender so it ignores
 * its own. While NATS is away the pod numbers images itself in an epoch of
 * its own, and once back stores the newest of each market before syncing.
 */
export class NatsBus implements Bus {
  readonly kind = 'nats';
  private readonly id = randomUUID();
  private readonly link: NatsLink;
  private readonly serial = new SerialByKey<string>();
  private readonly subscribed = new WeakSet<NatsConnection>();
  private handlers: BusHandlers | undefined;
  private seq: Sequencer | undefined;

  constructor(private readonly opts: NatsBusOptions) {
    this.link = new NatsLink(opts.url, `odds-service-${this.id}`, opts.log, {
      up: (nc) => this.connected(nc),
      down: () => this.seq?.lost(),
    });
  }

  async start(h: BusHandlers): Promise<void> {
    this.handlers = h;
    h.down(true);
    if (!(await this.link.start())) return;
    const synced = this.seq?.synced();
    if (synced) await Promise.race([synced, new Promise((ok) => setTimeout(ok, START_SYNC_WAIT_MS).unref())]);
  }

  publish(image: OddsImage, pt: number): Promise<void> | void {
    const seq = this.seq;
    if (!seq) {
      this.local().number(image, pt);
      return;
    }
    return this.serial.run(image.mid, () => seq.publish(image, pt));
  }

  publishClient(op: ClientOp, client: string, mids: readonly string[]): void {
    this.link.connection?.publish(`${this.opts.prefix}.ctl.client`, json.encode({ from: this.id, op, client, mids: [...mids] }));
  }

  async close(): Promise<void> {
    this.seq?.stop();
    await this.link.close();
  }

  /** Before the first connection there is no stream to number with: the pod numbers alone. */
  private local(): Sequencer {
    return (this.seq ??= new Sequencer({ ...this.opts, handlers: this.handlers!, serial: this.serial }));
  }

  private connected(nc: NatsConnection): void {
    const seq = this.local();
    seq.attach(nc);
    if (!this.subscribed.has(nc)) {
      this.subscribed.add(nc);
      const { prefix, log } = this.opts;
      nc.subscribe(`${prefix}.img.>`, {
        callback: (err, m) => {
          if (err) return;
          try {
            const s = unwrap(m.data);
            if (s) seq.received(s);
          } catch (e) {
            log.warn('undecodable odds image on the bus', { err: (e as Error).message });
          }
        },
      });
      nc.subscribe(`${prefix}.ctl.client`, {
        callback: (err, m) => {
          if (err) return;
          const c = json.decode(m.data);
          if (c.from !== this.id) this.handlers?.client(c.op, c.client, c.mids);
        },
      });
    }
    void seq.requestSync();
  }
}
