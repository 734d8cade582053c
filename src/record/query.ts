import { errors } from '../errors.js';
import type { DeltaMessage, OddsMessage } from '../odds/messages.js';
import { DAY_MS, dayOf } from './partitions.js';
import { readBody, replay } from './rows.js';
import type { RecordDb } from './snapshot.js';

/** An odds image as the record answers it: numbered, timed, whole. */
export type RecordedImage = Omit<OddsMessage, 'op' | 'con' | 'cf'>;

/** A state frame as recorded: when the recording pod published it, and the frame whole. */
export interface RecordedState {
  at: number;
  frame: Record<string, unknown>;
}

/**
 * An image the record holds but cannot rebuild: a stored change whose chain back to a full image
 * is broken (that image was refused by Postgres, so the recorder set it aside). Named, so an
 * answer never passes over it as if the market had no image then.
 */
export interface UnreadableImage {
  mid: string;
  epoch: string;
  seq: number;
  pt: number;
  ts: number;
}

/** What a subscriber of a market held at an instant. */
export interface PriceAt {
  mid: string;
  at: number;
  /** null: no image recorded at or before `at`, or (when `unreadable` is set) the newest is held but cannot be rebuilt. */
  odds: RecordedImage | null;
  /** The newest image at or before `at` when the record holds it but cannot rebuild it; else null. */
  unreadable: UnreadableImage | null;
  market: RecordedState | null;
  result: RecordedState | null;
  /** null: never told stale, so live. */
  freshness: RecordedState | null;
}

/** One change in a range: an image, a state frame, or an image the record holds but cannot rebuild. */
export type Change = ({ kind: 'odds' } & RecordedImage) | ({ kind: 'market' | 'result' | 'freshness' } & RecordedState) | ({ kind: 'unreadable' } & UnreadableImage);

export interface ChangesPage {
  changes: Change[];
  /** Where the next page starts (`after`), or null when the range is done: given while the range reaches past `complete`. */
  next: string | null;
  /** How far the record is complete (ms): no row at or before it is committed later. A page stops there. Null: the record keeps no mark (written by a recorder before it did). */
  complete: number | null;
}

/** Once seen, `record_complete` stays: the record's migrations made it, and nothing drops it. */
let markKept = false;

interface OddsRow {
  mid: string;
  pt: number;
  epoch: string;
  seq: number;
  ts: number;
  base: number | null;
  body: Buffer;
}

const COLS = 'mid, pt, epoch, seq, ts, base, body';

/** An image as the record answers it: without the per-socket marks. */
export const recorded = (m: OddsMessage): RecordedImage => {
  const { op: _op, con: _con, cf: _cf, ...rest } = m;
  return rest;
};

/** Which image to find: the newest at or before `at`, or one named by epoch and seq (published at or before `at`). */
interface ImageWanted {
  at: number;
  epoch?: string;
  seq?: number;
}

/** A market's image to find, among several found at once. */
export type MarketImageWanted = ImageWanted & { mid: string };

type Kind = 'market' | 'result' | 'freshness';

/** The rows from `row` back to a full image, newest first; undefined when a base is missing from `rows` (an image that arrived late, or was lost). */
function pathOf(row: OddsRow, rows: readonly OddsRow[]): OddsRow[] | undefined {
  const bySeq = new Map(rows.map((r) => [r.seq, r]));
  const path: OddsRow[] = [];
  for (let r: OddsRow | undefined = row; r; r = r.base === null ? undefined : bySeq.get(r.base)) {
    path.push(r);
    if (r.base !== null && !bySeq.has(r.base)) return undefined;
  }
  return path;
}

/** Replays a path (newest first) forward from its full image; undefined when a change does not apply. */
function replayPath(path: OddsRow[]): OddsMessage | undefined {
  let held = readBody(path.pop()!) as OddsMessage;
  for (let r = path.pop(); r; r = path.pop()) {
    const next = replay(held, readBody(r) as DeltaMessage);
    if (!next) return undefined;
    held = next;
  }
  return held;
}

/** Rows of a batched statement, each numbered by the 1-based place of what it answers (`i`), grouped by it. */
export function grouped<R extends { i: number }>(rows: readonly R[], count: number): R[][] {
  const out: R[][] = Array.from({ length: count }, () => []);
  for (const r of rows) out[Number(r.i) - 1].push(r);
  return out;
}

