import { DeliverPolicy, type JetStreamClient, type JetStreamManager, type NatsConnection } from 'nats';
import type { Inbound, Stored } from './inbound.js';

/** JetStream's answer when the expected last sequence of a subject was not the actual one. */
const WRONG_LAST_SEQUENCE = 10071;
const NO_MESSAGE = 10037;

const apiError = (err: unknown): number | undefined => (err as { api_error?: { err_code?: number } })?.api_error?.err_code;
export const isWrongLast = (err: unknown): boolean => apiError(err) === WRONG_LAST_SEQUENCE;

/** How long a JetStream call may take before the bus is treated as away. */
const TIMEOUT_MS = 2000;
/**
 * How long loading the stream may go without an image arriving. A consumer made while JetStream is
 * still recovering after a restart can wait forever, and with it the sync and the pod's feed
 * status: past this the load fails and the sync is tried again.
 */
const LOAD_STALL_MS = 5000;

/**
 * `p`, or a rejection naming `what` once `ms` have passed; what `p` yields after that is handed to
 * `abandon`, so a consumer that starts late is not left reading.
 */
function bounded<T>(p: Promise<T>, ms: number, what: string, abandon: (late: T) => unknown = () => undefined): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let expired = false;
  const late = new Promise<never>((_, fail) => (timer = setTimeout(() => {
    expired = true;
    fail(new Error(`${what} took over ${ms} ms`));
  }, ms)));
  void p.then((v) => expired && abandon(v), () => undefined);
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** The stored frame behind its stream sequence, as other pods receive it on `<prefix>.img.<mid>`. */
export function envelope(ss: number, frame: Uint8Array): Uint8Array {
  const out = new Uint8Array(8 + frame.length);
  new DataView(out.buffer).setFloat64(0, ss);
  out.set(frame, 8);
  return out;
}

/** A market's last stored message: its stream sequence, and the image unless it was refused. */
export interface LastStored {
  ss: number;
  stored: Stored | undefined;
}

/**
 * What the sequencer numbers through: the stream that orders every market's
 * images, and the fan-out of what it stored to every pod. `OddsStream` over a
 * NATS connection; a fake in the sequencer's unit test.
 */
export interface ImageStream {
  /** Finds or makes the stream; its epoch. */
  ensure(): Promise<string>;
  /** Stores a frame if the market's last stream sequence is `expect` (0: none); its stream sequence. Rejects with a wrong-last error (isWrongLast) when another write came first. */
  store(mid: string, frame: Uint8Array, expect: number): Promise<number>;
  /** A market's last stored message, if any. */
  last(mid: string): Promise<LastStored | undefined>;
  /** Every market's last stored image, handed over one by one. */
  loadAll(each: (s: Stored) => void): Promise<number>;
  /** Sends a stored frame, behind its stream sequence, to every pod. */
  share(mid: string, ss: number, frame: Uint8Array): void;
  /** The connection under it ended for good: there is nothing to sync with. */
  closed(): boolean;
}

/**
 * The JetStream stream that orders every market's images across pods: one
 * subject per market (`<prefix>.raw.<mid>`), keeping the last image of each.
 * A write names the stream sequence it expects as the subject's last, so two
 * pods can never give the same seq to different images. What is stored is
 * fanned out on `<prefix>.img.<mid>`, for pods to take without reading the stream.
 */
export class OddsStream implements ImageStream {
  readonly name: string;
  private readonly js: JetStreamClient;
  private jsm: JetStreamManager | undefined;

  /** Stored images are read back through `inbound`: anyone with rights on the stream's subjects can write there. */
  constructor(private readonly nc: NatsConnection, private readonly prefix: string, private readonly inbound: Inbound) {
    this.name = `${prefix.replace(/[^A-Za-z0-9_-]/g, '_').toUpperCase()}_ODDS`;
    this.js = nc.jetstream({ timeout: TIMEOUT_MS });
  }

  subject(mid: string): string {
    return `${this.prefix}.raw.${mid}`;
  }

  /**
   * Finds the stream, or creates it, and names its epoch: the time it was
   * created, so a stream that is lost and made again is a new numbering.
   */
  async ensure(): Promise<string> {
    const jsm = (this.jsm ??= await this.nc.jetstreamManager({ timeout: TIMEOUT_MS }));
    let info;
    try {
      info = await jsm.streams.info(this.name);
    } catch {
      // Two pods may race to create it; the loser finds it made.
      info = await jsm.streams.add({ name: this.name, subjects: [`${this.prefix}.raw.>`], max_msgs_per_subject: 1 })
        .catch(() => jsm.streams.info(this.name));
    }
    const created = info.created;
    const nanos = /\.(\d+)Z$/.exec(created)?.[1] ?? '0';
    return 's' + Date.parse(created).toString(36) + Number(nanos.slice(3, 9).padEnd(6, '0')).toString(36);
  }

  /** Stores a frame if the subject's last stream sequence is `expect` (0: none); returns its stream sequence. */
  async store(mid: string, frame: Uint8Array, expect: number): Promise<number> {
    const ack = await this.js.publish(this.subject(mid), frame, { expect: { lastSubjectSequence: expect } });
    return ack.seq;
  }

  /**
   * A market's last stored message, if any: its stream sequence, and the
   * image unless it was refused (a write must still name that sequence to
   * store over it).
   */
  async last(mid: string): Promise<LastStored | undefined> {
    const jsm = (this.jsm ??= await this.nc.jetstreamManager({ timeout: TIMEOUT_MS }));
    try {
      const m = await jsm.streams.getMessage(this.name, { last_by_subj: this.subject(mid) });
      return { ss: m.seq, stored: this.inbound.image('stream', m.subject, m.seq, m.data) };
    } catch (err) {
      if (apiError(err) === NO_MESSAGE) return undefined;
      throw err;
    }
  }

  share(mid: string, ss: number, frame: Uint8Array): void {
    this.nc.publish(`${this.prefix}.img.${mid}`, envelope(ss, frame));
  }

  closed(): boolean {
    return this.nc.isClosed();
  }

  /** Every market's last stored image, handed over one by one. */
  async loadAll(each: (s: Stored) => void): Promise<number> {
    const jsm = (this.jsm ??= await this.nc.jetstreamManager({ timeout: TIMEOUT_MS }));
    if ((await jsm.streams.info(this.name)).state.messages === 0) return 0;
    // One filter as a string: an array becomes filter_subjects, which nats-server 2.9 ignores, and the consumer never delivers.
    const consumer = await bounded(this.js.consumers.get(this.name, { filterSubjects: `${this.prefix}.raw.>`, deliver_policy: DeliverPolicy.LastPerSubject }), TIMEOUT_MS, 'making the stream\'s consumer');
    const messages = await bounded(consumer.consume(), TIMEOUT_MS, 'starting to read the stream', (m) => m.close());
    let n = 0;
    let stalled = false;
    let timer: NodeJS.Timeout | undefined;
    const watch = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        stalled = true;
        void messages.close();
      }, LOAD_STALL_MS);
    };
    watch();
    try {
      for await (const m of messages) {
        watch();
        const s = this.inbound.image('stream', m.subject, m.seq, m.data);
        if (s) each(s);
        n++;
        if (m.info.pending === 0) break;
      }
    } finally {
      clearTimeout(timer);
      await messages.close();
    }
    if (stalled) throw new Error(`no stored image arrived for ${LOAD_STALL_MS} ms while loading the stream (${n} read)`);
    return n;
  }
}
