import { errors } from '../errors.js';
import { grouped, RecordReader, recorded, type RecordedImage, type RecordedState, type UnreadableImage } from './query.js';
import type { RecordDb } from './snapshot.js';
import { LedgerReplay, type Behind, type LedgerEvent, type MarketAt, type MarketLedger, type NoteBounds, type Span } from './spans.js';

/** Ledger events one answer reads at most. */
const MAX_EVENTS = 20_000;
/**
 * Market mentions one answer reads at most, all its events together: each event names the markets
 * it moves (a `take`, `owe`, `join` or `close` of 2,000 markets names 2,000), and an answer's
 * work, memory and bytes grow with those (a span, a skip, a line each), not with its events. A
 * 2,000-market socket's take, join and close name 6,000, each fall behind and catch up after
 * (`owe`, `behind`, `join`, `live`) 8,000: it is answered for 11 of those, 23 without `behind`.
 */
export const MAX_MENTIONS = 100_000;
/** Conflated sends one answer lists at most, all its spans together; the spans past it are `cut`. */
export const MAX_SENT = 100_000;
const FAR = Number.MAX_SAFE_INTEGER;
/** What a socket's whole ledger, too long to answer, can still be asked. */
const WHOLE_TOO_LONG = 'ask for its screen at an instant (GET /api/v1/record/screen), which reads its ledger up to then';

/** The markets a ledger event names, in SQL: its `seqs`, or its `mids` and `stale`. */
const named = (key: string) => `COALESCE(jsonb_array_length(CASE jsonb_typeof(body->'${key}') WHEN 'array' THEN body->'${key}' END), 0)`;

/**
 * A socket's events up to an instant, oldest first, at most $3 of them, with what they cost so far
 * (`cost`: one an event and one a market it names), and the first event past $4 without its body:
 * what is past the cap is weighed in Postgres and never sent.
 */
const EVENTS = `SELECT at, op, n, cost, CASE WHEN cost <= $4 THEN body END AS body FROM (
    SELECT at, op, n, body, w, sum(w) OVER (ORDER BY at, n ROWS UNBOUNDED PRECEDING) AS cost FROM (
      SELECT at, op, n, body, 1 + ${named('seqs')} + ${named('mids')} + ${named('stale')} AS w
        FROM record_ledger WHERE conn = $1 AND at <= $2 ORDER BY at, n LIMIT $3) l) c
  WHERE cost - w <= $4 ORDER BY at, n`;

type Held = { epoch: string; seq: number };
type SpanOf = { mid: string; span: Span };

/** A ledger event with its number among its pod's notes: what orders it against conflated sends of the same ms. */
type NumberedEvent = LedgerEvent & { n: number };

export interface Connection {
  conn: string;
  opened: number;
  key: string;
  client: string;
  address: string;
  format: string;
}

export interface SocketLedgerAnswer extends Connection {
  closed: { at: number; code: number } | null;
  events: LedgerEvent[];
  markets: Record<string, MarketLedger>;
}

/** What one market showed on the socket's screen at an instant. */
export interface ScreenMarket {
  mid: string;
  variant: string;
  depth: number;
  conflate: number;
  delta: boolean;
  /** Off its topic since `behind` (ms), owed its newest image: what it shows is what it had then. */
  behind: number | null;
  /** null: it held no image, or (when `unreadable` is set) the record holds the one it held but cannot rebuild it. */
  odds: RecordedImage | null;
  /** The image it held when the record holds it but cannot rebuild it; else null. */
  unreadable: UnreadableImage | null;
  market: RecordedState | null;
  result: RecordedState | null;
  /** The freshness it was last told: the record's frame, or the `behind` the socket itself was told since. */
  freshness: RecordedState | null;
}

export interface Screen {
  conn: string;
  at: number;
  /** Whether the socket was open at that instant. */
  open: boolean;
  markets: ScreenMarket[];
}

const pod = (conn: string): string => conn.slice(0, conn.lastIndexOf('.'));

/** Cuts an image to `depth` ladder levels a side, as the socket's variant was sent it (0: all). */
function cut(image: RecordedImage | null, depth: number): RecordedImage | null {
  if (!image || depth === 0) return image;
  return { ...image, r: image.r.map((x) => ({ ...x, b: x.b.slice(0, depth), l: x.l.slice(0, depth) })) };
}