/**
 * Reads the record back. An image at an instant is one indexed lookup (the newest row of the
 * market at or before it) and, when that row is a change, one more for the rows from the last
 * full image before it (at most KEYFRAME_EVERY, within its day), replayed in order. State frames
 * are one lookup per kind. Several markets are looked up at once, in the same statements as one
 * (a socket's screen of 2,000 markets is a handful of statements, not 8,000). Its statements go
 * to one snapshot of the record (snapshot.ts), so an answer never mixes rows from before and
 * after a commit of the recorder.
 */
export class RecordReader {
  constructor(private readonly db: RecordDb) {}

  async priceAt(mid: string, at: number): Promise<PriceAt> {
    const [{ images: [odds], unreadable: [lost] }, [states]] = await Promise.all([this.imagesNamed([{ mid, at }]), this.statesAt([{ mid, at }])]);
    return {
      mid, at, odds: odds ? recorded(odds) : null, unreadable: lost ?? null,
      market: states.market ?? null, result: states.result ?? null, freshness: states.freshness ?? null,
    };
  }

  /** The image a market held at `t.at`, or the one named by epoch and seq; undefined when the record has none, or cannot rebuild it. */
  async imageAt(mid: string, t: ImageWanted): Promise<OddsMessage | undefined> {
    return (await this.imagesAt([{ mid, ...t }]))[0];
  }

  /**
   * Each image wanted, in at most four statements however many: the rows wanted (the newest, and
   * the named), the rows from each change's last full image, and, for a change whose base is not
   * among those (an image that arrived late), its market's day up to it.
   */
  async imagesAt(wanted: readonly MarketImageWanted[]): Promise<(OddsMessage | undefined)[]> {
    return (await this.found(wanted)).images;
  }

  /**
   * Each image wanted as `imagesAt` finds it and, where the record holds it but cannot rebuild it,
   * named in `unreadable` instead: an answer says so rather than that there was none.
   */
  async imagesNamed(wanted: readonly MarketImageWanted[]): Promise<{ images: (OddsMessage | undefined)[]; unreadable: (UnreadableImage | undefined)[] }> {
    const { rows, images } = await this.found(wanted);
    return { images, unreadable: rows.map((r, i) => (r && !images[i] ? unreadable(r) : undefined)) };
  }

  /** The row of each image wanted, and the image rebuilt from it (undefined where its chain is broken: the record holds it, unreadable). */
  private async found(wanted: readonly MarketImageWanted[]): Promise<{ rows: (OddsRow | undefined)[]; images: (OddsMessage | undefined)[] }> {
    const rows = await this.rowsAt(wanted);
    const out = rows.map((r) => (r && r.base === null ? (readBody(r) as OddsMessage) : undefined));
    const changes = rows.flatMap((r, i) => (r && r.base !== null ? [i] : []));
    const near = await this.chains(changes.map((i) => rows[i]!), false);
    const missing: number[] = [];
    changes.forEach((i, k) => {
      const path = pathOf(rows[i]!, near[k]);
      if (path) out[i] = replayPath(path);
      else missing.push(i);
    });
    const wide = await this.chains(missing.map((i) => rows[i]!), true);
    missing.forEach((i, k) => {
      const path = pathOf(rows[i]!, wide[k]);
      out[i] = path && replayPath(path);
    });
    return { rows, images: out };
  }

  /** The row each wanted image is: one statement for those wanted by time, one for those named. */
  private async rowsAt(wanted: readonly MarketImageWanted[]): Promise<(OddsRow | undefined)[]> {
    const out: (OddsRow | undefined)[] = wanted.map(() => undefined);
    const newest = wanted.flatMap((w, i) => (w.epoch === undefined ? [i] : []));
    const named = wanted.flatMap((w, i) => (w.epoch !== undefined ? [i] : []));
    const pick = `SELECT s.i, r.mid, r.pt, r.epoch, r.seq, r.ts, r.base, r.body FROM record_odds r WHERE r.mid = s.mid AND r.pt <= s.at`;
    const order = 'ORDER BY r.pt DESC, r.epoch DESC, r.seq DESC LIMIT 1';
    if (newest.length) {
      const { rows } = await this.db.query<OddsRow & { i: number }>(
        `SELECT o.* FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS s(mid, at, i) CROSS JOIN LATERAL (${pick} ${order}) o`,
        [newest.map((i) => wanted[i].mid), newest.map((i) => wanted[i].at)]);
      for (const r of rows) out[newest[Number(r.i) - 1]] = r;
    }
    if (named.length) {
      const { rows } = await this.db.query<OddsRow & { i: number }>(
        `SELECT o.* FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[]) WITH ORDINALITY AS s(mid, at, epoch, seq, i)
          CROSS JOIN LATERAL (${pick} AND r.epoch = s.epoch AND r.seq = s.seq ${order}) o`,
        [named.map((i) => wanted[i].mid), named.map((i) => wanted[i].at), named.map((i) => wanted[i].epoch), named.map((i) => wanted[i].seq)]);
      for (const r of rows) out[named[Number(r.i) - 1]] = r;
    }
    return out;
  }

