import type { HttpRequest } from 'uWebSockets.js';
import { errors } from '../errors.js';
import { asDatabaseError } from '../db/pool.js';
import { isMarketId } from '../refdata/ids.js';
import { isoInstant } from '../lib/iso-time.js';
import { RecordReader } from '../record/query.js';
import { SocketRecord } from '../record/sockets.js';
import type { RecordDb, RecordSnapshots } from '../record/snapshot.js';
import { parseQuery, type Query } from './request.js';
import type { Router } from './router.js';

/** Who may read the record: it tells every price and every socket's view, so the back office (admin keys). */
const NEED = 'admin';
const PAGE = { default: 100, max: 1000 } as const;
/** Ten years: a range past it is a mistake. */
const MAX_RANGE_MS = 3650 * 86_400_000;

export interface RecordRoutesDeps {
  /** Undefined with RECORD=off: every route answers 404 saying so. */
  record: RecordSnapshots | undefined;
}

/** An instant: ms since 1970, or an ISO 8601 time with its zone (`2026-11-25T12:01:03.250Z`). */
export function instant(q: Query, name: string, fallback?: number): number {
  const raw = q.get(name);
  if (raw === undefined || raw === '') {
    if (fallback !== undefined) return fallback;
    throw errors.badParam(name, 'is required: a time in ms since 1970, or ISO 8601 with its zone (2026-11-25T12:01:03.250Z)');
  }
  const ms = /^\d{1,15}$/.test(raw) ? Number(raw) : isoInstant(raw);
  // Date.parse would take 30 February as 2 March: a day or time the calendar does not have is refused.
  if (Number.isNaN(ms)) throw errors.badParam(name, `must be a date and time that exist: ${raw.slice(0, 40)} does not`);
  if (ms === undefined || !Number.isSafeInteger(ms)) throw errors.badParam(name, `must be a time in ms since 1970, or ISO 8601 with its zone (2026-11-25T12:01:03.250Z); got ${raw.slice(0, 40)}`);
  return ms;
}

function marketOf(q: Query): string {
  const mid = q.get('mid');
  if (!isMarketId(mid)) throw errors.badParam('mid', 'must be one market ID matching [A-Za-z0-9._:-]{1,64}');
  return mid;
}

/** A socket's name in the record: its pod's and its number there (`p<time><random>.<n>`). */
function connOf(q: Query): string {
  const conn = q.get('conn');
  if (!conn || !/^p[0-9a-z]{1,40}\.\d{1,15}$/.test(conn)) throw errors.badParam('conn', 'must name a socket as /api/v1/record/sockets lists it (p<pod>.<n>)');
  return conn;
}

const KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;
/** A page of sockets' `next`: the last one listed, by its opening time and name. */
const SOCKET_CURSOR = /^(\d{1,15})\.(p[0-9a-z]{1,40}\.\d{1,15})$/;

/** `open`: `to` left out, so the range is what the record holds complete now (its complete mark). */
function range(q: Query, now: number): { from: number; to: number; open: boolean } {
  const from = instant(q, 'from');
  const to = instant(q, 'to', now);
  if (to < from) throw errors.badParam('to', 'must not be before from');
  if (to - from > MAX_RANGE_MS) throw errors.badParam('to', 'must be within ten years of from');
  return { from, to, open: !q.get('to') };
}

export function pageSize(q: Query): number {
  const raw = q.get('limit');
  if (raw === undefined) return PAGE.default;
  const n = /^\d{1,4}$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 1 && n <= PAGE.max)) throw errors.badParam('limit', `must be a whole number from 1 to ${PAGE.max}`);
  return n;
}

export function cursorOf(q: Query): string | undefined {
  const after = q.get('after');
  if (after !== undefined && !/^\d{1,15}\.\d{1,6}$/.test(after)) throw errors.badParam('after', 'must be the next value of the page before, as given');
  return after;
}

