import { randomUUID } from 'node:crypto';
import { type Msg, type NatsConnection, type NatsError } from 'nats';
import type { NatsAuth, NatsTls } from '../../config.js';
import type { OddsImage } from '../../odds/image.js';
import type { Logger } from '../../log.js';
import type { BusMetrics, BusSubjectKind } from '../../metrics/bus.js';
import { SerialByKey } from '../../lib/serial.js';
import type { Bus, ClientHandler, StoredSetOp, FreshnessHandler, BusBook, ImageCheck, OddsHandler, SourceFreshness } from '../types.js';
import type { RecordLogCounts } from '../record-log.js';
import { NatsRecordLog } from './record-log.js';
import { NatsLink, type LinkListener } from './link.js';
import { Inbound, MAX_FRESHNESS_STATES } from './inbound.js';
import { Sequencer } from './sequencer.js';
import { OddsStream } from './stream.js';
import { ANNOUNCE_MS, Pods } from './pods.js';

const encoder = new TextEncoder();
const json = (v: unknown): Uint8Array => encoder.encode(JSON.stringify(v));
/** How long a start waits for the first sync before serving with the feed STALE. */
const START_SYNC_WAIT_MS = 5000;

export interface NatsBusOptions {
  url: string;
  prefix: string;
  auth: NatsAuth;
  tls: NatsTls | undefined;
  book: BusBook;
  log: Logger;
  /** Ingest's check of an odds image, applied to every image read from the bus. */
  check: ImageCheck;
  metrics: BusMetrics;
  /** The record's log on the bus (none with RECORD=off): its bound in bytes, and what it counts. */
  record?: { maxBytes: number; batch: number; counts: RecordLogCounts };
}

/**
 * NATS between pods. Every image is first stored in a JetStream stream, one
 * subject per market, under an expected last sequence, so its (epoch, seq)
 * is the same on every pod whichever pod took the ingest (sequencer.ts); the
 * pod then fans the stored frame out on `<prefix>.img.<mid>`, the very
 * protobuf frame subscribers get, prefixed by its stream sequence. Client
 * changes go on `<prefix>.ctl.client`, tagged with the sender so it ignores
 * its own; so do markets' freshness (`<prefix>.ctl.freshness`, from the pod
 * whose publishers feed them) and each pod's announcement, every second, on
 * `<prefix>.ctl.pod`: a pod silent for two of them is gone, and so is the
 * freshness of the markets it fed. While NATS is away the pod numbers images itself in an epoch of
 * its own, and once back stores the newest of each market before syncing.
 * Whatever arrives is checked first (inbound.ts), and a handler that throws
 * is caught, so no message can close a subscription.
 */
export class NatsBus implements Bus, LinkListener {
  readonly kind = 'nats';
  readonly record: NatsRecordLog | undefined;
  private readonly id = randomUUID();
  private readonly link: NatsLink;
  private readonly serial = new SerialByKey<string>();
  private readonly subscribed = new WeakSet<NatsConnection>();
  private odds: OddsHandler | undefined;
  private clients: ClientHandler | undefined;
  private freshness: FreshnessHandler | undefined;
  private seq: Sequencer | undefined;
  private readonly inbound: Inbound;
  private readonly pods = new Pods();
  private announcer: NodeJS.Timeout | undefined;
  /** A pod joined or came back since the last announcement: what this pod's publishers feed is told again. */
  private retell = false;

  constructor(private readonly opts: NatsBusOptions) {
    this.inbound = new Inbound(opts);
    this.link = new NatsLink({ url: opts.url, name: `odds-service-${this.id}`, auth: opts.auth, tls: opts.tls }, opts.log, this);
    this.record = opts.record && new NatsRecordLog({ prefix: opts.prefix, ...opts.record, link: this.link, check: opts.check });
  }