  /**
   * For each change, the rows of its market and epoch up to it, within its day: from the last full
   * image before it, or (`wide`) the whole day, when a base was not found among those. One statement.
   */
  private async chains(rows: readonly OddsRow[], wide: boolean): Promise<OddsRow[][]> {
    if (!rows.length) return [];
    const from = wide ? 's.day' : `COALESCE((SELECT k.pt FROM record_odds k WHERE k.mid = s.mid AND k.epoch = s.epoch AND k.pt >= s.day AND k.pt <= s.pt
      AND k.base IS NULL ORDER BY k.pt DESC, k.epoch DESC, k.seq DESC LIMIT 1), s.day)`;
    // OFFSET 0 keeps each lookup a lateral one, run per change on the index, never a join over the table.
    const { rows: found } = await this.db.query<OddsRow & { i: number }>(
      `SELECT s.i, o.* FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[]) WITH ORDINALITY AS s(mid, epoch, pt, day, i)
        CROSS JOIN LATERAL (SELECT ${from} AS pt) f
        CROSS JOIN LATERAL (SELECT r.mid, r.pt, r.epoch, r.seq, r.ts, r.base, r.body FROM record_odds r
                             WHERE r.mid = s.mid AND r.epoch = s.epoch AND r.pt <= s.pt AND r.pt >= f.pt OFFSET 0) o
        ORDER BY s.i, o.pt, o.seq`,
      [rows.map((r) => r.mid), rows.map((r) => r.epoch), rows.map((r) => r.pt), rows.map((r) => dayOf(r.pt) * DAY_MS)]);
    return grouped(found, rows.length);
  }

  /** Each market's newest state frame of each kind at or before its instant: one statement however many. */
  async statesAt(wanted: readonly { mid: string; at: number }[]): Promise<Partial<Record<Kind, RecordedState>>[]> {
    if (!wanted.length) return [];
    const { rows } = await this.db.query<{ i: number; kind: Kind; at: number; body: Record<string, unknown> }>(
      `SELECT s.i, k.kind, x.at, x.body FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS s(mid, at, i)
        CROSS JOIN unnest(ARRAY['market', 'result', 'freshness']) AS k(kind)
        CROSS JOIN LATERAL (SELECT r.at, r.body FROM record_states r WHERE r.mid = s.mid AND r.kind = k.kind AND r.at <= s.at
                             ORDER BY r.at DESC, r.src DESC, r.n DESC LIMIT 1) x`,
      [wanted.map((w) => w.mid), wanted.map((w) => w.at)]);
    return grouped(rows, wanted.length).map((g) => Object.fromEntries(g.map((r) => [r.kind, { at: r.at, frame: r.body }])));
  }

