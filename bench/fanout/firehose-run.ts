/**
 * The firehose phase of a fan-out run, after its ramp (the mechanics are firehose.ts): the clients
 * read at the cycle of the best held rate, the publisher pipelines batches as large as the paced
 * publisher's at that rate, and what is delivered is set against that rate.
 */
import { cpuMicros } from '../lib/proc.js';
import { fmt } from '../lib/report.js';
import { log } from '../lib/run.js';
import { perfAvailable, perfRecord, perfSummary } from '../lib/perf.js';
import { Inspector, summarise, type ProfileSummary } from '../lib/profile.js';
import { firehose, type FirehoseResult } from './firehose.js';
import type { Rig } from './rig.js';
import { settings } from './settings.js';
import { undisturbed, type Step } from './step.js';

/** The firehose step of a run, beside its best held paced rate. */
export interface FirehoseRun extends FirehoseResult {
  /** Deliveries/s of the run's highest held paced step (NaN when none held). */
  bestHeld: number;
  /** deliveriesPerSec / bestHeld. */
  ofBestHeld: number;
  pipeline: number;
  batch: number;
  cycleMs: number;
  profile?: ProfileSummary;
}

export async function firehoseRun(rig: Rig, best: Step | undefined): Promise<FirehoseRun> {
  const { impl, format, n, server, publisher, clients, layout: lay } = rig;
  const { warmSeconds, seconds, pipeline, drainSeconds, maxRssBytes } = settings.firehose;
  const bestRate = (best?.targetPerSec ?? settings.start) / lay.subsPerMarket;
  const cycleMs = rig.cycleFor(bestRate);
  const batch = settings.firehose.batch ?? Math.max(1, Math.round(bestRate * 0.005));
  await clients.cycle(cycleMs);
  const subscribers = Uint32Array.from(lay.subsRaw, (v, i) => v + lay.subsSampled[i]);
  const name = `firehose-${impl}-${format}-${n}`;
  return undisturbed(rig, async () => {
    const insp = settings.firehose.profile && impl === 'service' ? new Inspector(server.inspector!) : undefined;
    let perf: Promise<string | undefined> | undefined;
    let prof: Awaited<ReturnType<Inspector['stop']>> | undefined;
    let cpuAt = 0;
    let run: FirehoseRun;
    try {
      const fh = await firehose({
        publisher, clients, subscribers, serverPid: server.pid, pids: rig.pids,
        window: insp && {
          open: async (windowSeconds) => {
            await insp.start();
            cpuAt = cpuMicros(server.pid);
            perf = perfAvailable() ? perfRecord(server.pid, windowSeconds, name) : undefined;
          },
          close: async () => {
            prof = await insp.stop();
            cpuAt = cpuMicros(server.pid) - cpuAt;
          },
        },
      }, { warmSeconds, seconds, pipeline, drainSeconds, maxRssBytes, batch, cycleMs });
      const bestHeld = best?.deliveriesPerSec ?? NaN;
      run = { ...fh, bestHeld, ofBestHeld: fh.deliveriesPerSec / bestHeld, pipeline, batch, cycleMs };
      if (prof) {
        run.profile = summarise(prof, name, `firehose, ${fmt(n)} sockets (${format}), ${fmt(fh.deliveriesPerSec)} deliveries/s (profilers on)`, cpuAt);
        const perfFile = await perf;
        if (perfFile) run.profile.perf = perfSummary(perfFile);
      }
    } finally {
      insp?.close();
    }
    log(`${impl} ${format} ${n} firehose: ${fmt(run.deliveriesPerSec)} deliveries/s (` +
      `${Number.isFinite(run.ofBestHeld) ? `${run.ofBestHeld.toFixed(2)}x best held ${fmt(run.bestHeld)}` : 'no paced step held'}), batches of ${batch}, ` +
      `${run.cpuNsPerDelivery.toFixed(0)} ns CPU/delivery, ${run.framesPerWrite === null ? 'writes not counted' : `${run.framesPerWrite.toFixed(1)} frames/write`}, ` +
      `acks ${fmt(run.acksPerSec)}/s (${run.refused} refused, mean ${run.ackMeanMs.toFixed(1)} ms), share delivered ${(100 * run.deliveredShare).toFixed(0)}%, ` +
      `p50 ${run.p50.toFixed(1)} p99 ${run.p99.toFixed(1)} ms, newest: ${run.newest.stale} of ${run.newest.checked} stale, ${run.newest.closedSockets} closed` +
      `${run.newest.example ? ` (${run.newest.example})` : ''}, drained ${run.drained ? 'in' : 'NOT in'} ${run.drainSeconds.toFixed(1)} s, RSS ${run.rssMiB.toFixed(0)} MiB` +
      `${run.rssLimitHit ? ' (memory limit: stopped early)' : ''}, others ${run.foreignPct.toFixed(0)}%`);
    return run;
  }, { keepLast: true, what: 'firehose' });
}
