import { INGEST_LIMITS } from '../odds/messages.js';
import { BETTING_TYPES, CERTAINTIES, SETTLED_STATUSES, TERMS_RUNNER_STATUSES, type RunnerSettlement } from '../refdata/types.js';
import { TERMS_KEYS, type WireTerms } from '../refdata/wire.js';
import type { RunnerTermsChange, SettlementChange, TermsChange, TermsItem } from './items.js';
import { fail, flag, float, id, marketId, nullable, opt, text, type Obj } from './fields.js';

/**
 * The terms a publisher gives a market (`terms` items) and how it settled a result (a `result`
 * item's `cert`, `at` and `rs`), checked key by key as docs/ingest.md states them. Each key given
 * sets its term, null clears it, one left out stays as it is.
 */

/** Far above any exchange's delay: a bet held longer than this is no bet. */
const MAX_BET_DELAY_S = 600;
const MAX_REGULATORS = 20;
/** 9999-12-31, the last instant a Postgres timestamp and an event's start may name. */
const LATEST_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

const oneOf = <T>(values: readonly T[]) => (v: unknown, key: string): T =>
  values.includes(v as T) ? (v as T) : fail(key, `must be one of ${values.join(', ')}`);
const between = (lo: number, hi: number, what: string) => (v: unknown, key: string): number =>
  typeof v === 'number' && v >= lo && v <= hi ? v : fail(key, `must be ${what} from ${lo} to ${hi}`);
const whole = (lo: number, hi: number, what: string) => (v: unknown, key: string): number =>
  Number.isInteger(v) ? between(lo, hi, what)(v, key) : fail(key, `must be ${what}, a whole number from ${lo} to ${hi}`);
const time = between(0, LATEST_MS, 'a time in ms since the epoch');
const positive = (v: unknown, key: string): number => (float(v, key) > 0 ? (v as number) : fail(key, 'must be above 0'));
const country = (v: unknown, key: string): string => (typeof v === 'string' && /^[A-Z]{2}$/.test(v) ? v : fail(key, 'must be an ISO 3166 country code of two capital letters'));
const label = text(100);

function list<T>(v: unknown, key: string, max: number, each: (x: unknown, at: string) => T): T[] {
  if (!Array.isArray(v) || v.length > max) return fail(key, `must be an array of at most ${max}`);
  return v.map((x, i) => each(x, `${key}[${i}]`));
}

function object(v: unknown, at: string, shape: string): Obj {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : fail(at, `must be an object ${shape}`);
}

/** No runner twice in one list. */
function distinct<T extends { runnerId: number }>(runners: T[], key: string): T[] {
  const seen = new Set<number>();
  for (const [i, r] of runners.entries()) {
    if (seen.has(r.runnerId)) fail(`${key}[${i}].rid`, `repeats runner ${r.runnerId}`);
    seen.add(r.runnerId);
  }
  return runners;
}

/** Each term's check, by its wire key. */
const TERM_CHECKS: Record<Exclude<keyof WireTerms, 'r'>, (v: unknown, key: string) => unknown> = {
  bd: whole(0, MAX_BET_DELAY_S, 'a bet delay in seconds'),
  tip: flag,
  sus: time,
  bt: oneOf(BETTING_TYPES),
  nw: whole(1, INGEST_LIMITS.runners, 'a number of winners'),
  ewd: between(1, 100, 'an each-way divisor'),
  bsp: flag,
  cc: country,
  ven: label,
  race: label,
  mbr: between(0, 100, 'a commission percentage'),
  reg: (v, key) => list(v, key, MAX_REGULATORS, (x, at) => label(x, at)),
  lmin: float,
  lmax: float,
  lint: positive,
};

function runnerTerms(v: unknown, at: string): RunnerTermsChange {
  const o = object(v, at, '{rid, st, af, rd, hc}');
  const out: RunnerTermsChange = { runnerId: id(o.rid, `${at}.rid`) };
  const status = opt(o, 'st', (x) => oneOf(TERMS_RUNNER_STATUSES)(x, `${at}.st`));
  if (status !== undefined) out.status = status;
  const checks = { af: between(0, 100, 'an adjustment factor percentage'), rd: time, hc: float };
  const names = { af: 'adjustmentFactor', rd: 'removedAt', hc: 'handicap' } as const;
  for (const key of ['af', 'rd', 'hc'] as const) {
    const value = opt(o, key, (x) => nullable(checks[key])(x, `${at}.${key}`));
    if (value !== undefined) out[names[key]] = value;
  }
  return out;
}

/** A `terms` item: the market, the terms it changes and the runners' terms it changes. */
export function validateTerms(o: Obj): TermsItem {
  // The one runner's term a publisher may put beside the market's: taken silently, it would set nothing.
  if ('hc' in o) fail('hc', "is a runner's handicap, not a market's term: give it in r, as r[i].hc");
  const terms: Record<string, unknown> = {};
  for (const [name, key] of TERMS_KEYS) {
    const value = opt(o, key, nullable(TERM_CHECKS[key]));
    if (value !== undefined) terms[name] = value;
  }
  const item: TermsItem = { kind: 'terms', marketId: marketId(o.mid, 'mid'), terms: terms as TermsChange };
  const { lineMin, lineMax } = item.terms;
  if (typeof lineMin === 'number' && typeof lineMax === 'number' && lineMax < lineMin) fail('lmax', `must be at least lmin (${lineMin})`);
  if ('r' in o) item.runners = distinct(list(o.r, 'r', INGEST_LIMITS.runners, runnerTerms), 'r');
  return item;
}

function runnerSettlement(v: unknown, at: string): RunnerSettlement {
  const o = object(v, at, '{rid, st, dh, vf}');
  const out: RunnerSettlement = { runnerId: id(o.rid, `${at}.rid`), status: oneOf(SETTLED_STATUSES)(o.st, `${at}.st`) };
  const deadHeat = opt(o, 'dh', (x) => between(0, 1, 'a dead-heat share')(x, `${at}.dh`));
  if (deadHeat !== undefined) {
    if (deadHeat === 0) fail(`${at}.dh`, 'must be above 0: a runner that shares no place is a LOSER');
    if (out.status !== 'WINNER' && out.status !== 'PLACED') fail(`${at}.dh`, 'is only for a WINNER or PLACED runner');
    out.deadHeat = deadHeat;
  }
  const voidFactor = opt(o, 'vf', (x) => between(0, 1, 'a void factor')(x, `${at}.vf`));
  if (voidFactor !== undefined) out.voidFactor = voidFactor;
  return out;
}

/** A result item's settlement keys (`cert`, `at`, `rs`), or undefined when it has none. */
export function settlement(o: Obj): SettlementChange | undefined {
  const out: SettlementChange = {};
  const certainty = opt(o, 'cert', nullable(oneOf(CERTAINTIES)));
  if (certainty !== undefined) out.certainty = certainty;
  const settledAt = opt(o, 'at', nullable(time));
  if (settledAt !== undefined) out.settledAt = settledAt;
  const runners = opt(o, 'rs', nullable((v, key) => distinct(list(v, key, INGEST_LIMITS.runners, runnerSettlement), key)));
  if (runners !== undefined) out.runners = runners;
  return Object.keys(out).length ? out : undefined;
}
