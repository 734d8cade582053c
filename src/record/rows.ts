import type { Ordered } from '../odds/book.js';
import { decodeServerProto, encodeProto } from '../odds/codec.js';
import { applyDelta, diff } from '../odds/delta.js';
import { oddsMessage, type OddsImage } from '../odds/image.js';
import type { DeltaMessage, OddsMessage } from '../odds/messages.js';
import { isMarketId } from '../refdata/ids.js';
import type { RecordEntry, RecordNote } from '../bus/types.js';
import { dayOf, type RecordTable } from './partitions.js';

/** Changes of a market between two full images: a price at any instant replays at most this many. */
export const KEYFRAME_EVERY = 64;

/** What the recorder last wrote of a market: the next change is stored from it. */
interface Written {
  epoch: string;
  seq: number;
  image: OddsImage;
  day: number;
  changes: number;
  /** Bytes of the last full image written: a change is stored whole when it would not be smaller. */
  fullBytes: number;
}

/** One batch as COPY text, per table, with the days its rows fall in. */
export class Rows {
  readonly lines: Record<RecordTable, string[]> = { record_odds: [], record_states: [], record_ledger: [], record_sent: [] };
  readonly days: Record<RecordTable, Set<number>> = { record_odds: new Set(), record_states: new Set(), record_ledger: new Set(), record_sent: new Set() };
  /** Entries refused as malformed. */
  invalid = 0;

  add(table: RecordTable, at: number, fields: readonly (string | number | null)[]): void {
    this.lines[table].push(fields.map((f) => (f === null ? '\\N' : String(f))).join('\t'));
    this.days[table].add(dayOf(at));
  }

  /** Lines in every table. */
  get size(): number {
    let n = 0;
    for (const lines of Object.values(this.lines)) n += lines.length;
    return n;
  }

  /** The first line, and its table: what is left when a refused batch has been halved down to one. */
  get first(): [RecordTable, string] | undefined {
    for (const [table, lines] of Object.entries(this.lines) as [RecordTable, string[]][]) if (lines.length) return [table, lines[0]];
    return undefined;
  }

  /** The lines in two halves, each table's in order, each half with the days of the whole (a partition too many costs nothing). */
  halves(): [Rows, Rows] {
    const out: [Rows, Rows] = [new Rows(), new Rows()];
    let seen = 0;
    const half = Math.ceil(this.size / 2);
    for (const [table, lines] of Object.entries(this.lines) as [RecordTable, string[]][]) {
      for (const line of lines) out[seen++ < half ? 0 : 1].lines[table].push(line);
      for (const r of out) for (const day of this.days[table]) r.days[table].add(day);
    }
    return out;
  }
}

/**
 * A source time as the `ts` column holds it: whole ms. A publisher may send a fraction (the wire's
 * `ts` is a double, kept exact in the stored image); written as it came, the bigint refused the
 * batch, and the recorder tried it again for ever, writing nothing after it.
 */
const wholeMs = (ts: number): number => Math.floor(ts);

/** COPY's text format: a backslash is written twice (JSON escapes every other control character itself). */
const text = (s: string): string => s.replaceAll('\\', '\\\\');
const bytea = (b: Uint8Array): string => '\\\\x' + Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');

/** What a stored body leaves out: the row's columns hold the market, epoch, seq and publish time. */
const NO_HEAD = { epoch: '', seq: 0, publishTime: 0 } as const;

/** A stored body carries only what the row's columns do not. */
function fullBody(image: OddsImage): Uint8Array {
  return encodeProto(oddsMessage({ ...image, marketId: '' }, NO_HEAD));
}

/** The odds message a stored row holds: a full image, or the change from the image with seq `base`. */
export function readBody(row: { mid: string; epoch: string; seq: number; pt: number; base: number | null; body: Uint8Array }): OddsMessage | DeltaMessage {
  const msg = decodeServerProto(row.body);
  if (msg.op === 'odds' || msg.op === 'delta') {
    const out = { ...msg, mid: row.mid, epoch: row.epoch, seq: row.seq, pt: row.pt };
    return out.op === 'delta' ? { ...out, from: row.base! } : out;
  }
  throw new Error(`record_odds row ${row.mid} ${row.epoch}/${row.seq} holds a ${msg.op} frame`);
}