  async start(odds: OddsHandler, clients: ClientHandler, freshness: FreshnessHandler): Promise<void> {
    this.odds = odds;
    this.clients = clients;
    this.freshness = freshness;
    this.announcer = setInterval(() => this.announce(), ANNOUNCE_MS);
    this.announcer.unref();
    odds.down(true);
    if (!(await this.link.start())) return;
    const synced = this.seq?.synced();
    if (synced) await Promise.race([synced, new Promise((ok) => setTimeout(ok, START_SYNC_WAIT_MS).unref())]);
  }

  publish(image: OddsImage, publishTime: number): Promise<void> | void {
    const seq = this.seq;
    if (!seq) {
      this.local().number(image, publishTime);
      return;
    }
    return this.serial.run(image.marketId, () => seq.publish(image, publishTime));
  }

  publishClient(op: StoredSetOp, client: string, mids: readonly string[]): void {
    this.link.connection?.publish(`${this.opts.prefix}.ctl.client`, json({ from: this.id, op, client, mids: [...mids] }));
  }

  shareFreshness(states: readonly SourceFreshness[]): void {
    const nc = this.link.connection;
    if (!nc) return;
    for (let i = 0; i < states.length; i += MAX_FRESHNESS_STATES) {
      const part = states.slice(i, i + MAX_FRESHNESS_STATES).map((s) => [s.mid, s.why ?? null, s.at]);
      nc.publish(`${this.opts.prefix}.ctl.freshness`, json({ from: this.id, states: part }));
    }
  }

  async close(): Promise<void> {
    clearInterval(this.announcer);
    this.seq?.stop();
    await this.link.close();
  }

  /** Before the first connection there is no stream to number with: the pod numbers alone. */
  private local(): Sequencer {
    return (this.seq ??= new Sequencer({ ...this.opts, odds: this.odds!, serial: this.serial, inbound: this.inbound }));
  }

  /** Connected, first time or again: a new connection gets its stream and subscriptions; every connect syncs. */
  up(nc: NatsConnection): void {
    const seq = this.local();
    if (!this.subscribed.has(nc)) {
      this.subscribed.add(nc);
      const { prefix } = this.opts;
      seq.attach(new OddsStream(nc, prefix, this.inbound));
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
      nc.subscribe(`${prefix}.ctl.freshness`, {
        callback: this.guarded('freshness', (m) => {
          const f = this.inbound.freshness(m.data);
          if (f && f.from !== this.id) this.freshness?.reported(f.from, f.states);
        }),
      });
      nc.subscribe(`${prefix}.ctl.pod`, {
        callback: this.guarded('pod', (m) => {
          const pod = this.inbound.pod(m.data);
          if (pod && pod !== this.id) this.podHeard(pod);
        }),
      });
    }
    void seq.requestSync();
    this.record?.ensure(nc).catch((err: Error) => this.opts.log.warn('nats: the record\'s stream could not be made; retried at the next read', { err: err.message }));
    // Whatever was shared while the bus was away was lost: every pod hears again what this one's publishers feed.
    this.announce();
    this.shareFreshness(this.freshness?.fedHere() ?? []);
  }

  /** The connection dropped: the pod numbers alone until the next sync. */
  down(): void {
    this.seq?.lost();
  }

  private podHeard(pod: string): void {
    const heard = this.pods.heard(pod, Date.now());
    if (heard === 'full') return this.inbound.refuse('pod', `${this.opts.prefix}.ctl.pod`, 'overload', 'more pods announce themselves than this pod keeps');
    if (heard === 'known') return;
    this.freshness?.pod(pod, true);
    this.retell = true;
  }

  /** Every second: this pod is alive; pods silent for two announcements are gone; a pod that joined hears what this one's publishers feed. */
  private announce(): void {
    for (const pod of this.pods.silent(Date.now())) this.freshness?.pod(pod, false);
    const nc = this.link.connection;
    if (!nc) return;
    nc.publish(`${this.opts.prefix}.ctl.pod`, json({ from: this.id }));
    if (this.retell) {
      this.retell = false;
      this.shareFreshness(this.freshness?.fedHere() ?? []);
    }
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
