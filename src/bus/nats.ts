import { randomUUID } from 'node:crypto';
import { DeliverPolicy, Events, JSONCodec, connect, type NatsConnection } from 'nats';
import { decodeServerProto, encodeProto } from '../odds/codec.js';
import type { OddsImage, OddsMessage } from '../odds/messages.js';
import type { Logger } from '../log.js';
import type { Bus, BusHandlers, ClientOp } from './types.js';

interface ClientChange {
  from: string;
  op: ClientOp;
  client: string;
  mids: string[];
}

const json = JSONCodec<ClientChange>();

/** How long an ingest waits for JetStream to order an image before numbering it locally. */
const SEQUENCE_TIMEOUT_MS = 1000;

/**
 * NATS between pods. Each odds image is first stored in a JetStream stream
 * (`<prefix>.raw.<mid>`, the last one per market kept): the stream sequence
 * it gets is its seq on every pod, whichever pod took the ingest. The pod then
 * fans the frame out on `<prefix>.img.<mid>`, the very protobuf frame
 * subscribers get. A pod that starts, or comes back after an outage, loads
 * the newest image of every market from the stream. Client changes go on
 * `<prefix>.ctl.client`, tagged with the sender so it ignores its own.
 */
export class NatsBus implements Bus {
  readonly kind = 'nats';
  private nc: NatsConnection | undefined;
  private readonly id = randomUUID();
  /** Images published while disconnected, newest per market, sent again once back (receivers ignore repeats by seq). */
  private pending: Map<string, Uint8Array> | undefined;
  private down = false;
  private readonly stream: string;

  constructor(private readonly url: string, private readonly prefix: string, private readonly log: Logger) {
    this.stream = `${prefix.replace(/[^A-Za-z0-9_-]/g, '_').toUpperCase()}_ODDS`;
  }

  async start(h: BusHandlers): Promise<void> {
    const nc = await connect({ servers: this.url, name: `odds-service-${this.id}`, maxReconnectAttempts: -1, reconnectTimeWait: 250, waitOnFirstConnect: true });
    this.nc = nc;
    this.log.info('nats connected', { url: this.url, stream: this.stream });
    nc.subscribe(`${this.prefix}.img.>`, { callback: (err, m) => !err && this.receive(h, m.data) });
    nc.subscribe(`${this.prefix}.ctl.client`, {
      callback: (err, m) => {
        if (err) return;
        const c = json.decode(m.data);
        if (c.from !== this.id) h.client(c.op, c.client, c.mids);
      },
    });
    await this.ensureStream();
    await this.resync(h);
    this.watch(nc, h).catch((err) => this.log.error('nats status watch ended', { err: (err as Error).message }));
  }

  async sequence(image: OddsImage, pt: number): Promise<number | undefined> {
    if (!this.nc || this.down) return undefined;
    try {
      const raw = encodeProto({ op: 'odds', ...image, seq: 0, pt, con: false });
      return (await this.nc.jetstream().publish(`${this.prefix}.raw.${image.mid}`, raw, { timeout: SEQUENCE_TIMEOUT_MS })).seq;
    } catch (err) {
      this.log.debug('jetstream did not order an image; numbering it locally', { mid: image.mid, err: (err as Error).message });
      return undefined;
    }
  }

  publishOdds(mid: string, frame: Uint8Array): void {
    this.pending?.set(mid, frame);
    this.nc?.publish(`${this.prefix}.img.${mid}`, frame);
  }

  publishClient(op: ClientOp, client: string, mids: readonly string[]): void {
    this.nc?.publish(`${this.prefix}.ctl.client`, json.encode({ from: this.id, op, client, mids: [...mids] }));
  }

  async close(): Promise<void> {
    const nc = this.nc;
    this.nc = undefined;
    if (nc && !nc.isClosed()) await nc.drain().catch(() => nc.close());
  }

  /** A frame from another pod, or (with `seq`) a stored image whose stream sequence is its seq. */
  private receive(h: BusHandlers, data: Uint8Array, seq?: number): void {
    let msg: OddsMessage;
    try {
      const decoded = decodeServerProto(data);
      if (decoded.op !== 'odds') return;
      msg = decoded;
    } catch (err) {
      this.log.warn('undecodable odds image on the bus', { err: (err as Error).message });
      return;
    }
    if (seq === undefined) h.odds(msg, data);
    else h.odds({ ...msg, seq });
  }

  private async ensureStream(): Promise<void> {
    const jsm = await this.nc!.jetstreamManager();
    try {
      await jsm.streams.info(this.stream);
    } catch {
      // Two pods may race to create it; the loser finds it made.
      await jsm.streams.add({ name: this.stream, subjects: [`${this.prefix}.raw.>`], max_msgs_per_subject: 1, max_age: 24 * 3600 * 1e9 })
        .catch(() => jsm.streams.info(this.stream));
    }
  }

  /** Reads the last image of every market subject; live images arriving meanwhile are harmless (seq decides). */
  private async resync(h: BusHandlers): Promise<void> {
    const js = this.nc!.jetstream();
    const jsm = await this.nc!.jetstreamManager();
    const stored = (await jsm.streams.info(this.stream)).state.messages;
    if (stored === 0) return;
    // One filter as a string: an array becomes filter_subjects, which nats-server 2.9 ignores, and the consumer never delivers.
    const consumer = await js.consumers.get(this.stream, { filterSubjects: `${this.prefix}.raw.>`, deliver_policy: DeliverPolicy.LastPerSubject });
    const messages = await consumer.consume();
    let n = 0;
    for await (const m of messages) {
      this.receive(h, m.data, m.seq);
      n++;
      if (m.info.pending === 0) break;
    }
    await messages.close();
    this.log.info('nats resync done', { images: n });
  }

  private async watch(nc: NatsConnection, h: BusHandlers): Promise<void> {
    for await (const s of nc.status()) {
      if (s.type === Events.Disconnect) {
        this.log.warn('nats disconnected; reconnecting');
        this.pending ??= new Map();
        this.down = true;
        h.down(true);
      } else if (s.type === Events.Reconnect) {
        this.log.info('nats reconnected; resyncing');
        try {
          await this.ensureStream();
          const missed = this.pending ?? new Map<string, Uint8Array>();
          this.pending = undefined;
          for (const [mid, frame] of missed) nc.publish(`${this.prefix}.img.${mid}`, frame);
          await this.resync(h);
          this.down = false;
          h.down(false);
        } catch (err) {
          this.log.warn('nats resync failed', { err: (err as Error).message });
        }
      }
    }
  }
}
