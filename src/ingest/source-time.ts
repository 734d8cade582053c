import { systemClock, type Clock } from '../lib/clock.js';

/** The bounds an odds image's source time (`ts`) is judged by, and the server's clock. */
export interface SourceTimeLimits {
  /** How far ahead of the server's clock a source time may be (INGEST_MAX_SKEW_MS). */
  maxSkewMs: number;
  /** How old a source time may be before its image is late (INGEST_LATE_MS). */
  lateMs: number;
  /** The server's clock: the system's, unless a test sets its own. */
  clock?: Pick<Clock, 'now'>;
}

/** An instant as a reader checks it: ms and, when the instant exists, its UTC time. */
function instant(ms: number): string {
  return Math.abs(ms) <= 8.64e15 ? `${ms} (${new Date(ms).toISOString()})` : String(ms);
}

/**
 * Source times taken on no one's word: an image whose `ts` is ahead of the server's clock by more
 * than the skew allowed is refused, naming both times; one older than the newest its publisher
 * sent for the market (in this batch or before) is refused as out of order; one older than
 * `lateMs` is published as `late`. A replay (`/ingest?replay=1`) publishes a recording whose
 * times are its own: only the order is judged.
 */
export class SourceTime {
  private readonly clock: Pick<Clock, 'now'>;

  constructor(private readonly limits: SourceTimeLimits) {
    this.clock = limits.clock ?? systemClock;
  }

  /** `newest`: the newest source time its publisher sent for the market; `replay`: that publisher replays a recording. */
  judge(ts: number, newest: number | undefined, replay: boolean): { error: string } | { late: boolean } {
    if (newest !== undefined && ts < newest) return { error: `ts ${instant(ts)} is older than ${instant(newest)}, the newest this publisher sent for the market: out of order` };
    if (replay) return { late: false };
    const now = this.clock.now();
    const { maxSkewMs, lateMs } = this.limits;
    if (ts - now > maxSkewMs) return { error: `ts ${instant(ts)} is ${Math.round(ts - now)} ms ahead of the server's clock ${instant(now)}; at most ${maxSkewMs} ms is allowed (INGEST_MAX_SKEW_MS)` };
    return { late: now - ts > lateMs };
  }
}
