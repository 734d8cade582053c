import { encodeJson, encodeProto } from './codec.js';
import type { OddsImage, OddsMessage } from './messages.js';

export type Format = 'json' | 'proto';
export type Frame = string | Uint8Array;

/**
 * The latest full image of one market. Its frames are encoded at most once
 * per format (and once more per format for the `con:true` resync variant),
 * on first use, and then the same bytes go to every subscriber.
 */
export class BookEntry {
  private json: string | undefined;
  private proto: Uint8Array | undefined;
  private conJson: string | undefined;
  private conProto: Uint8Array | undefined;

  /** `proto` may come ready-made: an image from another pod arrives as the very frame subscribers get. */
  constructor(readonly mid: string, readonly seq: number, readonly pt: number, readonly image: OddsImage, proto?: Uint8Array) {
    this.proto = proto;
  }

  message(con: boolean): OddsMessage {
    const { mid, ts, st, ip, r } = this.image;
    return { op: 'odds', mid, seq: this.seq, ts, pt: this.pt, st, ip, con, r };
  }

  frame(format: Format, con = false): Frame {
    if (format === 'json') {
      if (con) return (this.conJson ??= encodeJson(this.message(true)));
      return (this.json ??= encodeJson(this.message(false)));
    }
    if (con) return (this.conProto ??= encodeProto(this.message(true)));
    return (this.proto ??= encodeProto(this.message(false)));
  }
}

/**
 * Latest image and sequence number per market. Odds are not stored in
 * Postgres per tick: the newest image is the whole truth, so memory holds
 * exactly one per market.
 */
export class Book {
  private entries = new Map<string, BookEntry>();

  /**
   * Stores an image as the market's newest, with the next seq or the one the
   * bus ordered it at. An image older than the one held is dropped (undefined):
   * arrival order across pods does not matter, seq does.
   */
  apply(image: OddsImage, pt = Date.now(), seq?: number, proto?: Uint8Array): BookEntry | undefined {
    const held = this.entries.get(image.mid)?.seq ?? 0;
    if (seq !== undefined && seq <= held) return undefined;
    const entry = new BookEntry(image.mid, seq ?? held + 1, pt, image, proto);
    this.entries.set(image.mid, entry);
    return entry;
  }

  get(mid: string): BookEntry | undefined {
    return this.entries.get(mid);
  }

  delete(mid: string): void {
    this.entries.delete(mid);
  }

  get size(): number {
    return this.entries.size;
  }
}
