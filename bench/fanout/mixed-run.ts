/**
 * The mixed-subscriptions phase (the mechanics are mixed.ts): the sockets measured with their
 * plain subscriptions, then re-subscribed mixed and measured again at the same publish rate.
 */
import { fmt } from '../lib/report.js';
import { log } from '../lib/run.js';
import { measureWindow, mixedRequests, type WindowResult } from './mixed.js';
import { untilAcked, type Rig } from './rig.js';
import { MIXED_WARM_SECONDS, settings } from './settings.js';
import { undisturbed } from './step.js';

/** Plain then mixed subscriptions of the same sockets at one publish rate (the service only). */
export interface MixedRun {
  /** Deliveries/s plain subscriptions would receive at the rate published. */
  targetPerSec: number;
  plain: WindowResult;
  mixed: WindowResult;
  /** Mixed CPU per frame delivered over plain's. */
  cpuRatio: number;
  /** Subscribe requests the service refused (seen by the sampled sockets); must be 0. */
  refused: number;
}

export async function mixedRun(rig: Rig, targetPerSec: number): Promise<MixedRun> {
  const { impl, n, server, publisher, clients, layout: lay } = rig;
  const rate = targetPerSec / lay.subsPerMarket;
  await clients.cycle(rig.cycleFor(rate));
  const measure = (what: string) => undisturbed(rig, async () => {
    const w = await measureWindow(publisher, clients, server.pid, rig.pids, rate, MIXED_WARM_SECONDS, settings.mixed.seconds);
    log(`${impl} ${n} ${what} subscriptions: ${fmt(rate)} upd/s -> ${fmt(w.deliveriesPerSec)} deliveries/s, ${w.cpuNsPerDelivery.toFixed(0)} ns CPU/delivery, ` +
      `server ${w.serverBusyPct.toFixed(0)}%, p99 ${w.p99.toFixed(1)} ms, others ${w.foreignPct.toFixed(0)}%`);
    return w;
  });
  const plain = await measure('plain');
  const c0 = await clients.counts();
  const rawMixed = lay.rawSets.map((mids, i) => mixedRequests(mids, lay.sampledSets.length + i));
  const sampledMixed = lay.sampledSets.map((mids, i) => mixedRequests(mids, i));
  await clients.subscribe(rawMixed, sampledMixed, lay.perWorker);
  await untilAcked(clients, c0.acks + rawMixed.reduce((a, r) => a + r.length, 0), c0.sampler.acks + sampledMixed.reduce((a, r) => a + r.length, 0));
  const mixed = await measure('mixed');
  const { refused, lastRefusal } = (await clients.counts()).sampler;
  if (refused) log(`the ${impl} refused ${refused} subscribe requests of the sampled sockets: ${lastRefusal}`);
  return { targetPerSec, plain, mixed, cpuRatio: mixed.cpuNsPerDelivery / plain.cpuNsPerDelivery, refused };
}
