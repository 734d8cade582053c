import { validateReference } from '../ingest/validate.js';
import { isLineType } from '../refdata/types.js';
import { marketType, settledStatus, termsRunnerStatus, winners } from './mapping.js';
import type { MarketDefinition, RunnerDefinition } from './stream.js';

/**
 * A market definition's terms (bet delay, turn in play, each-way terms, BSP, runners' status and
 * adjustment factors...) and, once it closes, its settlement, as `terms` and `result` items take
 * them. Every term is a key, null when the definition leaves it out, so that the translator's
 * comparison with what it sent last clears a term the exchange dropped. A value the service would
 * refuse is left out as if absent, by the service's own check of that one key: a refused
 * reference item would refuse its whole batch, and the adapter skips what it cannot carry.
 */
type Fields = Record<string, unknown>;

/** A time the stream writes as ISO 8601, in ms; null when absent or unreadable. */
const ms = (iso: string | undefined): number | null => {
  const t = iso === undefined ? NaN : Date.parse(iso);
  return Number.isFinite(t) && t >= 0 ? t : null;
};

/** The value when a `terms` item holding it alone (beside `base`) is one ingest takes; else null. */
function taken(mid: string, fields: Fields, base: Fields = {}): boolean {
  return !('error' in validateReference({ kind: 'terms', mid, ...base, ...fields }));
}

function given(mid: string, key: string, value: unknown): unknown {
  return value !== undefined && value !== null && taken(mid, { [key]: value }) ? value : null;
}

function runnerTerms(mid: string, r: RunnerDefinition): Fields {
  const base = { rid: r.id, st: termsRunnerStatus(r.status) };
  const out: Fields = { ...base };
  for (const [key, value] of [['af', r.adjustmentFactor], ['rd', ms(r.removalDate)], ['hc', r.hc]] as const) {
    out[key] = value !== undefined && value !== null && taken(mid, { r: [{ ...base, [key]: value }] }) ? value : null;
  }
  return out;
}

/** The definition's terms in their wire keys, every key present (null: not given); runners in display order. */
export function termsOf(mid: string, def: MarketDefinition, runners: readonly RunnerDefinition[]): Fields {
  const out: Fields = {
    bd: def.betDelay, tip: def.turnInPlayEnabled, sus: ms(def.suspendTime), bt: def.bettingType, nw: def.numberOfWinners, ewd: def.eachWayDivisor,
    bsp: def.bspMarket, cc: def.countryCode, ven: def.venue, race: def.raceType, mbr: def.marketBaseRate, reg: def.regulators,
    lmin: def.lineMinUnit, lmax: def.lineMaxUnit, lint: def.lineInterval,
  };
  // A line's range is refused on any other market, with the batch it came in: a definition that
  // gives one to a market of another type loses it here.
  if (!isLineType(marketType(def))) out.lmin = out.lmax = out.lint = null;
  for (const key of Object.keys(out)) out[key] = given(mid, key, out[key]);
  // A line's bounds are taken together: one refused beside the other leaves both out.
  if (out.lmin !== null && out.lmax !== null && !taken(mid, { lmin: out.lmin, lmax: out.lmax })) out.lmin = out.lmax = null;
  out.r = runners.map((r) => runnerTerms(mid, r));
  return out;
}

const given_ = (fields: Fields): Fields => Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== null));

/** A term given as null is no term to send on a market's first terms item, nor a runner's. */
export const withoutNulls = (fields: Fields): Fields => ({ ...given_(fields), ...(Array.isArray(fields.r) ? { r: (fields.r as Fields[]).map(given_) } : {}) });

/**
 * A closed market's result with its settlement: the winners (WINNER and PLACED) as `res`, each
 * runner's settlement with its dead-heat share where the definition implies one (more winners
 * than the one place of a win market: a share each), a removed runner void, and the market void
 * (`ia`) when every runner was removed. Confirmed: the exchange settled it.
 */
export function resultOf(mid: string, def: MarketDefinition, runners: readonly RunnerDefinition[]): Fields {
  const rs = runners.flatMap((r) => {
    const st = settledStatus(r.status);
    return st ? [{ rid: r.id, st, ...(st === 'REMOVED' ? { vf: 1 } : {}) }] : [];
  });
  const won = rs.filter((r) => r.st === 'WINNER');
  if (def.numberOfWinners === 1 && won.length > 1) for (const r of won) Object.assign(r, { dh: 1 / won.length });
  const at = ms(def.settledTime);
  const voided = rs.length > 0 && rs.every((r) => r.st === 'REMOVED');
  return { kind: 'result', mid, res: winners(def), rt: false, ia: voided, cert: 'confirmed', ...(at === null ? {} : { at }), rs };
}
