/**
 * Whole answers, as bytes, for as long as the read model has not changed.
 * Betting sites poll the same event and market lists over and over; a hit
 * skips parsing, validation and joining, leaving only the write.
 *
 * Memory is bounded by one byte budget, whatever clients ask: three quarters
 * hold answer bytes in one block used as a ring (so answers cost the garbage
 * collector nothing, and the oldest are overwritten first), an eighth the
 * keys of the answers held, and an eighth the raw queries seen. Keys are the
 * normalised request, so ignored or reordered parameters share one answer.
 */

import { ChurningMap } from '../lib/churning-map.js';
import { Fifo } from '../lib/fifo.js';

/** An answer's parts: bytes kept by the read model, and strings encoded as they are copied. */
type Piece = Buffer | string;

/** What a Map entry, a key's string header, a Kept and its Buffer view cost beyond the bytes counted. */
const ENTRY_OVERHEAD = 256;
/** Strings are charged two bytes a character: a query with text outside Latin-1 is stored that way. */
const keyCost = (key: string): number => 2 * key.length + ENTRY_OVERHEAD;

/**
 * Answer parts, put together on a cache miss. `length` bounds their size in
 * bytes: exact for Buffers, three bytes per UTF-16 unit for strings (their
 * most in UTF-8), so no string is scanned twice; the copy returns the end.
 */
export class Pieces {
  readonly list: Piece[] = [];
  length = 0;

  add(piece: Piece): this {
    this.list.push(piece);
    this.length += typeof piece === 'string' ? 3 * piece.length : piece.length;
    return this;
  }
}

/** An answer in the ring, valid for its version of the read model; `view` is dropped when its bytes go to another answer. */
class Kept {
  constructor(
    readonly key: string,
    readonly at: number,
    public view: Buffer | undefined,
    readonly version: number,
  ) {}
}

/** Strings this short (IDs and punctuation) are copied here when ASCII: cheaper than a call into Node's encoder. */
const SHORT = 24;

/** Copies pieces into `out` from `at`; returns where they end. */
function copy(out: Buffer, at: number, pieces: readonly Piece[]): number {
  for (const p of pieces) {
    if (typeof p !== 'string') {
      out.set(p, at);
      at += p.length;
    } else if (p.length > SHORT || !copyAscii(out, at, p)) {
      at += out.write(p, at);
    } else {
      at += p.length;
    }
  }
  return at;
}

function copyAscii(out: Buffer, at: number, s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) return false;
    out[at + i] = c;
  }
  return true;
}

export class AnswerCache {
  private readonly entries = new ChurningMap<string, Kept>();
  /** Age and ring order: from the oldest, entries follow one another round the ring up to `head`. */
  private readonly order = new Fifo<Kept>();
  private ring: Buffer | undefined;
  private head = 0;
  private keyBytes = 0;
  private version = -1;
  private readonly ringBytes: number;
  private readonly keyBudget: number;

  constructor(readonly budget: number) {
    this.ringBytes = Math.floor((budget * 3) / 4);
    this.keyBudget = Math.floor(budget / 8);
  }

  /** Raw queries to answers, for one of `routes` routes that share an eighth of the budget. */
  aliases(routes: number): QueryAliases {
    return new QueryAliases(Math.floor(this.budget / 8 / routes));
  }

  get(key: string, version: number): Kept | undefined {
    if (version !== this.version) {
      this.entries.clear();
      this.order.clear();
      this.head = 0;
      this.keyBytes = 0;
      this.version = version;
      return undefined;
    }
    return this.entries.get(key);
  }

  /**
   * Puts the pieces together and keeps them under `key`, after a `get` of the
   * same version that missed. An answer over a quarter of the ring is built
   * for this request alone rather than evicting most of the others.
   */
  put(key: string, version: number, pieces: Pieces): Kept | Buffer {
    const n = pieces.length;
    const charge = keyCost(key);
    if (version !== this.version || n > this.ringBytes / 4 || charge > this.keyBudget / 4 || this.entries.has(key)) {
      const out = Buffer.allocUnsafe(n);
      return out.subarray(0, copy(out, 0, pieces.list));
    }
    // Allocated on first use and never again: its pages are touched only as answers fill it.
    const ring = (this.ring ??= Buffer.allocUnsafeSlow(this.ringBytes));
    // Without room before the end the answer goes to the start, and what lies ahead of head, the oldest, goes first.
    const wrap = this.head + n > this.ringBytes;
    for (let oldest = this.order.peek(); oldest; oldest = this.order.peek()) {
      const overlaps = wrap ? oldest.at >= this.head || oldest.at < n : oldest.at >= this.head && oldest.at < this.head + n;
      if (!overlaps && this.keyBytes + charge <= this.keyBudget) break;
      oldest.view = undefined;
      this.entries.delete(oldest.key);
      this.order.shift();
      this.keyBytes -= keyCost(oldest.key);
    }
    const at = wrap ? 0 : this.head;
    this.head = copy(ring, at, pieces.list);
    const kept = new Kept(key, at, ring.subarray(at, this.head), version);
    this.entries.set(key, kept);
    this.order.push(kept);
    this.keyBytes += charge;
    return kept;
  }
}

/**
 * Raw query string to the answer of its normalised request, so a repeated
 * URL is answered with one lookup and no parsing. Bounded by bytes (which
 * bounds the count too); the oldest go first. An answer evicted or from an
 * older read model is not used: the query is then parsed again.
 */
class QueryAliases {
  private readonly answers = new ChurningMap<string, { raw: string; kept: Kept }>();
  private readonly order = new Fifo<{ raw: string; kept: Kept }>();
  private bytes = 0;

  constructor(private readonly budget: number) {}

  get(raw: string): Kept | undefined {
    return this.answers.get(raw)?.kept;
  }

  set(raw: string, kept: Kept): void {
    const known = this.answers.get(raw);
    // A raw query always means the same request, so its key and its cost stay as they were.
    if (known) {
      known.kept = kept;
      return;
    }
    const cost = keyCost(raw) + keyCost(kept.key);
    if (cost > this.budget / 4) return;
    for (let oldest = this.order.peek(); oldest && this.bytes + cost > this.budget; oldest = this.order.peek()) {
      this.answers.delete(oldest.raw);
      this.order.shift();
      this.bytes -= keyCost(oldest.raw) + keyCost(oldest.kept.key);
    }
    const alias = { raw, kept };
    this.answers.set(raw, alias);
    this.order.push(alias);
    this.bytes += cost;
  }
}
