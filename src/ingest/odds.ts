import { INGEST_LIMITS, MARKET_STATUSES, RUNNER_STATUSES, type MarketStatus, type OddsImage, type PriceSize, type RunnerOdds, type RunnerStatus } from '../odds/messages.js';
import { isMarketId, isPositiveId } from '../refdata/ids.js';

const MAX_RUNNERS = INGEST_LIMITS.runners;
const MAX_LEVELS = INGEST_LIMITS.levels;

function levels(v: unknown, at: string): PriceSize[] | string {
  if (!Array.isArray(v) || v.length > MAX_LEVELS) return `${at} must be an array of at most ${MAX_LEVELS} [price, size] pairs`;
  for (const [i, pair] of v.entries()) {
    if (!Array.isArray(pair) || pair.length !== 2 || !pair.every((n) => typeof n === 'number' && Number.isFinite(n) && n >= 0)) {
      return `${at}[${i}] must be [price, size] with two non-negative numbers`;
    }
  }
  return v as PriceSize[];
}

function runner(v: unknown, at: string): RunnerOdds | string {
  if (!v || typeof v !== 'object' || Array.isArray(v)) return `${at} must be an object {rid, st, b, l}`;
  const o = v as Record<string, unknown>;
  if (!isPositiveId(o.rid)) return `${at}.rid must be a positive integer`;
  if (!(RUNNER_STATUSES as readonly unknown[]).includes(o.st)) return `${at}.st must be one of ${RUNNER_STATUSES.join(', ')}`;
  const b = levels(o.b, `${at}.b`);
  if (typeof b === 'string') return b;
  const l = levels(o.l, `${at}.l`);
  if (typeof l === 'string') return l;
  return { rid: o.rid, st: o.st as RunnerStatus, b, l };
}

/** Checks an odds item's shape and returns the image, or the first problem naming its field. */
export function validateOdds(o: Record<string, unknown>): { image: OddsImage } | { error: string } {
  if (!isMarketId(o.mid)) return { error: 'mid must match [A-Za-z0-9._:-]{1,64}' };
  if (typeof o.ts !== 'number' || !Number.isFinite(o.ts) || o.ts < 0) return { error: 'ts must be the source time in milliseconds' };
  if (!(MARKET_STATUSES as readonly unknown[]).includes(o.st)) return { error: `st must be one of ${MARKET_STATUSES.join(', ')}` };
  if (typeof o.ip !== 'boolean') return { error: 'ip must be true or false' };
  if (!Array.isArray(o.r) || o.r.length > MAX_RUNNERS) return { error: `r must be an array of at most ${MAX_RUNNERS} runners` };
  const runners: RunnerOdds[] = [];
  const seen = new Set<number>();
  for (const [i, v] of o.r.entries()) {
    const r = runner(v, `r[${i}]`);
    if (typeof r === 'string') return { error: r };
    if (seen.has(r.rid)) return { error: `r[${i}].rid repeats runner ${r.rid}` };
    seen.add(r.rid);
    runners.push(r);
  }
  return { image: { mid: o.mid, ts: o.ts, st: o.st as MarketStatus, ip: o.ip, r: runners } };
}
