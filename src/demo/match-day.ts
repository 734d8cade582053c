import type { Ingest } from '../ingest/ingest.js';
import { errorFields, type Logger } from '../log.js';
import { seeded, seedOf } from '../lib/random.js';
import type { ReadModel } from '../refdata/model.js';
import type { Event, Market } from '../refdata/types.js';
import { FEATURED, SLOTS, TIMING, drawFixture, fixtureMarkets, liveTvFor, type Slot } from './fixtures.js';
import { overs, settle, storyOf } from './outcomes.js';
import { demoItems } from './data.js';
import { BET_DELAY, marketIdOf, termsOf, type DemoMarket, type DemoResult } from './markets.js';

type Item = Record<string, unknown>;
const MINUTE = 60_000;
/** Share of steps that suspend one in-play market; it opens again at the next step. */
const P_SUSPEND = 0.3;
/** A recalled result is recalled this long after the match ends. */
const RECALL_AFTER_MIN = 20;
/** A T20 innings is about this share of the match, so a session of n overs settles at n / 20 of it. */
const INNINGS_SHARE = 0.45;

interface MatchDayOptions {
  model: ReadModel;
  ingest: Ingest;
  log: Logger;
  intervalMs?: number;
  random?: () => number;
  /** The demo's clock; a test drives a simulated day through it. */
  now?: () => number;
  /** Markets another publisher created or feeds: neither they nor their events are touched. */
  theirs?: (mid: string) => boolean;
}

/**
 * Runs the demo's match day by the clock, one ingest batch per step, as a
 * real publisher would: each fixture slot kicks off at its start time,
 * settles its sessions as the overs pass, concludes with results that agree
 * with each other (or is rained off), and is listed again as the slot's next
 * fixture once its results have been up a while. Featured events stay in
 * play; any that is not (data from an earlier version) is set back to its
 * demo state. Markets in play suspend briefly now and then.
 */
export class MatchDay {
  private timer: NodeJS.Timeout | undefined;
  private readonly random: () => number;
  private readonly now: () => number;
  private busy = false;
  /** The reason steps are being refused, logged once until they are accepted again. */
  private refused: string | undefined;

  constructor(private readonly opts: MatchDayOptions) {
    this.random = opts.random ?? Math.random;
    this.now = opts.now ?? Date.now;
  }

  start(): void {
    this.timer ??= setInterval(() => void this.tick(), this.opts.intervalMs ?? 5000);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private async tick(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      await this.step();
      if (this.refused) this.opts.log.info('demo lifecycle steps accepted again');
      this.refused = undefined;
    } catch (err) {
      const why = errorFields(err);
      if (why.err !== this.refused) this.opts.log.warn('demo lifecycle step refused; trying again each step', why);
      this.refused = String(why.err);
    } finally {
      this.busy = false;
    }
  }

  /** Takes one step at the clock's time and returns the batch it ingested (empty when nothing was due). */
  async step(): Promise<Item[]> {
    const { model } = this.opts;
    const now = this.now();
    const theirs = this.fedEvents();
    const markets = [...model.allMarkets()].filter((m) => !theirs.has(m.eventId));
    const of = (eid: number) => markets.filter((m) => m.eventId === eid);
    const ours = (eid: number) => (theirs.has(eid) ? undefined : model.event(eid));
    const live = new Set([...FEATURED, ...SLOTS.map((s) => s.eid)].filter((eid) => ours(eid)?.inPlay && !ours(eid)?.concluded));
    const batch: Item[] = markets.filter((m) => live.has(m.eventId) && !m.concluded && !m.isActive).map((m) => ({ kind: 'market', mid: m.id, s: true }));
    for (const eid of FEATURED) if (!live.has(eid) && ours(eid)) batch.push(...revive(eid));
    for (const slot of SLOTS) {
      const e = ours(slot.eid);
      if (e) batch.push(...this.advance(slot, e, of(slot.eid), now));
    }
    const touched = new Set(batch.map((i) => i.mid));
    const steady = markets.filter((m) => live.has(m.eventId) && m.isActive && !m.concluded && !touched.has(m.id));
    if (steady.length && this.random() < P_SUSPEND) batch.push({ kind: 'market', mid: steady[Math.floor(this.random() * steady.length)].id, s: false });
    if (batch.length) await this.opts.ingest.accept(this.opts.ingest.read(batch), { from: 'simulator' });
    return batch;
  }

  /** Events holding a market another publisher created or feeds: the step leaves them and all their markets alone. */
  private fedEvents(): Set<number> {
    const fed = this.opts.theirs;
    const theirs = new Set<number>();
    if (!fed) return theirs;
    for (const m of this.opts.model.allMarkets()) if (fed(m.id) || (m.nested ?? []).some((n) => fed(n.id))) theirs.add(m.eventId);
    return theirs;
  }

