import { randomBytes } from 'node:crypto';
import { encodeJson, encodeProto } from './codec.js';
import { diff, type DeltaBody } from './delta.js';
import { oddsMessage, type OddsImage, type RunnerPrices } from './image.js';
import type { DeltaMessage, OddsMessage, Since } from './messages.js';
import { isNewer } from './order.js';
import type { Format } from '../lib/encodings.js';

export { FORMATS, type Format } from '../lib/encodings.js';
export type Frame = string | Uint8Array;

/** An image with its place in its market's order, as the bus numbers it and the book keeps it. */
export interface Ordered {
  epoch: string;
  seq: number;
  publishTime: number;
  image: OddsImage;
  /** Its full protobuf frame, when it arrived as one (from the bus). */
  frame?: Uint8Array;
}

/** What a socket missed of a market before a frame of its image: nothing, frames skipped while it was slow, or updates its conflation held back. */
type Gap = 'none' | 'skipped' | 'conflated';

/**
 * A new epoch name: short, since every odds frame carries it, and unique
 * across processes and restarts (time plus randomness). The prefix says who
 * numbers: `m` one process, `s` a NATS stream, `l` a pod numbering alone
 * while NATS is away.
 */
export function newEpoch(prefix: string, at = Date.now()): string {
  return prefix + at.toString(36) + randomBytes(3).toString('hex');
}

/** Whether a resuming client already holds this image (same epoch and seq), so it need not be sent again. */
export const heldBy = (since: Since | undefined, e: BookEntry): boolean =>
  since !== undefined && since.epoch === e.epoch && since.seqs[e.marketId] === e.seq;

/** Keeps only the best `depth` levels a side; 0 keeps all. */
function cut(image: OddsImage, depth: number): OddsImage {
  if (depth === 0) return image;
  return { ...image, runners: image.runners.map((x): RunnerPrices => ({ ...x, back: x.back.slice(0, depth), lay: x.lay.slice(0, depth) })) };
}

/**
 * The newest image of one market. Its frames are encoded on first use, once
 * per variant (format, ladder depth, gap), and then the same bytes go to
 * every subscriber of that variant.
 */
export class BookEntry {
  private readonly frames = new Map<number, Frame>();
  /** Delta frames from `prev`, by variant: the delta itself, or the image frame when that is not smaller. */
  private readonly deltas = new Map<number, Frame>();
  /**
   * Delta frames from an older image of the epoch (conflation skipped those between), by base seq
   * and variant: every conflated variant whose sockets hold that base shares one encoding. At most
   * one per conflated delta topic of the market, and gone with the entry.
   */
  private older: Map<string, Frame> | undefined;
  /**
   * The image before this one in the same epoch, which every live subscriber holds when this one
   * is published. The broadcaster drops the link once it has published this entry, so memory
   * holds one image per market plus those still queued.
   */
  prev: BookEntry | undefined;
  /** The deepest ladder of the image: a depth at or above it is the full frame. */
  private readonly levels: number;
  readonly epoch: string;
  readonly seq: number;
  readonly publishTime: number;
  readonly image: OddsImage;

  /** Its full protobuf frame, when the image came with one ready-made (from the bus), is kept as is. */
  constructor({ epoch, seq, publishTime, image, frame }: Ordered) {
    this.epoch = epoch;
    this.seq = seq;
    this.publishTime = publishTime;
    this.image = image;
    let levels = 0;
    for (const x of image.runners) levels = Math.max(levels, x.back.length, x.lay.length);
    this.levels = levels;
    if (frame) this.frames.set(variantKey('proto', 0, 'none'), frame);
  }

  get marketId(): string {
    return this.image.marketId;
  }

  /** The image's `odds` message, as a socket that missed `gap` before it is sent it. */
  message(gap: Gap = 'none', depth = 0): OddsMessage {
    return oddsMessage(this.image, { epoch: this.epoch, seq: this.seq, publishTime: this.publishTime, skipped: gap === 'skipped', conflated: gap === 'conflated' }, depth);
  }

  /**
   * What a delta subscriber at `depth` is sent: the change from `base` (the previous image unless
   * conflation skipped some), or this image when there is no base in this epoch, the runners
   * differ, or the delta would not be smaller. Cached per variant and base.
   */
  deltaFrame(format: Format, depth = 0, base = this.prev): Frame {
    if (!base || base.epoch !== this.epoch || base.seq >= this.seq) return this.frame(format, 'none', depth);
    const d = depth >= Math.max(this.levels, base.levels) ? 0 : depth;
    const key = variantKey(format, d, 'none');
    const olderKey = base === this.prev ? undefined : `${base.seq}:${key}`;
    const cached = olderKey === undefined ? this.deltas.get(key) : this.older?.get(olderKey);
    if (cached !== undefined) return cached;
    const image = this.frame(format, 'none', d);
    const body = diff(cut(base.image, d), cut(this.image, d));
    let f = image;
    if (body) {
      const delta = encode(format, this.deltaMessage(base.seq, body));
      if (byteLength(delta) < byteLength(image)) f = delta;
    }
    if (olderKey === undefined) this.deltas.set(key, f);
    else (this.older ??= new Map()).set(olderKey, f);
    return f;
  }

  private deltaMessage(from: number, body: DeltaBody): DeltaMessage {
    const msg: DeltaMessage = { op: 'delta', mid: this.marketId, epoch: this.epoch, seq: this.seq, from, ts: body.ts, pt: this.publishTime, st: body.st, ip: body.ip, r: body.r };
    if (body.sr !== undefined) msg.sr = body.sr;
    if (body.tv !== undefined) msg.tv = body.tv;
    return msg;
  }

  frame(format: Format, gap: Gap = 'none', depth = 0): Frame {
    const d = depth >= this.levels ? 0 : depth;
    const key = variantKey(format, d, gap);
    let f = this.frames.get(key);
    if (f === undefined) {
      const msg = this.message(gap, d);
      f = encode(format, msg);
      this.frames.set(key, f);
    }
    return f;
  }
}

const encode = (format: Format, msg: OddsMessage | DeltaMessage): Frame => (format === 'json' ? encodeJson(msg) : encodeProto(msg));
const byteLength = (f: Frame): number => (typeof f === 'string' ? f.length : f.byteLength);

const GAPS: Record<Gap, number> = { none: 0, skipped: 1, conflated: 2 };
const variantKey = (format: Format, depth: number, gap: Gap): number => (depth * 3 + GAPS[gap]) * 2 + (format === 'proto' ? 1 : 0);

/**
 * The newest image and its (epoch, seq) per market. Odds are not stored in
 * Postgres per tick: the newest image is the whole truth, so memory holds
 * exactly one per market.
 */
export class Book {
  private entries = new Map<string, BookEntry>();

  /** Keeps an image if it is newer than the one held (isNewer); returns the stored entry, or undefined when it was not newer. */
  put(o: Ordered): BookEntry | undefined {
    const held = this.entries.get(o.image.marketId);
    if (!isNewer(held, o.epoch, o.seq)) return undefined;
    const entry = new BookEntry(o);
    if (held?.epoch === o.epoch) entry.prev = held;
    this.entries.set(o.image.marketId, entry);
    return entry;
  }

  /** The seq the next image of a market gets when numbered in `epoch` by this process. */
  next(mid: string, epoch: string): number {
    const held = this.entries.get(mid);
    return held?.epoch === epoch ? held.seq + 1 : 1;
  }

  get(mid: string): BookEntry | undefined {
    return this.entries.get(mid);
  }

  get size(): number {
    return this.entries.size;
  }

  values(): IterableIterator<BookEntry> {
    return this.entries.values();
  }
}
