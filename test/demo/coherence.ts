/**
 * The tests' own rules for whether one fixture's results could all be true
 * together, and whether its prices could all be quoted together, written from
 * how the sports and their markets work rather than from the demo's code.
 * Not a test file itself.
 */
import type { Market } from '../../src/refdata/types.js';

type Obj = Record<string, unknown>;
const [YES, NO, DRAW] = ['9001', '9002', '9000'];

/** Problems, as text, with the results (by market ID) of one concluded fixture's markets. */
export function incoherent(markets: Market[], results: Map<string, Obj>): string[] {
  const res = (m: Market | undefined) => (m ? String(results.get(m.id)?.res) : undefined);
  const byType = (ty: string) => markets.filter((m) => m.type === ty);
  const bad: string[] = [];
  const settled = markets.map((m) => results.get(m.id)).filter(Boolean) as Obj[];
  if (settled.length && settled.every((r) => r.ia === true)) {
    if (!settled.every((r) => r.res === 'Abandoned')) bad.push('an abandoned fixture with a market settled as played');
    return bad;
  }
  const odds = markets.find((m) => m.name === 'Match Odds');
  if (odds && !(odds.runners ?? []).some((r) => String(r.id) === res(odds))) bad.push(`match odds settled on ${res(odds)}, no runner of it`);
  for (const bm of [...byType('bookmaker'), ...byType('bookmaker2')]) if (res(bm) !== res(odds)) bad.push(`${bm.name} ${res(bm)} but match odds ${res(odds)}`);
  const [completed, tied, superOver] = [byType('completed-match')[0], byType('tied-match')[0], byType('super-over')[0]];
  if (completed && tied && [res(completed), res(tied)].filter((r) => r === YES).length !== 1) bad.push(`completed ${res(completed)} and tied ${res(tied)}: exactly one is Yes`);
  if (tied && superOver) {
    const tie = res(tied) === YES;
    if (tie && res(superOver) !== res(odds)) bad.push(`a tie whose super over ${res(superOver)} is not the match winner ${res(odds)}`);
    if (!tie && results.get(superOver.id)?.ia !== true) bad.push(`no tie, yet the super over settled on ${res(superOver)}`);
  }
  if (tied && res(tied) !== YES && res(tied) !== NO) bad.push(`tied match settled on ${res(tied)}`);
  for (const m of byType('session')) {
    const n = Number(/(\d+) Over/.exec(m.name)?.[1] ?? NaN);
    const runs = Number(res(m));
    // 3 to 15 an over; a batter's runs 0 to 200.
    const [lo, hi] = Number.isNaN(n) ? [0, 200] : [3 * n, 15 * n];
    if (!/^\d+$/.test(res(m)!) || runs < lo || runs > hi) bad.push(`${m.name} settled at ${res(m)}`);
  }
  // Six off the bat, one more with a no-ball.
  for (const m of byType('ball-by-ball')) if (!/^[0-7]$/.test(res(m)!)) bad.push(`${m.name} settled at ${res(m)}`);
  for (const m of [...byType('odd-even'), ...byType('khadometer')]) if (!['back', 'lay'].includes(res(m)!)) bad.push(`${m.name} settled on ${res(m)}`);
  for (const m of byType('line-market')) {
    const n = Number(res(m));
    const [lo, hi] = /Games/.test(m.name) ? [12, 39] : [100, 500];
    if (!/^\d+$/.test(res(m)!) || n < lo || n > hi) bad.push(`${m.name} settled at ${res(m)}`);
  }
  const goals = byType('goals').map((m) => ({ line: Number(/([\d.]+) Goals/.exec(m.name)![1]), over: res(m) === String(m.runners![0].id) })).sort((a, b) => a.line - b.line);
  for (let i = 1; i < goals.length; i++) if (goals[i].over && !goals[i - 1].over) bad.push(`over ${goals[i].line} goals but under ${goals[i - 1].line}`);
  // With a line at every half goal from 0.5, the overs count the goals: a draw has an even number, a win at least one.
  if (goals.length && goals.every((g, i) => g.line === i + 0.5)) {
    const total = goals.filter((g) => g.over).length;
    if (total < goals.length && res(odds) === DRAW && total % 2) bad.push(`a draw with ${total} goals`);
    if (res(odds) !== DRAW && total === 0) bad.push('a win without a goal');
  }
  const [win, place] = [markets.find((m) => m.name === 'Win'), markets.find((m) => m.name === 'To Be Placed')];
  if (win && place && res(win) !== res(place)) bad.push(`won by ${res(win)}, not placed: ${res(place)}`);
  return bad;
}

/** What one market is, for its prices: its type, its name and its runners in order. */
export interface PricedMarket {
  readonly mid: string;
  readonly eventId: number;
  readonly type: string;
  readonly name: string;
  readonly rids: readonly number[];
}

interface Quote {
  readonly st: string;
  readonly r: readonly { rid: number; b: readonly (readonly [number, number])[]; l: readonly (readonly [number, number])[] }[];
}