/** Replays a stored change onto the image it applies to. */
export const replay = (held: OddsMessage, d: DeltaMessage): OddsMessage | undefined => applyDelta(held, d);

const STATE_OPS = new Set(['market', 'result', 'freshness']);
/** Names written as COPY text columns: nothing COPY would read as a separator or an escape. */
const NAME = /^[A-Za-z0-9._:-]{1,64}$/;
const isName = (v: unknown): v is string => typeof v === 'string' && NAME.test(v);

/**
 * Turns what the log hands the recorder into rows. Each odds image is stored as its change from
 * the previous image of its market written here (named by its seq, so an image the log lost in
 * between costs nothing), or whole: the first of a market since the recorder started, of a new
 * epoch or a new day, every KEYFRAME_EVERY changes,
 * and whenever only an image can say it (runners changed) or the change is not smaller. An image
 * older than the one held (it arrived late) is stored whole and changes nothing held.
 */
export class RowEncoder {
  private readonly held = new Map<string, Written>();
  /** The newest day written: on a new one, markets held from days before are forgotten (their next image is whole anyway). */
  private today = 0;

  encode(entries: readonly RecordEntry[]): Rows {
    const rows = new Rows();
    for (const e of entries) {
      if (e.kind === 'odds') this.odds(rows, e.o);
      else if (!this.note(rows, e.note)) rows.invalid++;
    }
    return rows;
  }

  private odds(rows: Rows, o: Ordered): void {
    const { image, publishTime } = o;
    const mid = image.marketId;
    const day = dayOf(publishTime);
    if (day > this.today) this.newDay(day);
    const h = this.held.get(mid);
    if (h && h.epoch === o.epoch && o.seq <= h.seq) {
      if (o.seq < h.seq) rows.add('record_odds', publishTime, [mid, publishTime, o.epoch, o.seq, wholeMs(image.sourceTime), null, bytea(fullBody(image))]);
      return;
    }
    let body: Uint8Array | undefined;
    if (h && h.epoch === o.epoch && h.day === day && h.changes < KEYFRAME_EVERY - 1) {
      const d = diff(h.image, image);
      const delta = d && encodeProto({ op: 'delta', mid: '', epoch: '', seq: 0, from: 0, pt: 0, ...d });
      // Against the market's last full image: encoding this one whole too would double the work for a change that is almost always far smaller.
      if (delta && delta.byteLength < h.fullBytes) body = delta;
    }
    const base = body ? h!.seq : null;
    body ??= fullBody(image);
    rows.add('record_odds', publishTime, [mid, publishTime, o.epoch, o.seq, wholeMs(image.sourceTime), base, bytea(body)]);
    this.held.set(mid, { epoch: o.epoch, seq: o.seq, image, day, changes: base === null ? 0 : h!.changes + 1, fullBytes: base === null ? body.byteLength : h!.fullBytes });
  }

  /** Memory holds one image per market written today or yesterday, not every market ever recorded. */
  private newDay(day: number): void {
    this.today = day;
    for (const [mid, h] of this.held) if (h.day < day - 1) this.held.delete(mid);
  }

  private note(rows: Rows, n: RecordNote): boolean {
    const { body, at } = n;
    if (!Number.isSafeInteger(at) || at < 0 || !isName(n.src) || !Number.isSafeInteger(n.n)) return false;
    const json = text(JSON.stringify(body));
    if (n.topic === 'state') {
      if (!STATE_OPS.has(body.op as string) || !isMarketId(body.mid)) return false;
      rows.add('record_states', at, [body.mid as string, body.op as string, at, n.src, n.n, json]);
    } else if (n.topic === 'ledger') {
      if (!isName(body.conn) || !isName(body.op)) return false;
      rows.add('record_ledger', at, [body.conn, at, n.n, body.op, json]);
    } else {
      const { variant, mid, epoch, seq } = body;
      if (!isName(variant) || !isMarketId(mid) || !isName(epoch) || !Number.isSafeInteger(seq)) return false;
      rows.add('record_sent', at, [n.src, variant, mid, at, n.n, epoch, seq as number]);
    }
    return true;
  }
}
