/**
 * A betting day in the exchange's stream forms, of our own making (no recorded data), for the
 * terms of a bet: a cricket match odds market whose bet delay goes from 0 to 5 as it turns in
 * play; a race's place market (three places, BSP) whose runners' adjustment factors move
 * through the day, one runner removed mid-market with its factor and removal time, settled with
 * three winners; the race's win market settled in a dead heat; and a soccer market settled, its
 * settlement rolled back as it reopens, and settled again. Beside it, what a subscriber must hold
 * at each definition, written from the exchange's documented fields alone.
 */
import type { Test } from 'tap';
import { Clock, MarketSim, definition } from './fixtures.js';
import { seeded } from '../helpers/random.js';
import type { Client } from '../helpers/ws.js';
import type { MarketStateMessage, ResultMessage } from '../../src/odds/messages.js';

type Obj = Record<string, any>;

export const CRICKET = '1.250000001';
export const PLACE = '1.250000102';
export const WIN = '1.250000101';
export const ROLLBACK = '1.250000201';
export const DAY_MARKETS = [CRICKET, PLACE, WIN, ROLLBACK];
/** Their events: a subscriber by event takes the markets as they are created, and a market reopened after it concluded. */
export const DAY_EVENTS = [35000001, 35000101, 35000201];
const SETTLED = Date.parse('2026-05-01T16:00:00.000Z');

/** Factors as the exchange sets them before the off, then as it re-forms them after the non-runner, then moved again near the off. */
const FACTORS = [
  [26.285, 21.687, 13.613, 11.2, 9.05, 7.4, 6.1, 4.66],
  [28.001, 23.102, 13.613, 12.5, 10.3, 6.2, 4.1, 2.019],
  [30.012, 24.4, 13.613, 11.9, 9.9, 5.9, 2.75, 2.019],
];
const HORSES = ['Quiet Harbour', 'Red Lantern', 'Sea Glass', 'North Wind', 'Copper Kettle', 'Paper Moon', 'Blue Fern', 'Last Orders'];
export const REMOVED_AT = '2026-05-01T13:12:40.000Z';

function withFactors(m: MarketSim, set: number[], changes: Obj = {}): Obj {
  return m.define(changes, undefined, (rd, i) => ({ ...rd, adjustmentFactor: set[i] }));
}

/** The day's messages in the historic file format (op, clk, pt, mc), each market's definitions in order. */
export function bettingDay(steps = 6, seed = 7): Obj[] {
  const rand = seeded(seed);
  const clock = new Clock(rand);
  const cricket = new MarketSim(CRICKET, definition('4', '35000001', 'MATCH_ODDS', 'Match Odds', 'Harbour XI v Mill XI'), ['Harbour XI', 'Mill XI'], 61001, 'full', rand, { runner: true, market: true });
  const place = new MarketSim(PLACE, { ...definition('7', '35000101', 'PLACE', 'To Be Placed', 'Ludlow 1st May', 3), bspMarket: true, venue: 'Ludlow', raceType: 'Flat' }, HORSES, 67001, 'full', rand, { runner: false, market: false });
  const win = new MarketSim(WIN, { ...definition('7', '35000101', 'WIN', '2m Hcap', 'Ludlow 1st May'), bspMarket: true, venue: 'Ludlow', raceType: 'Flat' }, HORSES, 67001, 'full', rand, { runner: false, market: false });
  const soccer = new MarketSim(ROLLBACK, definition('1', '35000201', 'MATCH_ODDS', 'Match Odds', 'Harbour Town v Mill Rovers'), ['Harbour Town', 'Mill Rovers', 'The Draw'], 64001, 'full', rand, { runner: true, market: true });
  const all = [cricket, place, win, soccer];
  withFactors(place, FACTORS[0]);
  withFactors(win, FACTORS[0]);
  const out: Obj[] = [clock.message(all.map((m) => m.image(true)))];
  const trade = () => {
    for (let i = 0; i < steps; i++) out.push(clock.message([all[i % all.length].step()]));
  };
  trade();
  out.push(clock.message([place.remove(2, REMOVED_AT), win.remove(2, REMOVED_AT)]));
  trade();
  out.push(clock.message([withFactors(place, FACTORS[1]), withFactors(win, FACTORS[1])]));
  out.push(clock.message([cricket.define({ inPlay: true, betDelay: 5 })]));
  trade();
  out.push(clock.message([withFactors(place, FACTORS[2]), withFactors(win, FACTORS[2])]));
  out.push(clock.message([soccer.define({ inPlay: true, betDelay: 5 })]));
  trade();
  out.push(clock.message([place.define({ inPlay: true, betDelay: 1, status: 'SUSPENDED' }), win.define({ inPlay: true, betDelay: 1, status: 'SUSPENDED' })]));
  out.push(clock.message([place.settle([0, 3, 5]), win.settle([0, 3])]));
  out.push(clock.message([cricket.define({ status: 'SUSPENDED' })]), clock.message([cricket.settle([1])]));
  out.push(clock.message([soccer.define({ status: 'SUSPENDED' })]), clock.message([soccer.settle([0])]));
  // Settled in error: reopened (every runner active again), then settled with the right winner.
  out.push(clock.message([soccer.define({ status: 'OPEN', complete: true, settledTime: undefined }, () => 'ACTIVE')]));
  out.push(clock.message([soccer.define({ status: 'SUSPENDED' })]), clock.message([soccer.settle([1])]));
  return out;
}

