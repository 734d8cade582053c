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
  /** Where the next page starts (`after`), or null when the range is done. */
  next: string | null;
}

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

/**
 * Reads the record back. An image at an instant is one indexed lookup (the newest row of the
 * market at or before it) and, when that row is a change, one more for the rows from the last
 * full image before it (at most KEYFRAME_EVERY, within its day), replayed in order. State frames
 * are one lookup per kind. Its statements go to one snapshot of the record (snapshot.ts), so an
 * answer never mixes rows from before and after a commit of the recorder.
 */
export class RecordReader {
  constructor(private readonly db: RecordDb) {}

  async priceAt(mid: string, at: number): Promise<PriceAt> {
    const [found, states] = await Promise.all([this.find(mid, { at }), this.statesAt(mid, at)]);
    const odds = found?.image;
    return {
      mid, at, odds: odds ? recorded(odds) : null, unreadable: found && !odds ? unreadable(found.row) : null,
      market: states.market ?? null, result: states.result ?? null, freshness: states.freshness ?? null,
    };
  }

  /** The image a market held at `t.at`, or the one named by epoch and seq; undefined when the record has none, or cannot rebuild it. */
  async imageAt(mid: string, t: ImageWanted): Promise<OddsMessage | undefined> {
    return (await this.find(mid, t))?.image;
  }

  /** The row of the image `t` asks for, and the image rebuilt from it (undefined when its chain is broken); undefined when the record has no such row. */
  private async find(mid: string, t: ImageWanted): Promise<{ row: OddsRow; image: OddsMessage | undefined } | undefined> {
    const named = t.epoch !== undefined;
    const { rows } = await this.db.query<OddsRow>(
      `SELECT ${COLS} FROM record_odds WHERE mid = $1 AND pt <= $2 ${named ? 'AND epoch = $3 AND seq = $4' : ''}
        ORDER BY pt DESC, epoch DESC, seq DESC LIMIT 1`, named ? [mid, t.at, t.epoch, t.seq] : [mid, t.at]);
    const row = rows[0];
    if (!row) return undefined;
    if (row.base === null) return { row, image: readBody(row) as OddsMessage };
    return { row, image: await this.chain(row, await this.fromKeyframe(row)) };
  }

  /** The rows of `row`'s market and epoch from the last full image before it, within its day. */
  private async fromKeyframe(row: OddsRow): Promise<OddsRow[]> {
    const day = dayOf(row.pt) * DAY_MS;
    const { rows } = await this.db.query<OddsRow>(
      `SELECT ${COLS} FROM record_odds WHERE mid = $1 AND epoch = $2 AND pt <= $3
          AND pt >= COALESCE((SELECT pt FROM record_odds WHERE mid = $1 AND epoch = $2 AND pt >= $4 AND pt <= $3 AND base IS NULL
                               ORDER BY pt DESC, epoch DESC, seq DESC LIMIT 1), $4)
        ORDER BY pt, seq`, [row.mid, row.epoch, row.pt, day]);
    return rows;
  }

  /** Follows the changes back from `row` to a full image and replays them forward; a base missing from `rows` (an image that arrived late) reads its whole day. */
  private async chain(row: OddsRow, rows: OddsRow[], wide = false): Promise<OddsMessage | undefined> {
    const bySeq = new Map(rows.map((r) => [r.seq, r]));
    const path: OddsRow[] = [];
    for (let r: OddsRow | undefined = row; r; r = r.base === null ? undefined : bySeq.get(r.base)) {
      path.push(r);
      if (r.base !== null && !bySeq.has(r.base)) {
        if (wide) return undefined;
        const day = dayOf(row.pt) * DAY_MS;
        const all = await this.db.query<OddsRow>(`SELECT ${COLS} FROM record_odds WHERE mid = $1 AND epoch = $2 AND pt >= $3 AND pt <= $4 ORDER BY pt, seq`, [row.mid, row.epoch, day, row.pt]);
        return this.chain(row, all.rows, true);
      }
    }
    let held = readBody(path.pop()!) as OddsMessage;
    for (let r = path.pop(); r; r = path.pop()) {
      const next = replay(held, readBody(r) as DeltaMessage);
      if (!next) return undefined;
      held = next;
    }
    return held;
  }

  private async statesAt(mid: string, at: number): Promise<Partial<Record<'market' | 'result' | 'freshness', RecordedState>>> {
    const { rows } = await this.db.query<{ kind: 'market' | 'result' | 'freshness'; at: number; body: Record<string, unknown> }>(
      `SELECT k.kind, s.at, s.body FROM unnest(ARRAY['market', 'result', 'freshness']) AS k(kind)
        CROSS JOIN LATERAL (SELECT at, body FROM record_states WHERE mid = $1 AND kind = k.kind AND at <= $2 ORDER BY at DESC, src DESC, n DESC LIMIT 1) s`,
      [mid, at]);
    return Object.fromEntries(rows.map((r) => [r.kind, { at: r.at, frame: r.body }]));
  }

  /**
   * Every change of a market from `from` to `to` (ms, both included), in time order, at most
   * `limit`: images whole, state frames as published, and in place of each image the record
   * holds but cannot rebuild, an `unreadable` item naming it (never a page silently short). `after` continues a page (its `next`): a
   * time within the range and how many changes of that ms the pages before passed. What a page
   * reads is bounded by the page and the changes the record holds in that ms, never by the count
   * a cursor carries (a made-up one read a million rows a table).
   */
  async changes(mid: string, from: number, to: number, limit: number, after?: string): Promise<ChangesPage> {
    const [start, asked] = after ? after.split('.').map(Number) : [from, 0];
    if (start < from || start > to) throw errors.badParam('after', 'must be the next value of a page of the same range, as given');
    const [oddsSkip, statesSkip] = asked ? await this.passed(mid, start, asked) : [0, 0];
    const [odds, states] = await Promise.all([
      this.db.query<OddsRow>(`SELECT ${COLS} FROM record_odds WHERE mid = $1 AND pt >= $2 AND pt <= $3 ORDER BY pt, epoch, seq OFFSET $4 LIMIT $5`, [mid, start, to, oddsSkip, limit + 1]),
      this.db.query<{ kind: 'market' | 'result' | 'freshness'; at: number; body: Record<string, unknown> }>(
        `SELECT kind, at, body FROM record_states WHERE mid = $1 AND at >= $2 AND at <= $3 ORDER BY at, kind, src, n OFFSET $4 LIMIT $5`, [mid, start, to, statesSkip, limit + 1]),
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
    return { changes, next: items.length > limit ? cursor(page, oddsSkip + statesSkip, start) : null };
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
