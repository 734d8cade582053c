import { INGEST_LIMITS, MARKET_STATUSES, MAX_REASON, PUBLISHER_STALE_REASONS, RUNNER_STATUSES, type MarketStatus, type PriceSize, type PublisherStaleReason, type RunnerStatus } from '../odds/messages.js';
import type { OddsImage, RunnerPrices } from '../odds/image.js';
import { UNREADABLE } from '../odds/ingest-codec.js';
import { LONE_SURROGATE } from './fields.js';
import { isMarketId, isPositiveId } from '../refdata/ids.js';
import { MARKET_TYPES, type MarketType } from '../refdata/types.js';
import type { BetStop } from './batch.js';

/** Limits on one image: far above any real market, low enough that one item cannot eat the heap. */
const MAX_RUNNERS = INGEST_LIMITS.runners;
const MAX_LEVELS = INGEST_LIMITS.levels;
/** Traded volume, on a runner or a whole market: it accumulates, so it may pass any one stake. */
const MAX_VOLUME = 1e12;

const isNumber = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n);

/** The shape of a ladder; which prices and sizes a market can have is the price rule's (prices.ts). */
function levels(v: unknown, at: string): PriceSize[] | string {
  if (!Array.isArray(v) || v.length > MAX_LEVELS) return `${at} must be an array of at most ${MAX_LEVELS} [price, size] pairs`;
  for (const [i, pair] of v.entries()) {
    if (!Array.isArray(pair) || pair.length !== 2 || !pair.every(isNumber)) return `${at}[${i}] must be [price, size] with two numbers`;
  }
  return v as PriceSize[];
}

/** `ltp` must be a number (its range is the price rule's), `tv` a volume; both optional. */
function figures(o: Record<string, unknown>, at: string, keys: readonly ('ltp' | 'tv')[]): string | undefined {
  for (const k of keys) {
    const v = o[k];
    if (v === undefined) continue;
    if (k === 'ltp' && !isNumber(v)) return `${at}ltp must be a number, the last traded price`;
    if (k === 'tv' && !(isNumber(v) && v >= 0 && v <= MAX_VOLUME)) return `${at}tv must be a traded volume from 0 to ${MAX_VOLUME}`;
  }
  return undefined;
}

/** A runner's wire keys read into its prices. */
function runner(v: unknown, at: string): RunnerPrices | string {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return `${at} must be an object {rid, st, b, l, ltp?, tv?}`;
  const o = v as Record<string, unknown>;
  if (!isPositiveId(o.rid)) return `${at}.rid must be a positive integer`;
  if (!(RUNNER_STATUSES as readonly unknown[]).includes(o.st)) return `${at}.st must be one of ${RUNNER_STATUSES.join(', ')}`;
  const b = levels(o.b, `${at}.b`);
  if (typeof b === 'string') return b;
  const l = levels(o.l, `${at}.l`);
  if (typeof l === 'string') return l;
  const bad = figures(o, `${at}.`, ['ltp', 'tv']);
  if (bad) return bad;
  const out: RunnerPrices = { runnerId: o.rid, status: o.st as RunnerStatus, back: b, lay: l };
  if (o.ltp !== undefined) out.lastTraded = o.ltp as number;
  if (o.tv !== undefined) out.tradedVolume = o.tv as number;
  return out;
}

/** A suspension's reason: words of its source, only on a market that is suspended or whose ball is running. */
function reason(o: Record<string, unknown>): string | undefined {
  const sr = o.sr;
  if (sr === undefined) return undefined;
  if (typeof sr !== 'string' || sr.length === 0 || sr.length > MAX_REASON || sr.includes('\u0000') || LONE_SURROGATE.test(sr)) {
    return `sr must be a reason of 1 to ${MAX_REASON} characters (no NUL, no lone surrogate)`;
  }
  return o.st === 'SUSPENDED' || o.st === 'BALL_RUNNING' ? undefined : 'sr is only for a market that is SUSPENDED or BALL_RUNNING';
}

