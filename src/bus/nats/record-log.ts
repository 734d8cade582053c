import { AckPolicy, DeliverPolicy, DiscardPolicy, RetentionPolicy, type JsMsg, type NatsConnection } from 'nats';
import { decodeServerProto, encodeProto } from '../../odds/codec.js';
import type { Ordered } from '../../odds/book.js';
import { oddsMessage } from '../../odds/image.js';
import { isMarketId } from '../../refdata/ids.js';
import { wait } from '../../lib/retry.js';
import type { RecordLogCounts } from '../record-log.js';
import type { ImageCheck, RecordBacklog, RecordBatch, RecordEntry, RecordLog, RecordNote } from '../types.js';

/** The recorder's durable consumer: one per stream, so one recorder reads it at a time (the lease decides which). */
const DURABLE = 'recorder';
/**
 * A batch not acknowledged for this long is delivered again: what a recorder that died had taken
 * reaches the next one after this (a recorder stalled on a frozen Postgres still writes it once).
 */
const ACK_WAIT_NS = 30 * 1e9;
/** How long a read waits for the first entry before it looks at its signal again. */
const FETCH_MS = 2000;
const NOTE_TOPICS = new Set(['state', 'ledger', 'sent']);
const MAX_NOTE_BYTES = 512 * 1024;

const encoder = new TextEncoder();
const utf8 = new TextDecoder('utf-8', { fatal: true });

export interface NatsRecordLogOptions {
  prefix: string;
  /** Bytes the stream holds for the recorder before it drops its oldest (RECORD_BUS_BYTES). */
  maxBytes: number;
  /** Entries in one batch (RECORD_BATCH): the consumer hands out at most this many unacknowledged. */
  batch: number;
  /** The pod's connection, while it has one. */
  link: { readonly connection: NatsConnection | undefined };
  /** Ingest's check of an odds image: what is read back is held to it. */
  check: ImageCheck;
  counts: RecordLogCounts;
}