/**
 * What each subscriber socket was sent, from its ledger and the record: the sockets opened in a
 * time range, a socket's events with the spans of seqs it was sent per market and what it
 * skipped, and what its screen held at an instant.
 */
export class SocketRecord {
  private readonly reader: RecordReader;

  /** `db`: one snapshot of the record (snapshot.ts), so the ledger, the sends and the images agree. */
  constructor(private readonly db: RecordDb) {
    this.reader = new RecordReader(db);
  }

  /**
   * Sockets opened from `from` to `to`, by key when given, oldest first (by opening time, then
   * name), at most `limit`, after the socket `after` names (the `next` of the page before: its
   * opening time and name, `<at>.<conn>`). A page starts strictly after the last one listed,
   * however many sockets opened in its ms, so pages never repeat nor lose one; `next` is null
   * when the range is done.
   */
  async list(from: number, to: number, key: string | undefined, limit: number, after?: { at: number; conn: string }): Promise<{ sockets: Connection[]; next: string | null }> {
    const params: unknown[] = [after ? Math.max(from, after.at) : from, to, limit + 1];
    const past = after ? `AND (at, conn) > ($${params.push(after.at)}, $${params.push(after.conn)})` : '';
    const byKey = key ? `AND body->>'key' = $${params.push(key)}` : '';
    const { rows } = await this.db.query<{ conn: string; at: number; body: Record<string, unknown> }>(
      `SELECT conn, at, body FROM record_ledger WHERE op = 'open' AND at >= $1 AND at <= $2 ${past} ${byKey}
        ORDER BY at, conn LIMIT $3`, params);
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return { sockets: page.map((r) => this.connection(r)), next: rows.length > limit && last ? `${last.at}.${last.conn}` : null };
  }

  /**
   * The socket's whole ledger, and per market its spans, skips and `behind` stretches: a handful of
   * statements however many markets and spans (the first image of each span taken before its
   * market had one, and every conflated span's sends, each one statement for all).
   */
  async ledger(conn: string): Promise<SocketLedgerAnswer> {
    const events = await this.events(conn, undefined, WHOLE_TOO_LONG);
    const replay = new LedgerReplay();
    for (const e of events) replay.apply(e, e.n);
    const spans = [...replay.markets].flatMap(([mid, m]) => m.spans.map((span): SpanOf => ({ mid, span })));
    await this.firstAfter(spans.filter(({ span }) => span.from === null && !span.conflate));
    await this.conflatedSends(conn, spans.filter(({ span }) => span.conflate), replay.bounds);
    const close = events.find((e) => e.op === 'close');
    return {
      ...this.connection({ conn, at: events[0].at, body: events[0].body }),
      closed: close ? { at: close.at, code: Number(close.body.code) } : null,
      events: events.map(({ at, op, body }) => ({ at, op, body })),
      markets: Object.fromEntries(replay.markets),
    };
  }

  /**
   * Its screen at `at`: per market held then, owed or on its topic, the image it held (cut to its
   * depth) and the states it had been told, each kind of lookup one statement for all markets.
   */
  async screen(conn: string, at: number): Promise<Screen> {
    const events = await this.events(conn, at, 'ask for an earlier instant');
    const replay = new LedgerReplay();
    for (const e of events) replay.apply(e, e.n);
    const now = [...replay.now];
    // Owed, what it held when it left its topic (or took it); on it, what it held at `at`.
    const until = now.map(([, m]) => m.owed?.at ?? at);
    const held = await this.held(conn, now, at, replay.bounds);
    const wanted = held.flatMap((h, k) => (h ? [k] : []));
    const found = await this.reader.imagesNamed(wanted.map((k) => ({ mid: now[k][0], at: until[k], ...held[k]! })));
    const images = new Map(wanted.map((k, j) => [k, found.images[j]]));
    const lost = new Map(wanted.map((k, j) => [k, found.unreadable[j]]));
    const states = await this.reader.statesAt(now.map(([mid], k) => ({ mid, at: until[k] })));
    const markets = now.map(([mid, m], k): ScreenMarket => {
      const { variant, depth, conflate, delta } = m.how;
      const image = images.get(k);
      return {
        mid, variant, depth, conflate, delta, behind: m.owed?.at ?? null,
        odds: cut(image ? recorded(image) : null, depth), unreadable: lost.get(k) ?? null,
        market: states[k].market ?? null, result: states[k].result ?? null, freshness: told(mid, states[k].freshness ?? null, m.behind),
      };
    });
    return { conn, at, open: !events.some((e) => e.op === 'close'), markets: markets.sort((a, b) => a.mid.localeCompare(b.mid)) };
  }

