/** What /proc says about a process and the machine: CPU time to the nanosecond, memory, busy cores. */
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';

export const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK']).stdout?.toString().trim()) || 100;

/**
 * User + system CPU time of a process (all its threads), in microseconds: the sum of its threads'
 * run time in nanoseconds (/proc/<pid>/task/<tid>/schedstat) where the kernel has it, since
 * /proc/<pid>/stat counts in clock ticks (10 ms), too coarse for a one-second step; time of
 * threads that already exited is then missing, which a server in steady state does not have.
 */
export function cpuMicros(pid: number): number {
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // the thread ended between the listing and the read
      }
    }
    if (ns > 0) return ns / 1000;
  } catch {
    // no schedstat: clock ticks below
  }
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command (which may hold spaces) start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return ((utime + stime) * 1e6) / CLK_TCK;
}

/** VmRSS of a process in bytes, NaN once it is gone. */
export function rssBytes(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

export function sumCpuMicros(pids: readonly number[]): number {
  let sum = 0;
  for (const pid of pids) {
    try {
      sum += cpuMicros(pid);
    } catch {
      // the process went away: its time is lost, which only understates
    }
  }
  return sum;
}

/** Busy and total jiffies per CPU, from /proc/stat. */
export function coreTimes(): { busy: number; total: number }[] {
  const out: { busy: number; total: number }[] = [];
  try {
    for (const line of readFileSync('/proc/stat', 'utf8').split('\n')) {
      const m = /^cpu(\d+) (.*)$/.exec(line);
      if (!m) continue;
      const v = m[2].trim().split(/\s+/).map(Number);
      const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
      out[Number(m[1])] = { busy: total - v[3] - v[4], total };
    }
  } catch {
    // not Linux
  }
  return out;
}

/** How busy each core was between two coreTimes() readings, in %. */
export function coreBusyPct(a: { busy: number; total: number }[], b: { busy: number; total: number }[]): number[] {
  return b.map((x, i) => (100 * (x.busy - (a[i]?.busy ?? 0))) / Math.max(1, x.total - (a[i]?.total ?? 0)));
}

/** Node, cores and CPU model, for the report's header. */
export function machine(): Record<string, unknown> {
  let cpu = 'unknown';
  try {
    cpu = /model name\s*:\s*(.*)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpu;
  } catch {
    // not Linux
  }
  return { node: process.version, cores: availableParallelism(), cpu, platform: `${process.platform}-${process.arch}` };
}
