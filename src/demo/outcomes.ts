/**
 * How a demo fixture ends, worked out once from its event ID and start time
 * so every result of one match tells the same story: a tied cricket match is
 * not also "completed", the bookmaker pays the match-odds winner, goal lines
 * agree with one score, and run counts are ones a match could produce.
 */
import { seeded, seedOf } from '../lib/random.js';
import type { Market, MarketType } from '../refdata/types.js';

type Item = Record<string, unknown>;

interface Story {
  /** Share of the match played when rain ends it, if it does. */
  readonly abandonAt: number | undefined;
  /** A settled result is recalled a while after the end. */
  readonly recall: boolean;
  /** Cricket: level on runs, decided by the super over. */
  readonly tie: boolean;
  /** Index of the winner among a two-sided market's runners (or a race's field, modulo its size). */
  readonly winner: number;
  readonly goals: readonly [number, number];
}

const DRAW = 9000;
const [YES, NO] = ['9001', '9002'];
/** Runs off one ball: dots and singles mostly, a boundary now and then, 5 and 7 only with extras. */
const BALL_RUNS: readonly (readonly [number, number])[] = [[0, 0.34], [1, 0.33], [2, 0.1], [3, 0.02], [4, 0.13], [5, 0.01], [6, 0.06], [7, 0.01]];

/** A soccer side's goals: mostly 0 to 2, rarely more than 4. */
function goals(random: () => number): number {
  let n = 0;
  while (n < 6 && random() < 0.57) n++;
  return n;
}

export function storyOf(eid: number, startTime: string, si: number): Story {
  const random = seeded(seedOf(`${eid}|${startTime}`));
  // Drawn in a fixed order, every draw made whether used or not, so the story never depends on the sport's branches.
  const [rain, at, recall, tie, winner] = [random(), random(), random(), random(), random()];
  return {
    abandonAt: rain < (si === 4 ? 0.08 : 0.03) ? 0.2 + 0.6 * at : undefined,
    recall: recall < 0.15,
    tie: si === 4 && tie < 0.04,
    winner: Math.floor(winner * 1000),
    goals: [goals(random), goals(random)],
  };
}

/** Overs a session counts ("6 Over Runs IND"), or undefined for a player's runs. */
export const overs = (na: string): number | undefined => {
  const m = /\b(\d+) Over/.exec(na);
  return m ? Number(m[1]) : undefined;
};

/**
 * The numbers a line market settles within, which are also the lines it can
 * sensibly trade at: about 5.5 to 10 runs an over, a batter's 0 to 120, a
 * T20 match's two innings, a best-of-three tennis match's 12 to 39 games.
 */
function lineRange(ty: MarketType, na: string): readonly [number, number] | undefined {
  const n = overs(na);
  switch (ty) {
    case 'session':
    case 'odd-even':
    case 'khadometer':
      return n ? [Math.round(5.5 * n), 10 * n] : [0, 120];
    case 'ball-by-ball':
      return [0, 7];
    case 'line-market':
      return /Games/.test(na) ? [16, 39] : [240, 420];
    case 'other-market':
      return /Sixes/.test(na) ? [4, 24] : /Fours/.test(na) ? [14, 44] : /Highest Over/.test(na) ? [12, 30] : [10, 40];
    default:
      return undefined;
  }
}

/** Where a line market opens: the middle half of what it settles within (a ball's line keeps the simulator's own). */
export function openingLine(ty: MarketType, na: string): readonly [number, number] | undefined {
  const range = ty === 'ball-by-ball' ? undefined : lineRange(ty, na);
  if (!range) return undefined;
  const quarter = (range[1] - range[0]) / 4;
  return [Math.round(range[0] + quarter), Math.round(range[1] - quarter)];
}

function runs(m: Market, random: () => number): string {
  if (m.type === 'ball-by-ball') {
    let r = random();
    for (const [value, p] of BALL_RUNS) if ((r -= p) < 0) return String(value);
    return '0';
  }
  const [lo, hi] = lineRange(m.type, m.name) ?? [0, 100];
  return String(lo + Math.floor(random() * (hi - lo + 1)));
}

/** One market's result in this story: a runner ID, a number, back or lay, or void. */
function outcome(m: Market, rids: number[], s: Story, random: () => number): { res: string; ia?: boolean } {
  const winner = rids.includes(DRAW)
    ? (s.goals[0] > s.goals[1] ? rids[0] : s.goals[1] > s.goals[0] ? rids[1] : DRAW)
    : rids[s.winner % Math.max(1, rids.length)];
  switch (m.type) {
    case 'bookmaker':
    case 'bookmaker2':
    case 'winner-market':
      return { res: String(winner) };
    case 'match-odd':
      return { res: String(m.name === 'Match Odds' ? winner : rids[Math.floor(random() * rids.length)]) };
    case 'completed-match':
      return { res: s.tie ? NO : YES };
    case 'tied-match':
      return { res: s.tie ? YES : NO };
    case 'super-over':
      return s.tie ? { res: String(winner) } : { res: 'No super over', ia: true };
    case 'goals': {
      const line = Number(/([\d.]+) Goals/.exec(m.name)?.[1] ?? 2.5);
      return { res: String(s.goals[0] + s.goals[1] > line ? rids[0] : rids[1]) };
    }
    case 'odd-even':
      return { res: Number(runs(m, random)) % 2 ? 'back' : 'lay' };
    case 'khadometer':
      return { res: random() < 0.5 ? 'back' : 'lay' };
    case 'player-race':
      return { res: String(rids[Math.floor(random() * rids.length)]) };
    default:
      return { res: runs(m, random) };
  }
}

/** The result items settling `m` (each head-to-head of a player race) in the story of its fixture. */
export function settle(m: Market, startTime: string, s: Story): Item[] {
  const random = seeded(seedOf(`${m.id}|${startTime}`));
  const parts = m.nested ? m.nested.map((n) => ({ mid: n.id, rids: n.runners.map((r) => r.id) })) : [{ mid: m.id, rids: (m.runners ?? []).map((r) => r.id) }];
  return parts.map((p) => {
    const o = outcome(m, p.rids, s, random);
    return { kind: 'result', mid: p.mid, res: o.res, rt: false, ia: o.ia ?? false };
  });
}