  /**
   * The socket's events up to `until` (all of them without it). Refused past MAX_EVENTS, or past
   * MAX_MENTIONS markets named, saying what to ask instead (`hint`).
   */
  private async events(conn: string, until: number | undefined, hint: string): Promise<NumberedEvent[]> {
    const { rows } = await this.db.query<NumberedEvent & { cost: number }>(EVENTS, [conn, until ?? FAR, MAX_EVENTS + 1, MAX_MENTIONS]);
    if (!rows.length || rows[0].op !== 'open') throw errors.connectionUnknown(conn, until);
    if (rows.length > MAX_EVENTS) throw errors.recordTooLong(`connection ${conn}`, `${MAX_EVENTS} ledger events`, hint);
    if (Number(rows[rows.length - 1].cost) > MAX_MENTIONS) {
      throw errors.recordTooLong(`connection ${conn}`, `${MAX_MENTIONS} market mentions in its ledger events (an event names each market it moves)`, hint);
    }
    return rows;
  }

  private connection(r: { conn: string; at: number; body: Record<string, unknown> }): Connection {
    const b = r.body;
    return { conn: r.conn, opened: r.at, key: String(b.key), client: String(b.client), address: String(b.address), format: String(b.format) };
  }

  /** Markets taken before they had an image: each span starts with the first image published after. One statement for all. */
  private async firstAfter(spans: readonly SpanOf[]): Promise<void> {
    if (!spans.length) return;
    const { rows } = await this.db.query<{ i: number; epoch: string; seq: number }>(
      `SELECT s.i, o.epoch, o.seq FROM unnest($1::text[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS s(mid, start, stop, i)
        CROSS JOIN LATERAL (SELECT r.epoch, r.seq FROM record_odds r WHERE r.mid = s.mid AND r.pt >= s.start AND r.pt <= s.stop ORDER BY r.pt, r.seq LIMIT 1) o`,
      [spans.map((s) => s.mid), spans.map((s) => s.span.start), spans.map((s) => s.span.end ?? FAR)]);
    for (const r of rows) {
      const { span } = spans[Number(r.i) - 1];
      if (span.epoch !== null && span.epoch !== r.epoch) continue;
      span.epoch = r.epoch;
      span.from = r.seq;
      span.sent = true;
    }
  }

  /**
   * Conflated spans' sends: the image each joined with, when it was sent it, then each its variant
   * sent on this pod while it was on the topic, placed by their numbers among the pod's notes (so
   * a send in the ms it joined counts only after it), an image sent again counted again. One
   * statement for all, MAX_SENT sends at most: it runs span after span (a lateral lookup each)
   * and stops there, so the spans from the one it stopped in are `cut`.
   */
  private async conflatedSends(conn: string, spans: readonly SpanOf[], bounds: ReadonlyMap<Span, NoteBounds>): Promise<void> {
    if (!spans.length) return;
    const rows = await this.sends(conn, spans.map(({ mid, span }) => ({ mid, span, until: span.end ?? FAR })), bounds, { newest: false, each: MAX_SENT + 1, all: MAX_SENT + 1 });
    const cutFrom = rows.length > MAX_SENT ? Number(rows[MAX_SENT].i) - 1 : Infinity;
    const sent = grouped(rows.slice(0, MAX_SENT), spans.length);
    spans.forEach(({ span }, k) => {
      const seqs = span.from === null || !span.sent ? [] : [span.from];
      for (const r of sent[k]) if (span.epoch === null || r.epoch === span.epoch) seqs.push(r.seq);
      span.seqs = seqs;
      if (k >= cutFrom) span.cut = true;
      else if (span.to === null && span.end !== null) span.to = seqs.at(-1) ?? span.from;
    });
  }