/**
 * How far past 100% (or past the places paid, on a place market) the best backs' implied
 * chances may add up: the exchange's own markets by tick rounding alone, a bookmaker by its
 * margin too. The best lays' add up to at most 100%: laying every runner never wins for sure.
 */
export const OVERROUND: Readonly<Record<string, number>> = { exchange: 0.06, bookmaker: 0.09, bookmaker2: 0.11 };
/** The same outcome's best back prices, across the markets that price it, within this ratio. */
export const SAME_OUTCOME_BAND = 1.12;

/** Places paid in a race: two up to seven runners, three from eight (the usual place terms). */
const places = (runners: number) => (runners >= 8 ? 3 : 2);

/**
 * Problems, as text, with the newest quotes of one fixture's open markets: each book's overround,
 * the same outcome's price across markets (match odds, bookmakers and super over; completed and
 * tied), and the order complementary markets must keep (goal lines, first set and match, place and win).
 */
export function priceProblems(markets: readonly PricedMarket[], quotes: ReadonlyMap<string, Quote>): string[] {
  const bad: string[] = [];
  const open = markets.filter((m) => m.rids.length && quotes.get(m.mid)?.st === 'OPEN');
  const back = (m: PricedMarket, rid: number) => quotes.get(m.mid)!.r.find((r) => r.rid === rid)?.b[0]?.[0];
  for (const m of open) {
    const r = quotes.get(m.mid)!.r;
    if (r.some((x) => !x.b.length || !x.l.length)) {
      bad.push(`${m.name} (${m.mid}): a runner without a best back and lay`);
      continue;
    }
    const paid = m.name === 'To Be Placed' ? places(m.rids.length) : 1;
    const backBook = r.reduce((s, x) => s + 1 / x.b[0]![0], 0) / paid;
    const layBook = r.reduce((s, x) => s + 1 / x.l[0]![0], 0) / paid;
    const most = 1 + (OVERROUND[m.type] ?? OVERROUND.exchange!);
    if (backBook < 1 || backBook > most) bad.push(`${m.name} (${m.mid}): back book ${(100 * backBook).toFixed(1)}%, outside 100% to ${(100 * most).toFixed(0)}%`);
    if (layBook > 1) bad.push(`${m.name} (${m.mid}): lay book ${(100 * layBook).toFixed(1)}%, over 100%`);
  }
  // One outcome, several markets: who wins the match, and whether it ends level.
  const outcomes = new Map<string, { name: string; price: number }[]>();
  const add = (key: string, m: PricedMarket, rid: number) => {
    const price = back(m, rid);
    if (price !== undefined) outcomes.set(key, [...(outcomes.get(key) ?? []), { name: m.name, price }]);
  };
  for (const m of open) {
    if (['bookmaker', 'bookmaker2', 'super-over'].includes(m.type) || m.name === 'Match Odds') for (const rid of m.rids) add(`${rid} wins`, m, rid);
    if (m.type === 'completed-match') { add('a tie', m, Number(NO)); add('no tie', m, Number(YES)); }
    if (m.type === 'tied-match') { add('a tie', m, Number(YES)); add('no tie', m, Number(NO)); }
  }
  for (const [outcome, prices] of outcomes) {
    const [lo, hi] = [Math.min(...prices.map((p) => p.price)), Math.max(...prices.map((p) => p.price))];
    if (hi / lo > SAME_OUTCOME_BAND) bad.push(`${outcome}: ${prices.map((p) => `${p.name} ${p.price.toFixed(2)}`).join(', ')}`);
  }
  // More goals are less likely: Over shortens and Under lengthens as the line falls.
  const lines = open.filter((m) => m.type === 'goals').map((m) => ({ line: Number(/([\d.]+) Goals/.exec(m.name)![1]), over: back(m, m.rids[0]!)!, under: back(m, m.rids[1]!)! })).sort((a, b) => a.line - b.line);
  for (let i = 1; i < lines.length; i++) {
    const [a, b] = [lines[i - 1]!, lines[i]!];
    if (b.over < a.over || b.under > a.under) bad.push(`Over ${a.line} at ${a.over.toFixed(2)} but Over ${b.line} at ${b.over.toFixed(2)}; Under ${a.under.toFixed(2)} and ${b.under.toFixed(2)}`);
  }
  // A best-of-three match's favourite is the first set's too, at a price nearer evens.
  const [match, set] = [open.find((m) => m.name === 'Match Odds' && m.rids.length === 2), open.find((m) => m.name === 'Set 1 Winner')];
  if (match && set) {
    const fav = match.rids.reduce((a, b) => (back(match, a)! <= back(match, b)! ? a : b));
    if (back(set, fav)! < back(match, fav)! || back(set, fav)! > 2.2) bad.push(`match favourite ${fav} at ${back(match, fav)} in the match but ${back(set, fav)} for the first set`);
  }
  // Placing is never less likely than winning.
  const [win, place] = [open.find((m) => m.name === 'Win'), open.find((m) => m.name === 'To Be Placed')];
  if (win && place) for (const rid of win.rids) if (back(place, rid)! > back(win, rid)!) bad.push(`runner ${rid} to be placed at ${back(place, rid)}, longer than to win at ${back(win, rid)}`);
  return bad;
}
