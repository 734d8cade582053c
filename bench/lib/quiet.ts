/** Other jobs on a shared machine: how much CPU they take, and waiting until they are quiet. */
import { CLK_TCK, coreTimes, sumCpuMicros } from './proc.js';
import { log, sleep } from './run.js';
import { SHARED } from './settings.js';

/**
 * CPU used on the machine by anything but the given processes, in % of one core, between
 * two readings: other jobs on a shared machine make a measurement meaningless, so the
 * benchmarks wait for quiet before measuring and repeat a measurement that was disturbed.
 */
export class Noise {
  private cores = coreTimes();
  private ours: number;
  private at = performance.now();
  constructor(private readonly pids: () => number[]) {
    this.ours = this.own();
  }
  private own(): number {
    return sumCpuMicros(this.pids()) + cpuSelf();
  }
  /** Foreign CPU since construction, % of one core. */
  foreignPct(): number {
    const now = coreTimes();
    const wall = (performance.now() - this.at) / 1000;
    let busyJiffies = 0;
    for (let i = 0; i < now.length; i++) busyJiffies += now[i].busy - (this.cores[i]?.busy ?? 0);
    const busyUs = (busyJiffies * 1e6) / CLK_TCK;
    return Math.max(0, (100 * (busyUs - (this.own() - this.ours))) / (wall * 1e6));
  }
}

const cpuSelf = (): number => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** Waits (up to maxMs, BENCH_QUIET_MS) until other processes use less than `pct` % of a core over 300 ms. */
export async function waitQuiet(pids: () => number[], pct = 10, maxMs = SHARED.quietMs): Promise<number> {
  const until = performance.now() + maxMs;
  let last = NaN;
  let warned = false;
  for (;;) {
    const n = new Noise(pids);
    await sleep(300);
    last = n.foreignPct();
    if (last < pct || performance.now() > until) return last;
    if (!warned) {
      log(`waiting for other jobs on this machine to finish (${last.toFixed(0)}% of a core in use by others)`);
      warned = true;
    }
  }
}
