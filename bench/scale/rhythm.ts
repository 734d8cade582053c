/**
 * bench:scale's feed rhythm, drawn from the exchange adapter's recorded markets: the recordings
 * its tests replay (test/exchange/fixtures.ts, a seeded generator of Betfair stream files: a
 * football match odds market, a race's win and place markets sharing messages, a tennis market on
 * the best-offer ladders). From each recording, per market: the time between its changes (`pt`
 * of successive messages that move its prices), how many price levels each change moves (entries
 * of atb/atl, or of the best-offer ladders), and which markets change in the same message (the
 * race's two, in the same instant): all the burstiness the recordings hold.
 *
 * Each event of the bench's market set replays four recordings, each from its own random point:
 * market 1 the match odds, 2 and 3 the race's win and place, 4 the tennis, 5 a match odds of
 * another seed. Recorded time runs `rate` / (the recordings' own rate over all 200 markets) times
 * as fast as the clock, so the markets together change `rate` times a second with the recorded
 * gaps, bursts and sizes, scaled.
 */
import { seeded } from '../../src/lib/random.js';
import { matchOdds, race, tennis } from '../../test/exchange/fixtures.js';

type Message = { pt: number; mc: Record<string, unknown>[] };
type RunnerChange = Record<string, unknown[] | undefined>;

/** One message of a recording that moved prices: the recorded time since the one before, and each market's levels moved. */
interface Change {
  gapMs: number;
  markets: { slot: number; levels: number }[];
}

interface Recording {
  markets: number;
  changes: Change[];
  /** Recorded milliseconds from the first change to the last. */
  spanMs: number;
}

const LADDERS = ['atb', 'atl', 'batb', 'batl', 'bdatb', 'bdatl'];

/** The price-moving messages of a recording; a message that only changes a definition lets time pass. */
export function changesOf(messages: Message[]): Recording {
  const slots = new Map<string, number>();
  const changes: Change[] = [];
  let last: number | undefined;
  for (const m of messages) {
    const markets = m.mc.flatMap((mc) => {
      const levels = ((mc.rc ?? []) as RunnerChange[]).reduce((a, rc) => a + LADDERS.reduce((b, k) => b + (rc[k]?.length ?? 0), 0), 0);
      if (!levels) return [];
      const id = String(mc.id);
      if (!slots.has(id)) slots.set(id, slots.size);
      return [{ slot: slots.get(id)!, levels }];
    });
    if (!markets.length) continue;
    changes.push({ gapMs: last === undefined ? 0 : m.pt - last, markets });
    last = m.pt;
  }
  return { markets: slots.size, changes, spanMs: changes.reduce((a, c) => a + c.gapMs, 0) };
}

const STEPS = 3000;
/** The recordings each event replays, and which of its five markets each recording's markets drive. */
const RECORDINGS: { rec: Recording; slots: number[] }[] = [
  { rec: changesOf(matchOdds(STEPS, 1) as Message[]), slots: [0] },
  { rec: changesOf(race(STEPS, 2) as Message[]), slots: [1, 2] },
  { rec: changesOf(tennis(STEPS, 3) as Message[]), slots: [3] },
  { rec: changesOf(matchOdds(STEPS, 4) as Message[]), slots: [4] },
];

/** Market changes a second over `events` events at the recordings' own pace. */
export function recordedRate(events: number): number {
  return events * RECORDINGS.reduce((a, { rec }) => a + (1000 * rec.changes.reduce((n, c) => n + c.markets.length, 0)) / rec.spanMs, 0);
}

/** What the recordings hold, for the report: per market, gaps between changes and levels per change (p50, p90), and bursts. */
export function recordedShape(): Record<string, unknown> {
  const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];
  const gaps: number[] = [];
  const levels: number[] = [];
  let shared = 0;
  let messages = 0;
  for (const { rec } of RECORDINGS) {
    const lastAt = new Map<number, number>();
    let t = 0;
    for (const c of rec.changes) {
      t += c.gapMs;
      messages++;
      if (c.markets.length > 1) shared++;
      for (const m of c.markets) {
        if (lastAt.has(m.slot)) gaps.push(t - lastAt.get(m.slot)!);
        lastAt.set(m.slot, t);
        levels.push(m.levels);
      }
    }
  }
  return {
    gapMsP10: q(gaps, 0.1), gapMsP50: q(gaps, 0.5), gapMsP90: q(gaps, 0.9), gapsUnder50ms: gaps.filter((g) => g < 50).length / gaps.length,
    levelsP50: q(levels, 0.5), levelsP90: q(levels, 0.9), messagesMovingTwoMarkets: shared / messages,
  };
}

interface Stream {
  rec: Recording;
  /** Indexes into the market list, one per recorded market. */
  markets: number[];
  at: number;
  /** Recorded time of its next change. */
  due: number;
}

/** Every event's recordings, each at its own point; `advance` moves recorded time on and says which markets changed. */
export class Rhythm {
  private readonly streams: Stream[] = [];
  private now = 0;
  private readonly natural: number;

  /** `eventMarkets[e]`: the indexes of event e's five markets in the market list. */
  constructor(eventMarkets: number[][], seed = 23) {
    const rand = seeded(seed);
    for (const five of eventMarkets) {
      for (const { rec, slots } of RECORDINGS) {
        const at = Math.floor(rand() * rec.changes.length);
        this.streams.push({ rec, markets: slots.map((s) => five[s]), at, due: rand() * rec.changes[at].gapMs });
      }
    }
    this.natural = recordedRate(eventMarkets.length);
  }

  /** Recorded time moved on by `ms` of the clock at `rate` changes a second: the changes that fell in it, as [market index, levels moved]. */
  advance(ms: number, rate: number): [number, number][] {
    this.now += (ms * rate) / this.natural;
    const out: [number, number][] = [];
    for (const s of this.streams) {
      while (s.due <= this.now) {
        for (const m of s.rec.changes[s.at].markets) out.push([s.markets[m.slot], m.levels]);
        s.at = (s.at + 1) % s.rec.changes.length;
        // Past the end the recording starts again, after its mean gap.
        s.due += s.at === 0 ? s.rec.spanMs / s.rec.changes.length : s.rec.changes[s.at].gapMs;
      }
    }
    return out;
  }
}