  /** What is due for one slot's fixture at `now`. */
  private advance(slot: Slot, e: Event, markets: Market[], now: number): Item[] {
    const timing = TIMING[slot.si];
    const start = Date.parse(e.startTime);
    const end = start + timing.inPlay * MINUTE;
    const story = storyOf(e.id, e.startTime, slot.si);
    const open = markets.filter((m) => !m.concluded);
    if (!e.inPlay && !e.concluded) {
      // The off: in play, every market trading, bets held for the sport's delay.
      return now < start ? [] : [
        { kind: 'event', eid: e.id, ip: true }, ...open.filter((m) => !m.isActive).map((m) => ({ kind: 'market', mid: m.id, s: true })),
        ...open.map((m) => ({ kind: 'terms', mid: m.id, bd: BET_DELAY[slot.si] ?? 0 })),
      ];
    }
    if (!e.concluded) {
      const played = (now - start) / (end - start);
      if (story.abandonAt !== undefined && played >= story.abandonAt) return conclude(e, open, () => [{ res: 'Abandoned', ia: true }]);
      if (now >= end) return conclude(e, open, (m) => settle(m, e.startTime, story));
      const due = open.filter((m) => m.type === 'session' && played >= ((overs(m.name) ?? Infinity) / 20) * INNINGS_SHARE);
      return due.flatMap((m) => [{ kind: 'market', mid: m.id, s: false, go: true }, ...settle(m, e.startTime, story)]);
    }
    if (now >= end + timing.rest * MINUTE) return relist(slot, e, markets, now);
    const odds = markets.find((m) => m.id === marketIdOf(e.id, 1));
    if (story.recall && story.abandonAt === undefined && odds && !odds.recalled && now >= end + RECALL_AFTER_MIN * MINUTE) {
      return [{ kind: 'market', mid: odds.id, rt: true }, { kind: 'result', mid: odds.id, rt: true }];
    }
    return [];
  }
}

/** Ends a fixture: every open market closes with its result. */
function conclude(e: Event, open: Market[], results: (m: Market) => Item[]): Item[] {
  return [
    { kind: 'event', eid: e.id, ip: false, go: true },
    ...open.flatMap((m) => [{ kind: 'market', mid: m.id, s: false, go: true }, ...results(m).map((r) => ({ kind: 'result', mid: r.mid ?? m.id, rt: false, ia: false, ...r }))]),
  ];
}

/**
 * The slot's next fixture, under the same event ID: drawn from a seed of the
 * one that ended, so a step repeated before the read model caught up lists
 * the same fixture. Markets the new fixture does not have stay concluded.
 */
function relist(slot: Slot, e: Event, markets: Market[], now: number): Item[] {
  const random = seeded(seedOf(`${e.id}|${e.startTime}|next`));
  const fixture = drawFixture(slot, random);
  const [lo, hi] = TIMING[slot.si].lead;
  const startTime = Math.ceil((now + (lo + random() * (hi - lo)) * MINUTE) / (5 * MINUTE)) * 5 * MINUTE;
  const fresh = fixtureMarkets(slot, fixture.sides).map((m) => ({ ...m, rt: false, if: null }));
  const mids = new Set(fresh.map((item) => item.mid));
  return [
    { kind: 'event', eid: e.id, na: fixture.na, st: new Date(startTime).toISOString(), ip: false, go: false, si: slot.si, li: slot.li, tv: random() < 0.4 ? liveTvFor(e.id) : null },
    ...fresh,
    ...fresh.map((m): Item => ({ ...termsOf(m, { si: slot.si, li: slot.li, ip: false }) })),
    ...fresh.map((m) => ({ kind: 'result', mid: m.mid, res: '', rt: false, ia: false })),
    ...markets.filter((m) => !mids.has(m.id) && !m.concluded).map((m) => ({ kind: 'market', mid: m.id, s: false, go: true })),
  ];
}

/**
 * A featured event back in its demo state: in play, its markets and results as the demo set lists
 * them, and every other result of its markets cleared.
 */
function revive(eid: number): Item[] {
  const items = demoItems(new Date());
  const markets = items.filter((i): i is DemoMarket => i.kind === 'market' && i.eid === eid);
  const mids = markets.flatMap((m) => [m.mid, ...(m.m ?? []).map((n) => n.mid)]);
  const results = new Map(items.filter((i): i is DemoResult => i.kind === 'result' && mids.includes(i.mid)).map((r) => [r.mid, r]));
  return [
    ...items.filter((i) => i.kind === 'event' && i.eid === eid),
    ...markets,
    ...items.filter((i) => i.kind === 'terms' && mids.includes(i.mid)),
    ...mids.map((mid) => results.get(mid) ?? { kind: 'result', mid, res: '', rt: false, ia: false }),
  ].map((i): Item => ({ ...i }));
}