/** A note as read back: the fields the recorder needs, of the right types (their values are the recorder's to judge). */
function readNote(data: Uint8Array): RecordNote | undefined {
  if (data.length > MAX_NOTE_BYTES) return undefined;
  try {
    const n = JSON.parse(utf8.decode(data)) as RecordNote;
    const ok = n && NOTE_TOPICS.has(n.topic) && typeof n.src === 'string' && typeof n.n === 'number' && typeof n.at === 'number'
      && n.body !== null && typeof n.body === 'object' && !Array.isArray(n.body);
    return ok ? { topic: n.topic, src: n.src, n: n.n, at: n.at, body: n.body } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The record's log across pods (BUS=nats): a JetStream stream `<PREFIX>_RECORD` on
 * `<prefix>.rec.>`, kept while the recorder's durable consumer has not acknowledged it
 * (interest retention) and bounded in bytes (the oldest dropped past it). Every pod appends with
 * plain publishes, never waiting on JetStream; the recorder pulls batches and acknowledges each
 * once written, so a recorder that stops resumes where it stopped. The stream and the consumer
 * are made by every pod as it connects, so the stream keeps what is published before any
 * recorder runs.
 */
export class NatsRecordLog implements RecordLog {
  readonly stream: string;
  readonly redeliverMs = ACK_WAIT_NS / 1e6;
  private readonly made = new WeakSet<NatsConnection>();

  constructor(private readonly o: NatsRecordLogOptions) {
    this.stream = `${o.prefix.replace(/[^A-Za-z0-9_-]/g, '_').toUpperCase()}_RECORD`;
  }

  /** Makes the stream and the recorder's consumer if they are missing (each pod, at each connect). */
  async ensure(nc: NatsConnection): Promise<void> {
    if (this.made.has(nc)) return;
    const jsm = await nc.jetstreamManager();
    try {
      await jsm.streams.info(this.stream);
    } catch {
      await jsm.streams.add({
        name: this.stream, subjects: [`${this.o.prefix}.rec.>`], retention: RetentionPolicy.Interest,
        max_bytes: this.o.maxBytes, discard: DiscardPolicy.Old,
      }).catch(() => jsm.streams.info(this.stream));
    }
    // Each entry acknowledged on its own: what a dead recorder took and never wrote is delivered again, whatever the next recorder acknowledged meanwhile.
    const config = { durable_name: DURABLE, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, ack_wait: ACK_WAIT_NS, max_ack_pending: this.o.batch };
    await jsm.consumers.add(this.stream, config).catch(() => jsm.consumers.update(this.stream, DURABLE, { ack_wait: ACK_WAIT_NS, max_ack_pending: this.o.batch }));
    this.made.add(nc);
  }

  append(e: RecordEntry): void {
    const nc = this.o.link.connection;
    if (!nc || nc.isClosed()) return this.o.counts.dropped(1, 'unsent');
    if (e.kind === 'odds') nc.publish(`${this.o.prefix}.rec.odds.${e.o.image.marketId}`, e.o.frame ?? frameOf(e.o));
    else nc.publish(`${this.o.prefix}.rec.note`, encoder.encode(JSON.stringify(e.note)));
    this.o.counts.appended();
  }

  async next(max: number, signal: AbortSignal, _gatherMs?: number, idleMs?: number): Promise<RecordBatch | undefined> {
    // The server holds a pull open for at least a second (nats.js refuses less: the stop's last pull
    // once asked 500 ms and threw); a shorter idle wait would cut one short, and what it then delivered would wait out ACK_WAIT.
    const expires = signal.aborted ? 1000 : idleMs === undefined ? FETCH_MS : Math.max(1000, Math.min(FETCH_MS, idleMs));
    for (;;) {
      const nc = this.o.link.connection;
      if (!nc || nc.isClosed()) {
        if (signal.aborted) return undefined;
        await wait(FETCH_MS, signal);
        continue;
      }
      await this.ensure(nc);
      const consumer = await nc.jetstream().consumers.get(this.stream, DURABLE);
      const msgs = await consumer.fetch({ max_messages: max, expires });
      const stop = () => msgs.stop();
      signal.addEventListener('abort', stop, { once: true });
      const got: JsMsg[] = [];
      try {
        for await (const m of msgs) got.push(m);
      } finally {
        signal.removeEventListener('abort', stop);
      }
      // A pull that ended short of `max` (expired) was handed everything the stream took meanwhile; a full one, when the server said none was left.
      const drained = !signal.aborted && (got.length < max || got[got.length - 1]?.info.pending === 0);
      if (got.length) return this.batch(got, drained ? Date.now() : undefined);
      if (signal.aborted || idleMs !== undefined) return undefined;
    }
  }

  async backlog(): Promise<RecordBacklog> {
    const nc = this.o.link.connection;
    if (!nc || nc.isClosed()) return { entries: 0, bytes: undefined };
    const jsm = await nc.jetstreamManager();
    const [consumer, stream] = await Promise.all([jsm.consumers.info(this.stream, DURABLE), jsm.streams.info(this.stream)]);
    return { entries: consumer.num_pending + consumer.num_ack_pending, bytes: stream.state.bytes };
  }

  private batch(got: JsMsg[], drainedAt: number | undefined): RecordBatch {
    const entries: RecordEntry[] = [];
    let invalid = 0;
    for (const m of got) {
      const e = this.entry(m.subject, m.data);
      if (e) entries.push(e);
      else invalid++;
    }
    if (invalid) this.o.counts.dropped(invalid, 'invalid');
    return {
      entries,
      drainedAt,
      ack: async () => {
        for (let i = 0; i < got.length - 1; i++) got[i].ack();
        // The last is confirmed: every ack before it on the same connection has reached the server too.
        await got[got.length - 1].ackAck();
      },
    };
  }

  private entry(subject: string, data: Uint8Array): RecordEntry | undefined {
    const odds = `${this.o.prefix}.rec.odds.`;
    if (subject === `${this.o.prefix}.rec.note`) {
      const note = readNote(data);
      return note && { kind: 'note', note };
    }
    if (!subject.startsWith(odds)) return undefined;
    try {
      const msg = decodeServerProto(data);
      if (msg.op !== 'odds' || !isMarketId(msg.mid) || subject !== odds + msg.mid || msg.con || msg.cf) return undefined;
      if (!Number.isSafeInteger(msg.seq) || msg.seq < 1 || !Number.isFinite(msg.pt) || !/^[A-Za-z0-9._:-]{1,64}$/.test(msg.epoch)) return undefined;
      const checked = this.o.check(msg as unknown as Record<string, unknown>);
      return 'error' in checked ? undefined : { kind: 'odds', o: { epoch: msg.epoch, seq: msg.seq, publishTime: msg.pt, image: checked.image } };
    } catch {
      return undefined;
    }
  }
}

/** An image numbered while the stream was away carries no stored frame: encoded here, once. */
const frameOf = (o: Ordered): Uint8Array => encodeProto(oddsMessage(o.image, o));
