import { randomUUID } from 'node:crypto';
import { JSONCodec, type Msg, type NatsConnection, type NatsError } from 'nats';
import type { NatsAuth, NatsTls } from '../../config.js';
import type { OddsImage } from '../../odds/messages.js';
import type { Logger } from '../../log.js';
import type { BusMetrics, BusSubjectKind } from '../../metrics/bus.js';
import { SerialByKey } from '../../lib/serial.js';
import type { Bus, ClientHandler, ClientOp, HeldImages, ImageCheck, OddsHandler } from '../types.js';
import { NatsLink } from './link.js';
import { Inbound, type ClientChange } from './inbound.js';
import { Sequencer } from './sequencer.js';

const json = JSONCodec<ClientChange>();
/** How long a start waits for the first sync before serving with the feed STALE. */
const START_SYNC_WAIT_MS = 5000;

export interface NatsBusOptions {
  url: string;
  prefix: string;
  auth: NatsAuth;
  tls: NatsTls | undefined;
  book: HeldImages;
  log: Logger;
  /** Ingest's check of an odds image, applied to every image read from the bus. */
  check: ImageCheck;
  metrics: BusMetrics;
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
 * Whatever arrives is checked first (inbound.ts), and a handler that throws
 * is caught, so no message can close a subscription.
 */
export class NatsBus implements Bus {
  readonly kind = 'nats';
  private readonly id = randomUUID();
  private readonly link: NatsLink;
  private readonly serial = new SerialByKey<string>();
  private readonly subscribed = new WeakSet<NatsConnection>();
  private odds: OddsHandler | undefined;
  private clients: ClientHandler | undefined;
  private seq: Sequencer | undefined;
  private readonly inbound: Inbound;

  constructor(private readonly opts: NatsBusOptions) {
    this.inbound = new Inbound(opts);
    this.link = new NatsLink({ url: opts.url, name: `odds-service-${this.id}`, auth: opts.auth, tls: opts.tls }, opts.log, {
      up: (nc) => this.connected(nc),
      down: () => this.seq?.lost(),
    });
  }

  async start(odds: OddsHandler, clients: ClientHandler): Promise<void> {
    this.odds = odds;
    this.clients = clients;
    odds.down(true);
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
    return (this.seq ??= new Sequencer({ ...this.opts, odds: this.odds!, serial: this.serial, inbound: this.inbound }));
  }

  private connected(nc: NatsConnection): void {
    const seq = this.local();
    seq.attach(nc);
    if (!this.subscribed.has(nc)) {
      this.subscribed.add(nc);
      const { prefix } = this.opts;
      nc.subscribe(`${prefix}.img.>`, {
        callback: this.guarded('image', (m) => {
          const s = this.inbound.envelope(m.subject, m.data);
          if (s) seq.received(s);
        }),
      });
      nc.subscribe(`${prefix}.ctl.client`, {
        callback: this.guarded('client', (m) => {
          const c = this.inbound.client(m.data);
          if (c && c.from !== this.id) this.clients?.client(c.op, c.client, c.mids);
        }),
      });
    }
    void seq.requestSync();
  }

  /** A subscription callback that never throws: nats.js would end the subscription on a throw. */
  private guarded(kind: BusSubjectKind, handle: (m: Msg) => void): (err: NatsError | null, m: Msg) => void {
    return (err, m) => {
      if (err) return;
      try {
        handle(m);
      } catch (e) {
        this.inbound.refuse(kind, m.subject, 'undecodable', `handling it threw: ${(e as Error).message}`);
      }
    };
  }
}
