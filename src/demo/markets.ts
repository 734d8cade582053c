/**
 * Builders of the demo's markets and results, by sport: the shapes each kind
 * of fixture trades, with stable runner IDs, and the item types they build. The set itself is in
 * data.ts.
 */
import { isLineType, type MarketType } from '../refdata/types.js';
import type { WireEvent, WireLeague, WireMarket, WireResult, WireRunner, WireRunnerTerms, WireSport, WireTerms } from '../refdata/wire.js';

/** The demo set's items, in the shapes ingest reads; the fields ingest derives are left out. */
export type DemoItem =
  | ({ kind: 'sport' } & WireSport)
  | ({ kind: 'league' } & WireLeague)
  | ({ kind: 'event' } & Omit<WireEvent, 'le'>) // le is derived from the league's name
  | ({ kind: 'market' } & Omit<WireMarket, 'si'>) // si is derived from the event's sport
  | ({ kind: 'result' } & Omit<WireResult, 'mt'>) // mt is derived from the market's type
  | ({ kind: 'terms'; mid: string } & WireTerms);

export type DemoMarket = Extract<DemoItem, { kind: 'market' }>;
export type DemoResult = Extract<DemoItem, { kind: 'result' }>;
export type DemoTerms = Extract<DemoItem, { kind: 'terms' }>;
type MarketExtra = Partial<Omit<WireMarket, 'mid' | 'eid' | 'na' | 'si' | 'ty'>>;

/**
 * Exchange-style market ID "1.2EEEEENNN" (event suffix, then a number within the event), so the
 * results below can name a market without holding on to the object.
 */
export function marketIdOf(eid: number, n: number): string {
  return `1.2${String(eid % 100_000).padStart(5, '0')}${String(n).padStart(3, '0')}`;
}

// Runner IDs are stable per team or player so a client can follow one across markets.
export const rn = (rid: number, na: string): WireRunner => ({ rid, na });
export const YES = rn(9001, 'Yes');
export const NO = rn(9002, 'No');
export const DRAW = rn(9000, 'The Draw');
export const IND = rn(101, 'India');
const AUS = rn(102, 'Australia');
export const ENG = rn(103, 'England');
export const MI = rn(111, 'Mumbai Indians');
export const CSK = rn(112, 'Chennai Super Kings');
export const RCB = rn(113, 'Royal Challengers Bengaluru');
export const KKR = rn(114, 'Kolkata Knight Riders');
export const SIX = rn(121, 'Sydney Sixers');
export const STA = rn(122, 'Melbourne Stars');

export function market(eid: number, n: number, ty: MarketType, na: string, extra: MarketExtra = {}): DemoMarket {
  return { kind: 'market', mid: marketIdOf(eid, n), eid, na, s: true, go: false, ty, rt: false, ...extra };
}

export const session = (eid: number, n: number, di: number, na: string, extra: MarketExtra = {}): DemoMarket =>
  market(eid, n, 'session', na, { di, ...extra });

const ball = (eid: number, n: number, bl: number, extra: MarketExtra = {}): DemoMarket =>
  market(eid, n, 'ball-by-ball', `${bl} Ball Runs`, { bl, ...extra });

/** A player race groups head-to-heads; its runners live in the nested markets, never in `r`. */
function playerRace(eid: number, n: number, na: string, pairs: WireRunner[][], extra: MarketExtra = {}): DemoMarket {
  const id = marketIdOf(eid, n);
  const m = pairs.map((r, i) => ({ mid: `${id}.${i + 1}`, s: true, go: false, r, if: null }));
  return market(eid, n, 'player-race', na, { m, ...extra });
}

/** What a concluded event's markets look like: settled and no longer trading. */
export function closed(m: DemoMarket): DemoMarket {
  return { ...m, s: false, go: true, ...(m.m ? { m: m.m.map((x) => ({ ...x, s: false, go: true })) } : {}) };
}

