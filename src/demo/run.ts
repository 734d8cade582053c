import type { Clock } from '../lib/clock.js';
import type { Ingest } from '../ingest/ingest.js';
import type { OutsideFeeds } from '../ingest/outside.js';
import type { Feeder, Freshness } from '../relay/freshness.js';
import type { Logger } from '../log.js';
import type { ReadModel } from '../refdata/model.js';
import type { Component } from '../lib/component.js';
import { demoMarketIds } from './data.js';
import { MatchDay } from './match-day.js';
import { Simulator, type SimMarket } from './simulator.js';
import { openingLine } from './outcomes.js';
import { SimFeed } from './feed.js';

/**
 * What the simulator animates, read from the read model each tick so markets
 * that appear, suspend or close are followed: the demo's own markets (`ours`)
 * only. A player-race's nested markets carry its runners, so each is simulated
 * as a runner market of its own.
 */
function simMarkets(model: ReadModel, ours: (mid: string) => boolean): SimMarket[] {
  const out: SimMarket[] = [];
  for (const m of model.allMarkets()) {
    const event = model.event(m.eventId);
    const inPlay = event?.inPlay ?? false;
    const closed = m.concluded || (event?.concluded ?? false);
    const fixture = { eventId: m.eventId, startTime: event?.startTime ?? '', sportId: event?.sportId };
    if (m.nested) {
      for (const n of m.nested) {
        if (ours(n.id)) out.push({ ...fixture, mid: n.id, name: m.name, type: m.type, inPlay, active: m.isActive && n.isActive, closed: closed || n.concluded, rids: n.runners.map((r) => r.id) });
      }
    } else if (ours(m.id)) {
      const removed = new Set((m.terms?.runners ?? []).filter((r) => r.status === 'REMOVED').map((r) => r.runnerId));
      out.push({
        ...fixture, mid: m.id, name: m.name, type: m.type, inPlay, active: m.isActive, closed, rids: (m.runners ?? []).map((r) => r.id), line: openingLine(m.type, m.name),
        ...(removed.size ? { removed } : {}),
      });
    }
  }
  return out;
}

interface SimulatorRun {
  model: ReadModel;
  ingest: Ingest;
  outside: OutsideFeeds;
  /** Where the simulator connects as a publisher: its markets are stale if its ticks stop. */
  freshness: Pick<Freshness, 'connect'>;
  intervalMs: number;
  lifecycleMs: number;
  /** Items a batch may hold (`INGEST_MAX_ITEMS`): the simulator's batches keep within it. */
  maxItems: number;
  log: Logger;
  /** What the simulator's ticks are timed by: the service's. */
  clock?: Clock;
}

/**
 * Publishes simulated odds, and moves markets through their lifecycle,
 * through the ingest path, as an external publisher would. Only the demo data
 * set's own markets move: a market another publisher created is never quoted,
 * whether or not it has odds yet, and one another publisher feeds (`outside`)
 * is left to it; either leaves its event's lifecycle alone too.
 */
export class DemoSimulator implements Component {
  readonly name = 'simulator';
  private running: { sim: Simulator; life: MatchDay; feeder: Feeder; feed: SimFeed } | undefined;

  constructor(private readonly o: SimulatorRun) {}

  start(): void {
    const { model, ingest, outside, intervalMs, lifecycleMs, maxItems, log } = this.o;
    const feeder = this.o.freshness.connect();
    const feed = new SimFeed({ ingest, feeder, maxItems, log });
    const demo = demoMarketIds();
    const ours = (mid: string) => demo.has(mid) && !outside.has(mid);
    const life = new MatchDay({ model, ingest, log, intervalMs: lifecycleMs, theirs: (mid) => !ours(mid) });
    const sim = new Simulator({
      intervalMs,
      clock: this.o.clock,
      markets: () => simMarkets(model, ours),
      alive: () => feeder.heard(),
      publish: (images) => feed.publish(images),
    });
    sim.start();
    life.start();
    this.running = { sim, life, feeder, feed };
    log.info('odds simulator started', { intervalMs, lifecycleMs });
  }

  stop(): void {
    if (!this.running) return;
    const { sim, life, feeder, feed } = this.running;
    this.running = undefined;
    sim.stop();
    feed.stop();
    life.stop();
    feeder.close();
  }
}