/** Where a page of sockets starts: after the socket the page before's `next` names, which must lie within the range asked. */
function socketCursorOf(q: Query, from: number, to: number): { at: number; conn: string } | undefined {
  const after = q.get('after');
  if (after === undefined) return undefined;
  const m = SOCKET_CURSOR.exec(after);
  if (!m) throw errors.badParam('after', 'must be the next of the page before (<time>.<conn>), as given');
  const at = Number(m[1]);
  if (at < from || at > to) throw errors.badParam('after', 'must be the next of a page of the same range, as given');
  return { at, conn: m[2] };
}

/**
 * The next page of sockets as an RFC 8288 `Link` (rel="next"): the same range, key and limit, the
 * range's `to` fixed as the first page took it (now, unless given). A header, not a key of the
 * body, so the answer stays the array it has always been.
 */
function nextSockets(range: { from: number; to: number }, key: string | undefined, limit: number, next: string | null): Record<string, string> | undefined {
  if (!next) return undefined;
  const q = new URLSearchParams({ from: String(range.from), to: String(range.to), ...(key ? { key } : {}), limit: String(limit), after: next });
  return { link: `</api/v1/record/sockets?${q}>; rel="next"` };
}

/**
 * The record's routes (docs/record.md): a market's price, state and freshness at an instant,
 * its changes over a range, and what each subscriber socket was sent. They read the record's
 * Postgres, never the live book: an answer is what the record holds.
 */
export function registerRecord(router: Router, deps: RecordRoutesDeps): void {
  /**
   * `answer` checks the query before the first read and says how to read the answer from one
   * snapshot of the record: its body (sent as JSON) and any headers.
   */
  const route = (path: string, answer: (q: Query) => (db: RecordDb) => Promise<{ body: unknown; headers?: Record<string, string> }>) =>
    router.getAsync(path, async (req: HttpRequest, signal: AbortSignal) => {
      const q = parseQuery(req.getQuery());
      const record = deps.record;
      if (!record) throw errors.recordOff();
      const read = answer(q);
      try {
        // A client that hangs up stops its read: its statement is cancelled, its turn given back (snapshot.ts).
        const { body, headers } = await record.read(read, signal);
        return { body: JSON.stringify(body), headers };
      } catch (err) {
        throw asDatabaseError(err);
      }
    }, NEED);
  /** An answer that is its body alone. */
  const body = async (answer: Promise<unknown>) => ({ body: await answer });

  route('/api/v1/record/price', (q) => {
    const [mid, at] = [marketOf(q), instant(q, 'at')];
    return (db) => body(new RecordReader(db).priceAt(mid, at));
  });
  route('/api/v1/record/changes', (q) => {
    const { from, to, open } = range(q, Date.now());
    const [mid, limit, after] = [marketOf(q), pageSize(q), cursorOf(q)];
    return (db) => body(new RecordReader(db).changes(mid, from, to, limit, after, open));
  });
  route('/api/v1/record/sockets', (q) => {
    const span = range(q, Date.now());
    const key = q.get('key');
    if (key !== undefined && !KEY_ID.test(key)) throw errors.badParam('key', 'must be an API key ID (1 to 64 letters, digits, . _ or -)');
    const [limit, after] = [pageSize(q), socketCursorOf(q, span.from, span.to)];
    return async (db) => {
      // Left open, the listing ends at the mark, so no socket opened before its end is committed
      // after it; the pages after keep that end (their Link's `to`).
      const listed = span.open ? { from: span.from, to: await new RecordReader(db).completeBy(span.to) } : span;
      const page = listed.to < listed.from ? { sockets: [], next: null } : await new SocketRecord(db).list(listed.from, listed.to, key, limit, after);
      return { body: page.sockets, headers: nextSockets(listed, key, limit, page.next) };
    };
  });
  route('/api/v1/record/socket', (q) => {
    const conn = connOf(q);
    return (db) => body(new SocketRecord(db).ledger(conn));
  });
  route('/api/v1/record/screen', (q) => {
    const [conn, at] = [connOf(q), instant(q, 'at')];
    return (db) => body(new SocketRecord(db).screen(conn, at));
  });
}