/** Match odds (n 1) and bookmaker (n 2): what every cricket fixture trades. */
export function cricketCore(eid: number, a: WireRunner, b: WireRunner, extra: MarketExtra = {}): DemoMarket[] {
  return [
    market(eid, 1, 'match-odd', 'Match Odds', { r: [a, b], ...extra }),
    market(eid, 2, 'bookmaker', 'Bookmaker', { r: [a, b] }),
  ];
}

/** The live showcase fixture: one or more markets of each of the 14 cricket types. */
export function everyCricketType(eid: number): DemoMarket[] {
  const [kohli, head, rohit, marsh] = [rn(4101, 'Virat Kohli'), rn(4102, 'Travis Head'), rn(4103, 'Rohit Sharma'), rn(4104, 'Mitchell Marsh')];
  const [pant, maxwell, bumrah, cummins] = [rn(4105, 'Rishabh Pant'), rn(4106, 'Glenn Maxwell'), rn(4107, 'Jasprit Bumrah'), rn(4108, 'Pat Cummins')];
  const [arshdeep, starc] = [rn(4109, 'Arshdeep Singh'), rn(4110, 'Mitchell Starc')];
  return [
    ...cricketCore(eid, IND, AUS, { if: null }),
    // Suspended while the bookmaker re-prices: an active-looking event with an inactive market.
    market(eid, 3, 'bookmaker2', 'Bookmaker 2', { r: [IND, AUS], s: false }),
    market(eid, 4, 'completed-match', 'Completed Match', { r: [YES, NO] }),
    market(eid, 5, 'tied-match', 'Tied Match', { r: [YES, NO] }),
    market(eid, 6, 'super-over', 'Super Over Winner', { r: [IND, AUS] }),
    market(eid, 7, 'winner-market', 'Tournament Winner', {
      r: [IND, AUS, ENG, rn(104, 'Pakistan'), rn(105, 'South Africa'), rn(106, 'New Zealand')],
    }),
    // The 6-over session has already settled (see results); later ones still trade.
    session(eid, 8, 1, '6 Over Runs IND', { s: false, go: true }),
    session(eid, 9, 2, '10 Over Runs IND'),
    session(eid, 10, 3, '15 Over Runs IND'),
    session(eid, 11, 4, '20 Over Runs IND'),
    session(eid, 12, 5, 'Virat Kohli Runs'),
    market(eid, 13, 'other-market', 'Total Match Fours', { di: 6 }),
    market(eid, 14, 'other-market', 'Highest Over Runs'),
    market(eid, 15, 'odd-even', '6 Over Runs IND Odd', { di: 7, s: false, go: true }),
    market(eid, 16, 'odd-even', '10 Over Runs IND Odd'),
    market(eid, 17, 'khadometer', 'Khadometer 10 Over IND', { di: 8 }),
    market(eid, 18, 'line-market', 'Total Match Runs Line'),
    ball(eid, 19, 7.1, { s: false, go: true }),
    ball(eid, 20, 7.2),
    ball(eid, 21, 7.3),
    ball(eid, 22, 7.4),
    playerRace(eid, 23, 'Top Batter Race', [[kohli, head], [rohit, marsh], [pant, maxwell]], { if: null }),
    playerRace(eid, 24, 'Top Bowler Race', [[bumrah, cummins], [arshdeep, starc]]),
  ];
}

/** Match odds with the draw (n 1), then one over/under market per goal line (n 2...). */
export function soccer(eid: number, home: WireRunner, away: WireRunner, lines: number[]): DemoMarket[] {
  return [
    market(eid, 1, 'match-odd', 'Match Odds', { r: [home, away, DRAW] }),
    ...lines.map((g, i) => market(eid, i + 2, 'goals', `Over/Under ${g} Goals`, {
      r: [rn(9011, `Over ${g} Goals`), rn(9012, `Under ${g} Goals`)],
    })),
  ];
}

