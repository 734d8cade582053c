/**
 * One fan-out run: one server, one format, one socket count, through its phases: start the
 * server, open the publisher, connect and subscribe every socket (with memory per socket), warm
 * up, then either the ramp (and the firehose after it), one profiled step, or mixed
 * subscriptions.
 */
import { type Pinning } from '../lib/cores.js';
import { sleep } from '../lib/run.js';
import { Inspector, type ProfileSummary } from '../lib/profile.js';
import type { Clients } from './clients.js';
import { firehoseRun, type FirehoseRun } from './firehose-run.js';
import { mixedRun, type MixedRun } from './mixed-run.js';
import { Publisher, type Market } from './publisher.js';
import { MemoryProbe, NO_MEMORY, connect, cycleFor, layout, logConnected, startClients, startUnderTest, type Rig } from './rig.js';
import { settings, type Format, type Impl } from './settings.js';
import { ramp, step, warmUp, type Step } from './step.js';

export interface RunResult {
  impl: Impl;
  format: Format;
  sockets: number;
  connectSeconds: number;
  memPerSocketKiB: number;
  /** Of which JS heap (the rest: uWS or Node native memory). */
  heapPerSocketKiB: number;
  rssBeforeMiB: number;
  rssAfterMiB: number;
  idleCpuPct: number;
  /** What the server logged at warn or error level during the run. */
  warnings: string[];
  steps: Step[];
  /** Found its highest rate held (FANOUT_RAMP_FORMATS), rather than one step at a given rate. */
  ramped: boolean;
  /** The step at the reference rate of its socket count (the report's), once every run is done. */
  reference: Step | undefined;
  maxHeld: Step | undefined;
  halfMax: Step | undefined;
  firstFail: Step | undefined;
  profile?: ProfileSummary;
  firehose?: FirehoseRun;
  mixedSubs?: MixedRun;
}

/** What a run measures after the warm-up: the ramp by default. */
export interface RunOptions {
  /** One profiled step at this many deliveries/s. */
  profileAt?: number;
  /** One step at this many deliveries/s instead of the ramp (FANOUT_RATE also does). */
  fixedAt?: number;
  /** The firehose after the ramp. */
  firehose?: boolean;
  /** Plain then mixed subscriptions at this many deliveries/s of plain subscriptions. */
  mixedAt?: number;
}

export async function runOne(impl: Impl, format: Format, n: number, dbUrl: string, pinning: Pinning, markets: Market[], opts: RunOptions = {}): Promise<RunResult> {
  const server = await startUnderTest(impl, format, dbUrl, pinning);
  const publisher = new Publisher(markets);
  let clients: Clients | undefined;
  try {
    const lay = layout(n, format, markets);
    await publisher.open(server.url);
    await sleep(300);
    const probe = settings.memory && opts.mixedAt === undefined ? await MemoryProbe.before(server) : undefined;
    clients = startClients(impl, lay);
    const rig: Rig = {
      impl, format, n, server, publisher, clients, layout: lay, cycleFor: cycleFor(format),
      pids: () => [server.pid, ...clients!.children.map((c) => c.proc.pid!)],
    };
    const connectSeconds = await connect(rig);
    const memory = probe ? await probe.after(n) : undefined;
    logConnected(rig, connectSeconds, memory);
    await warmUp(rig);

    let steps: Step[] = [];
    let profile: ProfileSummary | undefined;
    let mixedSubs: MixedRun | undefined;
    if (opts.mixedAt !== undefined) mixedSubs = await mixedRun(rig, opts.mixedAt);
    else if (opts.profileAt !== undefined) {
      const insp = new Inspector(server.inspector!);
      try {
        const { profile: p, ...st } = await step(rig, opts.profileAt, settings.stepSeconds, insp);
        steps = [st];
        profile = p;
      } finally {
        insp.close();
      }
    } else steps = await ramp(rig, opts.fixedAt ?? settings.fixedRate);

    const passed = steps.filter((s) => s.pass);
    const maxHeld = passed.length ? passed.reduce((a, b) => (b.targetPerSec > a.targetPerSec ? b : a)) : undefined;
    const halfMax = maxHeld ? steps.find((s) => Math.abs(s.targetPerSec - maxHeld.targetPerSec / 2) < 1) : undefined;
    if (opts.firehose) await publisher.idle();
    const firehose = opts.firehose ? await firehoseRun(rig, maxHeld) : undefined;
    const { rssBefore, rssAfter, heapPerSocketKiB, idleCpuPct } = memory ?? NO_MEMORY;
    return {
      impl, format, sockets: n, connectSeconds, memPerSocketKiB: (rssAfter - rssBefore) / n / 1024, heapPerSocketKiB,
      rssBeforeMiB: rssBefore / 2 ** 20, rssAfterMiB: rssAfter / 2 ** 20, idleCpuPct, warnings: server.warnings(), steps,
      ramped: opts.fixedAt === undefined && settings.fixedRate === undefined && opts.profileAt === undefined && opts.mixedAt === undefined, reference: undefined, maxHeld, halfMax,
      firstFail: steps.filter((s) => !s.pass && (!maxHeld || s.targetPerSec > maxHeld.targetPerSec)).sort((a, b) => a.targetPerSec - b.targetPerSec)[0],
      profile, firehose, mixedSubs,
    };
  } finally {
    publisher.close();
    await clients?.close();
    await server.stop();
  }
}