  /**
   * What each market held: owed, what it held when it left its topic (found in the record when not
   * known then), or what a resume said, nothing for one it never held; on its topic at `at`,
   * unconflated the newest image then (never older than the one it took), conflated the newest its
   * variant sent it. Each kind of lookup one statement for all markets.
   */
  private async held(conn: string, now: readonly [string, MarketAt][], at: number, bounds: ReadonlyMap<Span, NoteBounds>): Promise<(Held | undefined)[]> {
    const out: (Held | undefined)[] = now.map(() => undefined);
    const sent: { k: number; mid: string; span: Span; at: number }[] = [];
    const newest: { k: number; mid: string; at: number; live?: Span }[] = [];
    now.forEach(([mid, m], k) => {
      const o = m.owed;
      if (o && o.epoch !== null && o.seq !== null) out[k] = { epoch: o.epoch, seq: o.seq };
      else if (o?.left) (o.left.conflate ? sent : newest).push({ k, mid, span: o.left, at: o.left.conflate ? o.at : o.at - 1 });
      else if (m.live) (m.live.conflate ? sent : newest).push({ k, mid, span: m.live, at, live: m.live });
    });
    const last = await this.lastSent(conn, sent, bounds);
    sent.forEach(({ k }, j) => (out[k] = last[j]));
    const { images, unreadable } = await this.reader.imagesNamed(newest.map(({ mid, at }) => ({ mid, at })));
    newest.forEach(({ k, live }, j) => {
      // One the record holds but cannot rebuild is still the one it held: the screen names it.
      const img = images[j] ?? unreadable[j];
      if (img && live && live.epoch === img.epoch && live.from !== null && img.seq < live.from) out[k] = { epoch: live.epoch, seq: live.from };
      else out[k] = img ? { epoch: img.epoch, seq: img.seq } : undefined;
    });
    return out;
  }

  /** For each conflated span, the newest image its variant sent it by its `at` (and before the span ended); else the one it joined with. One statement. */
  private async lastSent(conn: string, spans: readonly { mid: string; span: Span; at: number }[], bounds: ReadonlyMap<Span, NoteBounds>): Promise<(Held | undefined)[]> {
    if (!spans.length) return [];
    const rows = await this.sends(conn, spans.map(({ mid, span, at }) => ({ mid, span, until: at })), bounds, { newest: true, each: 1, all: null });
    const found = grouped(rows, spans.length);
    return spans.map(({ span }, j) => {
      const r = found[j][0];
      if (r) return { epoch: r.epoch, seq: r.seq };
      return span.epoch !== null && span.from !== null ? { epoch: span.epoch, seq: span.from } : undefined;
    });
  }

  /**
   * The sends of conflated spans on the socket's pod, each span's from its start to its `until`,
   * between the pod's notes that bound it, in one statement: the oldest (or `newest`) `each` of a
   * span, span after span, `all` at most in all (null: no bound).
   */
  private async sends(conn: string, spans: readonly { mid: string; span: Span; until: number }[], bounds: ReadonlyMap<Span, NoteBounds>, take: { newest: boolean; each: number; all: number | null }) {
    const b = spans.map(({ span }) => bounds.get(span)!);
    const { rows } = await this.db.query<{ i: number; epoch: string; seq: number }>(
      `SELECT s.i, x.epoch, x.seq FROM unnest($2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[]) WITH ORDINALITY AS s(variant, mid, start, until, after, before, i)
        CROSS JOIN LATERAL (SELECT r.epoch, r.seq FROM record_sent r WHERE r.src = $1 AND r.variant = s.variant AND r.mid = s.mid
                             AND r.at >= s.start AND r.at <= s.until AND r.n > s.after AND r.n < s.before
                             ORDER BY r.n ${take.newest ? 'DESC' : ''} LIMIT $8) x LIMIT $9`,
      [pod(conn), spans.map((s) => s.span.variant), spans.map((s) => s.mid), spans.map((s) => s.span.start), spans.map((s) => s.until),
        b.map((x) => x.start), b.map((x) => x.end ?? FAR), take.each, take.all]);
    return rows;
  }
}

/** The freshness a market showed: the `behind` it was told, while in force and newer than the record's frame, else the record's. */
function told(mid: string, recorded: RecordedState | null, behind: Behind | undefined): RecordedState | null {
  if (!behind || (recorded && recorded.at > behind.start)) return recorded;
  return { at: behind.start, frame: { op: 'freshness', mid, live: false, why: 'behind', at: behind.since } };
}
