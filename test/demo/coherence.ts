/**
 * The tests' own rules for whether one fixture's results could all be true
 * together, written from how the sports work rather than from the demo's code.
 * Not a test file itself.
 */
import type { Market } from '../../src/refdata/types.js';

type Obj = Record<string, unknown>;
const [YES, NO, DRAW] = ['9001', '9002', '9000'];

/** Problems, as text, with the results (by market ID) of one concluded fixture's markets. */
export function incoherent(markets: Market[], results: Map<string, Obj>): string[] {
  const res = (m: Market | undefined) => (m ? String(results.get(m.mid)?.res) : undefined);
  const byType = (ty: string) => markets.filter((m) => m.ty === ty);
  const bad: string[] = [];
  const settled = markets.map((m) => results.get(m.mid)).filter(Boolean) as Obj[];
  if (settled.length && settled.every((r) => r.ia === true)) {
    if (!settled.every((r) => r.res === 'Abandoned')) bad.push('an abandoned fixture with a market settled as played');
    return bad;
  }
  const odds = markets.find((m) => m.na === 'Match Odds');
  if (odds && !(odds.r ?? []).some((r) => String(r.rid) === res(odds))) bad.push(`match odds settled on ${res(odds)}, no runner of it`);
  for (const bm of [...byType('bookmaker'), ...byType('bookmaker2')]) if (res(bm) !== res(odds)) bad.push(`${bm.na} ${res(bm)} but match odds ${res(odds)}`);
  const [completed, tied, superOver] = [byType('completed-match')[0], byType('tied-match')[0], byType('super-over')[0]];
  if (completed && tied && [res(completed), res(tied)].filter((r) => r === YES).length !== 1) bad.push(`completed ${res(completed)} and tied ${res(tied)}: exactly one is Yes`);
  if (tied && superOver) {
    const tie = res(tied) === YES;
    if (tie && res(superOver) !== res(odds)) bad.push(`a tie whose super over ${res(superOver)} is not the match winner ${res(odds)}`);
    if (!tie && results.get(superOver.mid)?.ia !== true) bad.push(`no tie, yet the super over settled on ${res(superOver)}`);
  }
  if (tied && res(tied) !== YES && res(tied) !== NO) bad.push(`tied match settled on ${res(tied)}`);
  for (const m of byType('session')) {
    const n = Number(/(\d+) Over/.exec(m.na)?.[1] ?? NaN);
    const runs = Number(res(m));
    // 3 to 15 an over; a batter's runs 0 to 200.
    const [lo, hi] = Number.isNaN(n) ? [0, 200] : [3 * n, 15 * n];
    if (!/^\d+$/.test(res(m)!) || runs < lo || runs > hi) bad.push(`${m.na} settled at ${res(m)}`);
  }
  // Six off the bat, one more with a no-ball.
  for (const m of byType('ball-by-ball')) if (!/^[0-7]$/.test(res(m)!)) bad.push(`${m.na} settled at ${res(m)}`);
  for (const m of [...byType('odd-even'), ...byType('khadometer')]) if (!['back', 'lay'].includes(res(m)!)) bad.push(`${m.na} settled on ${res(m)}`);
  for (const m of byType('line-market')) {
    const n = Number(res(m));
    const [lo, hi] = /Games/.test(m.na) ? [12, 39] : [100, 500];
    if (!/^\d+$/.test(res(m)!) || n < lo || n > hi) bad.push(`${m.na} settled at ${res(m)}`);
  }
  const goals = byType('goals').map((m) => ({ line: Number(/([\d.]+) Goals/.exec(m.na)![1]), over: res(m) === String(m.r![0].rid) })).sort((a, b) => a.line - b.line);
  for (let i = 1; i < goals.length; i++) if (goals[i].over && !goals[i - 1].over) bad.push(`over ${goals[i].line} goals but under ${goals[i - 1].line}`);
  // With a line at every half goal from 0.5, the overs count the goals: a draw has an even number, a win at least one.
  if (goals.length && goals.every((g, i) => g.line === i + 0.5)) {
    const total = goals.filter((g) => g.over).length;
    if (total < goals.length && res(odds) === DRAW && total % 2) bad.push(`a draw with ${total} goals`);
    if (res(odds) !== DRAW && total === 0) bad.push('a win without a goal');
  }
  const [win, place] = [markets.find((m) => m.na === 'Win'), markets.find((m) => m.na === 'To Be Placed')];
  if (win && place && res(win) !== res(place)) bad.push(`won by ${res(win)}, not placed: ${res(place)}`);
  return bad;
}