/** Match odds (n 1) and set 1 winner (n 2); the games line (n 3) only trades in play. */
export function tennis(eid: number, p1: WireRunner, p2: WireRunner, live = false): DemoMarket[] {
  const ms = [
    market(eid, 1, 'match-odd', 'Match Odds', { r: [p1, p2] }),
    market(eid, 2, 'match-odd', 'Set 1 Winner', { r: [p1, p2] }),
  ];
  return live ? [...ms, market(eid, 3, 'line-market', 'Total Games Line')] : ms;
}

/** Win (n 1) and place (n 2) over the same field; horse rids are 7000 + race * 10 + draw. */
export function race(eid: number, field: string): DemoMarket[] {
  const r = field.split(', ').map((na, i) => rn(7000 + (eid % 100) * 10 + i + 1, na));
  return [market(eid, 1, 'winner-market', 'Win', { r }), market(eid, 2, 'winner-market', 'To Be Placed', { r })];
}

export function result(id: string, res: string, extra: Partial<Pick<WireResult, 'rt' | 'ia'>> = {}): DemoResult {
  return { kind: 'result', mid: id, res, rt: false, ia: false, ...extra };
}


/** Each sport's bet delay in play, in seconds (none before the off). */
export const BET_DELAY: Readonly<Record<number, number>> = { 4: 5, 1: 5, 2: 3, 7: 1 };

/** Where a league's events are, as terms say it: its country, and a race meeting's venue and race type. */
const PLACE: Readonly<Record<number, { cc?: string; ven?: string; race?: string }>> = {
  4001: { cc: 'IN' }, 4002: { cc: 'IN' }, 4003: { cc: 'AU' }, 1001: { cc: 'GB' }, 1002: { cc: 'ES' },
  7001: { cc: 'GB', ven: 'Ascot', race: 'Flat' }, 7002: { cc: 'GB', ven: 'Cheltenham', race: 'Hurdle' },
};

/** Places paid in a race: two up to seven runners, three from eight (the demo model's too). */
const places = (runners: number) => (runners >= 8 ? 3 : 2);

/**
 * A race's reduction factors, percent, in the order of its field: the favourite's first, each
 * by its chance of winning, adding up to 100 (Betfair's way of setting them).
 */
export function reductionFactors(runners: number): number[] {
  const weights = Array.from({ length: runners }, (_, i) => 1 / (i + 2));
  const total = weights.reduce((a, b) => a + b, 0);
  return weights.map((w) => Math.round((1000 * w) / total) / 10);
}

/** A runner withdrawn from a race: which, and when (ms). */
export interface NonRunner {
  rid: number;
  at: number;
}

/**
 * The terms of one of the demo's markets, as an exchange's definition would give them: the bet
 * delay in play, turning in play, the betting type, winners (a place market's places), where,
 * the commission; a line market's bounds; a race's starting prices and each runner's reduction
 * factor, a non-runner removed with its factor and time.
 */
export function termsOf(m: DemoMarket, e: { si: number; li: number; ip: boolean }, nonRunner?: NonRunner): DemoTerms {
  const line = isLineType(m.ty) && !m.r;
  const t: DemoTerms = { kind: 'terms', mid: m.mid, bd: e.ip ? BET_DELAY[e.si] ?? 0 : 0, tip: true, bt: line ? 'LINE' : 'ODDS', ...PLACE[e.li], mbr: 5 };
  if (line) Object.assign(t, { lmin: 0, lmax: 500, lint: 1 });
  else if (m.r) t.nw = m.na === 'To Be Placed' ? places(m.r.length) : 1;
  if (e.si === 7 && m.r) {
    const factors = reductionFactors(m.r.length);
    t.bsp = true;
    t.reg = ['GBR'];
    t.r = m.r.map((r, i): WireRunnerTerms => (r.rid === nonRunner?.rid ? { rid: r.rid, st: 'REMOVED', af: factors[i], rd: nonRunner.at } : { rid: r.rid, st: 'ACTIVE', af: factors[i] }));
  }
  return t;
}