/** Checks an odds item's shape (its wire keys) and returns the image, or the first problem naming its field. */
export function validateOdds(o: Record<string, unknown>): { image: OddsImage } | { error: string } {
  if (!isMarketId(o.mid)) return { error: 'mid must match [A-Za-z0-9._:-]{1,64}' };
  if (typeof o.ts !== 'number' || !Number.isFinite(o.ts) || o.ts < 0) return { error: 'ts must be the source time in milliseconds' };
  if (!(MARKET_STATUSES as readonly unknown[]).includes(o.st)) return { error: `st must be one of ${MARKET_STATUSES.join(', ')}` };
  if (typeof o.ip !== 'boolean') return { error: 'ip must be true or false' };
  if (!Array.isArray(o.r) || o.r.length > MAX_RUNNERS) return { error: `r must be an array of at most ${MAX_RUNNERS} runners` };
  const bad = figures(o, '', ['tv']) ?? reason(o);
  if (bad) return { error: bad };
  const runners: RunnerPrices[] = [];
  const seen = new Set<number>();
  for (const [i, v] of o.r.entries()) {
    const r = runner(v, `r[${i}]`);
    if (typeof r === 'string') return { error: r };
    if (seen.has(r.runnerId)) return { error: `r[${i}].rid repeats runner ${r.runnerId}` };
    seen.add(r.runnerId);
    runners.push(r);
  }
  const image: OddsImage = { marketId: o.mid, sourceTime: o.ts, status: o.st as MarketStatus, inPlay: o.ip, runners };
  if (o.sr !== undefined) image.suspensionReason = o.sr as string;
  if (o.tv !== undefined) image.tradedVolume = o.tv as number;
  return { image };
}

/** An odds item as ingest takes it: the image, and whether the source says it is late. */
export function validateOddsItem(o: Record<string, unknown>): { image: OddsImage; late: boolean } | { error: string } {
  const unreadable = (o as { [UNREADABLE]?: string })[UNREADABLE];
  if (unreadable !== undefined) return { error: unreadable };
  if (o.late !== undefined && typeof o.late !== 'boolean') return { error: 'late must be true or false' };
  const checked = validateOdds(o);
  return 'error' in checked ? checked : { image: checked.image, late: o.late === true };
}

/** A `suspend` item: the event, the reason, the source time, and the market types it stops (all when absent). */
export function validateSuspend(o: Record<string, unknown>): { stop: BetStop } | { error: string } {
  // A market named beside the event would be ignored, and every market of the event stopped: say so instead.
  if ('mid' in o) return { error: 'mid has no place on a suspend item, which stops every market of its event (eid): to suspend one market, send its odds image with st SUSPENDED' };
  if (!isPositiveId(o.eid)) return { error: 'eid must be a positive integer event ID' };
  const why = reason({ sr: o.sr, st: 'SUSPENDED' });
  if (o.sr === undefined || why) return { error: why ?? `sr must be a reason of 1 to ${MAX_REASON} characters (no NUL, no lone surrogate)` };
  if (typeof o.ts !== 'number' || !Number.isFinite(o.ts) || o.ts < 0) return { error: 'ts must be the source time in milliseconds' };
  const stop: BetStop = { eventId: o.eid, suspensionReason: o.sr as string, sourceTime: o.ts };
  if (o.tys !== undefined) {
    if (!Array.isArray(o.tys) || o.tys.length === 0 || o.tys.length > MARKET_TYPES.length || !o.tys.every((t) => (MARKET_TYPES as readonly unknown[]).includes(t))) {
      return { error: `tys must list 1 to ${MARKET_TYPES.length} market types (${MARKET_TYPES.join(', ')})` };
    }
    stop.types = new Set(o.tys as MarketType[]);
  }
  return { stop };
}

/** A `stale` item: the market and the reason its publisher gives. */
export function validateStale(o: Record<string, unknown>): { mid: string; why: PublisherStaleReason } | { error: string } {
  if (!isMarketId(o.mid)) return { error: 'mid must match [A-Za-z0-9._:-]{1,64}' };
  if (!(PUBLISHER_STALE_REASONS as readonly unknown[]).includes(o.why)) return { error: `why must be one of ${PUBLISHER_STALE_REASONS.join(', ')}` };
  return { mid: o.mid, why: o.why as PublisherStaleReason };
}