/** Each market's definitions, in the order the day sends them. */
export function definitionsOf(messages: Obj[]): Map<string, Obj[]> {
  const out = new Map<string, Obj[]>();
  for (const msg of messages) for (const mc of msg.mc ?? []) if (mc.marketDefinition) out.set(mc.id, [...(out.get(mc.id) ?? []), mc.marketDefinition]);
  return out;
}

const time = (iso: string | undefined): number | undefined => (iso === undefined ? undefined : Date.parse(iso));

/**
 * The terms a subscriber must hold under a definition, read from the exchange's documented
 * fields: betDelay, turnInPlayEnabled, suspendTime, bettingType, numberOfWinners, eachWayDivisor,
 * bspMarket, countryCode, venue, raceType, marketBaseRate, regulators, the line bounds, and each
 * runner's status, adjustmentFactor, removalDate and hc, runners by sortPriority.
 */
export function termsOf(def: Obj): Obj {
  const pairs: [string, unknown][] = [
    ['bd', def.betDelay], ['tip', def.turnInPlayEnabled], ['sus', time(def.suspendTime)], ['bt', def.bettingType], ['nw', def.numberOfWinners],
    ['ewd', def.eachWayDivisor], ['bsp', def.bspMarket], ['cc', def.countryCode], ['ven', def.venue], ['race', def.raceType], ['mbr', def.marketBaseRate],
    ['reg', def.regulators], ['lmin', def.lineMinUnit], ['lmax', def.lineMaxUnit], ['lint', def.lineInterval],
  ];
  const out: Obj = Object.fromEntries(pairs.filter(([, v]) => v !== undefined));
  out.r = [...def.runners].sort((a: Obj, b: Obj) => a.sortPriority - b.sortPriority).map((r: Obj) => {
    const x: Obj = { rid: r.id, st: r.status === 'REMOVED_VACANT' ? 'REMOVED' : r.status };
    if (r.adjustmentFactor !== undefined) x.af = r.adjustmentFactor;
    if (r.removalDate !== undefined) x.rd = time(r.removalDate);
    if (r.hc !== undefined) x.hc = r.hc;
    return x;
  });
  return out;
}

/** A sequence with each run of equal values (by JSON) kept once. */
export function distinct<T>(xs: T[]): T[] {
  return xs.filter((x, i) => i === 0 || JSON.stringify(x) !== JSON.stringify(xs[i - 1]));
}

/** What a subscriber held of each market's terms, in the order it was told. */
const heldTerms = (c: Client, mid: string) => distinct(c.frames.filter((f): f is MarketStateMessage => f.op === 'market' && f.mid === mid && !!f.terms).map((f) => f.terms!));
const results = (c: Client, mid: string) => c.frames.filter((f): f is ResultMessage => f.op === 'result' && f.mid === mid);

/**
 * Once the day has been published: the subscriber (by the day's events) held, market by market,
 * the terms of each definition in turn, and each settlement as the exchange settled it.
 */
export async function heldAsTheExchangeSaid(t: Test, s: Client): Promise<void> {
  const definitions = definitionsOf(bettingDay());
  await s.next((f) => f.op === 'result' && f.mid === ROLLBACK && f.res === '64002', 10_000);
  await s.settled();
  for (const mid of DAY_MARKETS) {
    t.same(heldTerms(s, mid), distinct(definitions.get(mid)!.map(termsOf)), `${s.format} ${mid}: the terms of each definition, in turn`);
  }
  t.same(heldTerms(s, CRICKET).map((x) => x.bd), [0, 5, 5], `${s.format}: the cricket market's bet delay, 0, then 5 in play and as it settles`);
  t.same(heldTerms(s, PLACE).slice(0, 4).map((x) => x.r!.map((r) => r.af)), [
    [26.285, 21.687, 13.613, 11.2, 9.05, 7.4, 6.1, 4.66], [26.285, 21.687, 13.613, 11.2, 9.05, 7.4, 6.1, 4.66],
    [28.001, 23.102, 13.613, 12.5, 10.3, 6.2, 4.1, 2.019], [30.012, 24.4, 13.613, 11.9, 9.9, 5.9, 2.75, 2.019],
  ], `${s.format}: factors as set, kept as the runner was removed, then re-formed twice`);
  const rs = (winners: number[], dh?: number) => [67001, 67002, 67003, 67004, 67005, 67006, 67007, 67008].map((rid, i) =>
    (i === 2 ? { rid, st: 'REMOVED', vf: 1 } : winners.includes(i) ? { rid, st: 'WINNER', ...(dh ? { dh } : {}) } : { rid, st: 'LOSER' }));
  t.same(results(s, PLACE), [{ op: 'result', mid: PLACE, mt: 'other-market', res: '67001,67004,67006', rt: false, ia: false, cert: 'confirmed', at: SETTLED, rs: rs([0, 3, 5]) }],
    `${s.format}: the place market, three winners, the non-runner void`);
  t.same(results(s, WIN), [{ op: 'result', mid: WIN, mt: 'winner-market', res: '67001,67004', rt: false, ia: false, cert: 'confirmed', at: SETTLED, rs: rs([0, 3], 0.5) }],
    `${s.format}: the win market, a dead heat for first: half each`);
  t.same(results(s, ROLLBACK).map((x) => [x.res, x.rt]), [['64001', false], ['64001', true], ['64002', false]], `${s.format}: settled, rolled back as it reopened, settled again`);
}
