import type { Ingest } from '../ingest/ingest.js';
import type { OutsideFeeds } from '../ingest/outside.js';
import type { Feeder } from '../relay/freshness.js';
import type { Logger } from '../log.js';
import type { ReadModel } from '../refdata/model.js';
import { MatchDay } from './match-day.js';
import { Simulator, type SimMarket } from './simulator.js';
import { openingLine } from './outcomes.js';

/**
 * What the simulator animates, read from the read model each tick so markets
 * that appear, suspend or close are followed. A player-race's nested markets
 * carry its runners, so each is simulated as a runner market of its own.
 */
function simMarkets(model: ReadModel, outside: OutsideFeeds): SimMarket[] {
  const out: SimMarket[] = [];
  for (const m of model.allMarkets()) {
    const event = model.event(m.eid);
    const inPlay = event?.ip ?? false;
    const closed = m.go || (event?.go ?? false);
    if (m.m) {
      for (const n of m.m) if (!outside.has(n.mid)) out.push({ mid: n.mid, ty: m.ty, inPlay, active: m.s && n.s, closed: closed || n.go, rids: n.r.map((r) => r.rid) });
    } else if (!outside.has(m.mid)) {
      out.push({ mid: m.mid, ty: m.ty, inPlay, active: m.s, closed, rids: (m.r ?? []).map((r) => r.rid), line: openingLine(m.ty, m.na) });
    }
  }
  return out;
}

/**
 * Publishes simulated odds, and moves markets through their lifecycle,
 * through the ingest path, as an external publisher would. Markets another
 * publisher feeds (`outside`) are left to it, odds and lifecycle alike.
 */
interface SimulatorRun {
  model: ReadModel;
  ingest: Ingest;
  outside: OutsideFeeds;
  /** The simulator as a publisher: its markets are stale if its ticks stop. */
  feeder: Feeder;
  intervalMs: number;
  lifecycleMs: number;
  log: Logger;
}

export function startSimulator({ model, ingest, outside, feeder, intervalMs, lifecycleMs, log }: SimulatorRun): { stop(): void } {
  const life = new MatchDay({ model, ingest, log, intervalMs: lifecycleMs, fedElsewhere: (mid) => outside.has(mid) });
  const sim = new Simulator({
    intervalMs,
    markets: () => simMarkets(model, outside),
    alive: () => feeder.heard(),
    publish: (images) => {
      ingest.accept(images.map((image) => ({ kind: 'odds', ...image })), { from: 'simulator', feeder }).catch((err: Error) => log.warn('simulator batch refused', { err: err.message }));
    },
  });
  sim.start();
  life.start();
  log.info('odds simulator started', { intervalMs, lifecycleMs });
  return { stop: () => { sim.stop(); life.stop(); feeder.close(); } };
}
