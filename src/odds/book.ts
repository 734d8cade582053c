import { randomBytes } from 'node:crypto';
import { encodeJson, encodeProto } from './codec.js';
import type { OddsImage, OddsMessage, Since } from './messages.js';

export type Format = 'json' | 'proto';
export type Frame = string | Uint8Array;
export const FORMATS = ['json', 'proto'] as const;

/** How a frame of an image is marked: as is, after a slow consumer's skip, or after conflation thinned it. */
export type Mark = 'none' | 'con' | 'cf';

/**
 * A new epoch name: short, since every odds frame carries it, and unique
 * across processes and restarts (time plus randomness). The prefix says who
 * numbers: `m` one process, `s` a NATS stream, `l` a pod numbering alone
 * while NATS is away.
 */
export function newEpoch(prefix: string, at = Date.now()): string {
  return prefix + at.toString(36) + randomBytes(3).toString('hex');
}

/** The rule for pods and clients alike: a different epoch replaces what is held; within one, the higher seq wins. */
export const isNewer = (held: { epoch: string; seq: number } | undefined, epoch: string, seq: number): boolean =>
  !held || held.epoch !== epoch || seq > held.seq;

/** Whether a resuming client already holds this image (same epoch and seq), so it need not be sent again. */
export const heldBy = (since: Since | undefined, e: BookEntry): boolean =>
  since !== undefined && since.epoch === e.epoch && since.seqs[e.mid] === e.seq;

/** Keeps only the best `depth` levels a side; 0 keeps all. */
function cut(image: OddsImage, depth: number): OddsImage {
  if (depth === 0) return image;
  return { ...image, r: image.r.map((x) => ({ ...x, b: x.b.slice(0, depth), l: x.l.slice(0, depth) })) };
}

/**
 * The newest image of one market. Its frames are encoded on first use, once
 * per variant (format, ladder depth, mark), and then the same bytes go to
 * every subscriber of that variant.
 */
export class BookEntry {
  private readonly frames = new Map<number, Frame>();
  /** The deepest ladder of the image: a depth at or above it is the full frame. */
  private readonly levels: number;

  constructor(
    readonly epoch: string,
    readonly seq: number,
    readonly pt: number,
    readonly image: OddsImage,
    /** This process's order of arrival, for "changed since" questions. */
    readonly rev: number,
    /** The full protobuf frame when it came ready-made (from the bus). */
    proto?: Uint8Array,
  ) {
    let levels = 0;
    for (const x of image.r) levels = Math.max(levels, x.b.length, x.l.length);
    this.levels = levels;
    if (proto) this.frames.set(variantKey('proto', 0, 'none'), proto);
  }

  get mid(): string {
    return this.image.mid;
  }

  message(mark: Mark = 'none', depth = 0): OddsMessage {
    const { mid, ts, st, ip, r, tv } = cut(this.image, depth);
    const msg: OddsMessage = { op: 'odds', mid, epoch: this.epoch, seq: this.seq, ts, pt: this.pt, st, ip, con: mark === 'con', cf: mark === 'cf', r };
    if (tv !== undefined) msg.tv = tv;
    return msg;
  }

  frame(format: Format, mark: Mark = 'none', depth = 0): Frame {
    const d = depth >= this.levels ? 0 : depth;
    const key = variantKey(format, d, mark);
    let f = this.frames.get(key);
    if (f === undefined) {
      const msg = this.message(mark, d);
      f = format === 'json' ? encodeJson(msg) : encodeProto(msg);
      this.frames.set(key, f);
    }
    return f;
  }
}

const MARKS: Record<Mark, number> = { none: 0, con: 1, cf: 2 };
const variantKey = (format: Format, depth: number, mark: Mark): number => (depth * 3 + MARKS[mark]) * 2 + (format === 'proto' ? 1 : 0);

/**
 * The newest image and its (epoch, seq) per market. Odds are not stored in
 * Postgres per tick: the newest image is the whole truth, so memory holds
 * exactly one per market.
 */
export class Book {
  private entries = new Map<string, BookEntry>();
  private rev = 0;

  /** Keeps an image if it is newer than the one held (isNewer); returns the stored entry, or undefined when it was not newer. */
  put(epoch: string, seq: number, pt: number, image: OddsImage, proto?: Uint8Array): BookEntry | undefined {
    if (!isNewer(this.entries.get(image.mid), epoch, seq)) return undefined;
    const entry = new BookEntry(epoch, seq, pt, image, ++this.rev, proto);
    this.entries.set(image.mid, entry);
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

  /** Increases with every stored image: entries with a higher rev changed after that point. */
  get revision(): number {
    return this.rev;
  }

  get size(): number {
    return this.entries.size;
  }

  values(): IterableIterator<BookEntry> {
    return this.entries.values();
  }
}