  /**
   * Every change of a market from `from` to `to` (ms, both included), in time order, at most
   * `limit`: images whole, state frames as published, and in place of each image the record
   * holds but cannot rebuild, an `unreadable` item naming it (never a page silently short). `after` continues a page (its `next`): a
   * time within the range and how many changes of that ms the pages before passed. What a page
   * reads is bounded by the page and the changes the record holds in that ms, never by the count
   * a cursor carries (a made-up one read a million rows a table).
   */
  /**
   * `open`: the caller left `to` out, asking for what the record holds now: the range then ends at
   * the complete mark and its last page says so (`next` null), so a client that pages until `next`
   * is null stops. With a `to` past the mark, pages follow the live end (`next` given while `to`
   * lies beyond it).
   */
  async changes(mid: string, from: number, to: number, limit: number, after?: string, open = false): Promise<ChangesPage> {
    const [start, asked] = after ? after.split('.').map(Number) : [from, 0];
    if (start < from || start > to) throw errors.badParam('after', 'must be the next value of a page of the same range, as given');
    // A page never reads past the mark: a row there may yet be committed before one it read, and
    // a cursor past it would never go back for it. Each ms up to the mark is whole, so a cursor's
    // count of the changes of its ms stays true.
    const { complete, end } = await this.bounded(to);
    if (start > end) return { changes: [], next: open ? null : `${start}.${asked}`, complete };
    const [oddsSkip, statesSkip] = asked ? await this.passed(mid, start, asked) : [0, 0];
    const [odds, states] = await Promise.all([
      this.db.query<OddsRow>(`SELECT ${COLS} FROM record_odds WHERE mid = $1 AND pt >= $2 AND pt <= $3 ORDER BY pt, epoch, seq OFFSET $4 LIMIT $5`, [mid, start, end, oddsSkip, limit + 1]),
      this.db.query<{ kind: 'market' | 'result' | 'freshness'; at: number; body: Record<string, unknown> }>(
        `SELECT kind, at, body FROM record_states WHERE mid = $1 AND at >= $2 AND at <= $3 ORDER BY at, kind, src, n OFFSET $4 LIMIT $5`, [mid, start, end, statesSkip, limit + 1]),
    ]);
    type Item = { t: number; row?: OddsRow; state?: RecordedState & { kind: 'market' | 'result' | 'freshness' } };
    // Stable: in one ms the images come first, then the state frames, as `passed` counts them.
    const items: Item[] = [
      ...odds.rows.map((row) => ({ t: row.pt, row })),
      ...states.rows.map((s) => ({ t: s.at, state: { kind: s.kind, at: s.at, frame: s.body } })),
    ].sort((a, b) => a.t - b.t);
    const page = items.slice(0, limit);
    const changes: Change[] = [];
    // undefined: a change that could not be rebuilt, so neither can one from it (each try reads the market's day).
    const built = new Map<string, OddsMessage | undefined>();
    for (const it of page) {
      if (it.state) {
        changes.push(it.state);
        continue;
      }
      const r = it.row!;
      const from = `${r.epoch}/${r.base}`;
      const base = r.base === null ? undefined : built.get(from);
      const m = r.base === null ? (readBody(r) as OddsMessage) : base ? replay(base, readBody(r) as DeltaMessage)
        : built.has(from) ? undefined : await this.imageAt(mid, { at: r.pt, epoch: r.epoch, seq: r.seq });
      built.set(`${r.epoch}/${r.seq}`, m);
      changes.push(m ? { kind: 'odds', ...recorded(m) } : { kind: 'unreadable', ...unreadable(r) });
    }
    const skip = oddsSkip + statesSkip;
    // Short of `to`, the range is not done: the next page starts where this one stopped, and a
    // client at the live end asks again once the mark has moved on.
    const next = items.length > limit || (!open && end < to) ? (page.length ? cursor(page, skip, start) : `${start}.${skip}`) : null;
    return { changes, next, complete };
  }

  /** `to`, or the complete mark when that comes first: how far a read may go and not miss a row committed after it. */
  async completeBy(to: number): Promise<number> {
    return (await this.bounded(to)).end;
  }

  /** The complete mark, and `to` or the mark when that comes first. */
  private async bounded(to: number): Promise<{ complete: number | null; end: number }> {
    const complete = await this.complete();
    return { complete, end: complete === null ? to : Math.min(to, complete) };
  }

  /** The record's complete mark; null where it keeps none (its tables written by a recorder before the mark). */
  async complete(): Promise<number | null> {
    if (!markKept) {
      const { rows: [r] } = await this.db.query<{ kept: boolean }>(`SELECT to_regclass('record_complete') IS NOT NULL AS kept`);
      if (!r.kept) return null;
      markKept = true;
    }
    const { rows: [row] } = await this.db.query<{ at: number }>('SELECT at FROM record_complete');
    return row ? Number(row.at) : null;
  }

  /** Of the `asked` changes of the ms `start` a cursor passed, how many were images and how many state frames (images first), never more than the ms holds. */
  private async passed(mid: string, start: number, asked: number): Promise<[number, number]> {
    const { rows: [held] } = await this.db.query<{ odds: number; states: number }>(
      'SELECT (SELECT count(*) FROM record_odds WHERE mid = $1 AND pt = $2) AS odds, (SELECT count(*) FROM record_states WHERE mid = $1 AND at = $2) AS states', [mid, start]);
    const odds = Math.min(asked, Number(held.odds));
    return [odds, Math.min(asked - odds, Number(held.states))];
  }
}

/** An image the record holds as `row` and cannot rebuild, as an answer names it. */
const unreadable = (row: OddsRow): UnreadableImage => ({ mid: row.mid, epoch: row.epoch, seq: row.seq, pt: row.pt, ts: row.ts });

/** Where the page after `page` starts: the time of its last item and how many items at that time it has passed. */
function cursor(page: readonly { t: number }[], skip: number, start: number): string {
  const last = page[page.length - 1].t;
  let same = 0;
  for (const it of page) if (it.t === last) same++;
  return `${last}.${last === start ? same + skip : same}`;
}
