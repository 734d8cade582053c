import { errors } from '../errors.js';
import { RecordReader, recorded, type RecordedImage, type RecordedState } from './query.js';
import type { RecordDb } from './snapshot.js';
import { LedgerReplay, type Behind, type LedgerEvent, type MarketAt, type MarketLedger, type NoteBounds, type Owed, type Span } from './spans.js';

/** Ledger events one answer reads at most: a socket that did more is asked about an earlier instant. */
const MAX_EVENTS = 20_000;
/** Conflated sends listed per span at most. */
const MAX_SENT = 10_000;

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
  odds: RecordedImage | null;
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

  async ledger(conn: string): Promise<SocketLedgerAnswer> {
    const events = await this.events(conn);
    const replay = new LedgerReplay();
    for (const e of events) replay.apply(e, e.n);
    for (const [mid, m] of replay.markets) {
      for (const span of m.spans) {
        if (span.from === null && !span.conflate) await this.firstAfter(mid, span);
        if (span.conflate) await this.conflatedSends(conn, mid, span, replay.bounds.get(span)!);
      }
    }
    const close = events.find((e) => e.op === 'close');
    return {
      ...this.connection({ conn, at: events[0].at, body: events[0].body }),
      closed: close ? { at: close.at, code: Number(close.body.code) } : null,
      events: events.map(({ at, op, body }) => ({ at, op, body })),
      markets: Object.fromEntries(replay.markets),
    };
  }

  async screen(conn: string, at: number): Promise<Screen> {
    const events = await this.events(conn, at);
    const replay = new LedgerReplay();
    for (const e of events) replay.apply(e, e.n);
    const markets: ScreenMarket[] = [];
    for (const [mid, now] of replay.now) markets.push(await this.market(conn, mid, now, at, replay.bounds));
    return { conn, at, open: !events.some((e) => e.op === 'close'), markets: markets.sort((a, b) => a.mid.localeCompare(b.mid)) };
  }

  /** One market on the screen at `at`: owed, what it held when it left its topic (or took it), with the state it had been told then. */
  private async market(conn: string, mid: string, now: MarketAt, at: number, bounds: ReadonlyMap<Span, NoteBounds>): Promise<ScreenMarket> {
    const until = now.owed?.at ?? at;
    const span = now.live ?? now.owed?.left;
    const seq = now.owed ? await this.heldOwed(conn, mid, now.owed, span && bounds.get(span)) : await this.heldLive(conn, mid, now.live!, at, bounds.get(now.live!)!);
    const image = seq && (await this.reader.imageAt(mid, { at: until, ...seq }));
    const states = await this.reader.priceAt(mid, until);
    const { variant, depth, conflate, delta } = now.how;
    return {
      mid, variant, depth, conflate, delta, behind: now.owed?.at ?? null,
      odds: cut(image ? recorded(image) : null, depth),
      market: states.market, result: states.result, freshness: told(mid, states.freshness, now.behind),
    };
  }

  /** The socket's events up to `until` (all of them without it). */
  private async events(conn: string, until?: number): Promise<NumberedEvent[]> {
    const { rows } = await this.db.query<NumberedEvent>(
      'SELECT at, op, body, n FROM record_ledger WHERE conn = $1 AND at <= $2 ORDER BY at, n LIMIT $3', [conn, until ?? Number.MAX_SAFE_INTEGER, MAX_EVENTS + 1]);
    if (!rows.length || rows[0].op !== 'open') throw errors.connectionUnknown(conn, until);
    if (rows.length > MAX_EVENTS) throw errors.recordTooLong(`connection ${conn}`, MAX_EVENTS);
    return rows;
  }

  private connection(r: { conn: string; at: number; body: Record<string, unknown> }): Connection {
    const b = r.body;
    return { conn: r.conn, opened: r.at, key: String(b.key), client: String(b.client), address: String(b.address), format: String(b.format) };
  }

  /** A market taken before it had an image: its span starts with the first image published after. */
  private async firstAfter(mid: string, span: Span): Promise<void> {
    const { rows } = await this.db.query<{ epoch: string; seq: number }>(
      'SELECT epoch, seq FROM record_odds WHERE mid = $1 AND pt >= $2 AND pt <= $3 ORDER BY pt, seq LIMIT 1', [mid, span.start, span.end ?? Number.MAX_SAFE_INTEGER]);
    if (!rows[0] || (span.epoch !== null && span.epoch !== rows[0].epoch)) return;
    span.epoch = rows[0].epoch;
    span.from = rows[0].seq;
    span.sent = true;
  }

  /**
   * A conflated span's sends: the image it joined with, when it was sent it, then each its variant
   * sent on this pod while it was on the topic, placed by their numbers among the pod's notes (so
   * a send in the ms it joined counts only after it), an image sent again counted again.
   */
  private async conflatedSends(conn: string, mid: string, span: Span, b: NoteBounds): Promise<void> {
    const { rows } = await this.db.query<{ epoch: string; seq: number }>(
      `SELECT epoch, seq FROM record_sent WHERE src = $1 AND variant = $2 AND mid = $3 AND at >= $4 AND at <= $5 AND n > $6 AND n < $7
        ORDER BY n LIMIT $8`,
      [pod(conn), span.variant, mid, span.start, span.end ?? Number.MAX_SAFE_INTEGER, b.start, b.end ?? Number.MAX_SAFE_INTEGER, MAX_SENT]);
    const seqs = span.from === null || !span.sent ? [] : [span.from];
    for (const r of rows) if (span.epoch === null || r.epoch === span.epoch) seqs.push(r.seq);
    span.seqs = seqs;
    if (span.to === null && span.end !== null) span.to = seqs.at(-1) ?? span.from;
  }

  /** On the topic at `at`: unconflated, the newest image then (never older than the one it took); conflated, the newest its variant sent. */
  private async heldLive(conn: string, mid: string, span: Span, at: number, b: NoteBounds): Promise<{ epoch: string; seq: number } | undefined> {
    if (span.conflate) return this.lastSent(conn, mid, span, at, b);
    const newest = await this.reader.imageAt(mid, { at });
    if (newest && span.epoch === newest.epoch && span.from !== null && newest.seq < span.from) return { epoch: span.epoch, seq: span.from };
    return newest ? { epoch: newest.epoch, seq: newest.seq } : undefined;
  }

  /** Owed: what it held when it left its topic (found in the record when not known then), or what a resume said; nothing for a market it never held. */
  private async heldOwed(conn: string, mid: string, o: Owed, b: NoteBounds | undefined): Promise<{ epoch: string; seq: number } | undefined> {
    if (o.epoch !== null && o.seq !== null) return { epoch: o.epoch, seq: o.seq };
    if (!o.left) return undefined;
    if (o.left.conflate) return this.lastSent(conn, mid, o.left, o.at, b!);
    const before = await this.reader.imageAt(mid, { at: o.at - 1 });
    return before ? { epoch: before.epoch, seq: before.seq } : undefined;
  }

  /** The newest image a conflated span's variant sent it by `at` (and before the span ended); else the one it joined with. */
  private async lastSent(conn: string, mid: string, span: Span, at: number, b: NoteBounds): Promise<{ epoch: string; seq: number } | undefined> {
    const { rows } = await this.db.query<{ epoch: string; seq: number }>(
      'SELECT epoch, seq FROM record_sent WHERE src = $1 AND variant = $2 AND mid = $3 AND at >= $4 AND at <= $5 AND n > $6 AND n < $7 ORDER BY n DESC LIMIT 1',
      [pod(conn), span.variant, mid, span.start, at, b.start, b.end ?? Number.MAX_SAFE_INTEGER]);
    if (rows[0]) return rows[0];
    return span.epoch !== null && span.from !== null ? { epoch: span.epoch, seq: span.from } : undefined;
  }
}

/** The freshness a market showed: the `behind` it was told, while in force and newer than the record's frame, else the record's. */
function told(mid: string, recorded: RecordedState | null, behind: Behind | undefined): RecordedState | null {
  if (!behind || (recorded && recorded.at > behind.start)) return recorded;
  return { at: behind.start, frame: { op: 'freshness', mid, live: false, why: 'behind', at: behind.since } };
}
