/**
 * bench:age's settings (env; a bad value stops the run naming it), its feed's schedule, and what
 * its reader processes are told and report.
 */
import { deepFreeze, envList, envNumber } from '../lib/env.js';
import type { Histogram } from '../lib/statistics.js';

/** Paced screens as `kind:markets`, e.g. `raw:1`: a raw reader or the TypeScript client, taking that many markets. */
const PACED = /^(raw|client):(\d+)$/;

function paced(): { kind: 'raw' | 'client'; markets: number }[] {
  return envList('AGE_PACED', ['raw:1', 'client:1', 'raw:20']).map((item) => {
    const m = PACED.exec(item);
    if (!m || Number(m[2]) < 1) throw new Error(`AGE_PACED takes kind:markets items (raw:1, client:20), got "${item}"`);
    return { kind: m[1] as 'raw' | 'client', markets: Number(m[2]) };
  });
}

export const SETTINGS = deepFreeze({
  /** AGE_READERS: raw readers at full speed, each taking every market. */
  readers: Math.round(envNumber('AGE_READERS', 50)),
  /** AGE_MARKETS: markets published, each image about a kilobyte. */
  markets: Math.round(envNumber('AGE_MARKETS', 20)),
  /** AGE_RATE / AGE_BURST_RATE: batches a second (each an image of every market), steady and in a burst. */
  rate: envNumber('AGE_RATE', 20),
  burstRate: envNumber('AGE_BURST_RATE', 100),
  /** AGE_CYCLE_SECONDS of which AGE_BURST_SECONDS of burst at its end, AGE_CYCLES times, after AGE_WARMUP s and before AGE_TAIL s of steady. */
  cycleSeconds: envNumber('AGE_CYCLE_SECONDS', 8),
  burstSeconds: envNumber('AGE_BURST_SECONDS', 2),
  cycles: Math.round(envNumber('AGE_CYCLES', 2)),
  warmup: envNumber('AGE_WARMUP', 1),
  tail: envNumber('AGE_TAIL', 3),
  /** AGE_PACED_RATE: bytes a second a paced screen reads. */
  pacedRate: envNumber('AGE_PACED_RATE', 40_000),
  paced: paced(),
  /** BENCH_ATTEMPTS: measurements taken while other processes disturb them, at most. */
  attempts: Math.round(envNumber('BENCH_ATTEMPTS', 3)),
  /** AGE_MAX_AGE_MS: the service's WS_MAX_AGE_MS, and the clients' maxAgeMs. */
  maxAgeMs: Math.round(envNumber('AGE_MAX_AGE_MS', 2000)),
});

/** A span of the feed by its publish times (ms, this machine's clock): steady or burst. */
export interface Phase {
  kind: 'steady' | 'burst';
  from: number;
  to: number;
  /** Batches a second. */
  rate: number;
}

/** The feed's schedule: from `t0`, the warm-up until `warmupEnd`, then the phases. */
export interface Plan {
  t0: number;
  warmupEnd: number;
  phases: Phase[];
}

/** The feed from `t0`: the warm-up (not a phase: nothing published in it is counted), the cycles, the tail. */
export function schedule(t0: number): Plan {
  const s = SETTINGS;
  const phases: Phase[] = [];
  let at = t0 + s.warmup * 1000;
  const add = (kind: Phase['kind'], seconds: number, rate: number) => {
    if (seconds > 0) phases.push({ kind, from: at, to: (at += seconds * 1000), rate });
  };
  for (let c = 0; c < s.cycles; c++) {
    add('steady', s.cycleSeconds - s.burstSeconds, s.rate);
    add('burst', s.burstSeconds, s.burstRate);
  }
  add('steady', s.tail, s.rate);
  return { t0, warmupEnd: t0 + s.warmup * 1000, phases };
}

/** What a reader process opens: `count` screens of one kind, each taking `mids`, at `rate` bytes a second (0: full speed). */
export interface Screens {
  kind: 'raw' | 'client';
  count: number;
  mids: string[];
  rate: number;
  maxAgeMs: number;
}

/** A market turning not live on a screen: read when (ms), behind since when by the server's or the client's word, and the seq of the image the screen held. */
export interface Notice {
  screen: number;
  mid: string;
  readAt: number;
  since: number;
  heldSeq: number;
  why: string;
}

/** Ages (ms) of odds frames read while the market was live and while not, and how many live ones were past the bound. */
export interface PhaseFigures {
  live: ReturnType<Histogram['toJSON']>;
  notLive: ReturnType<Histogram['toJSON']>;
  pastBound: number;
}

export interface ReaderReport {
  phases: Partial<Record<Phase['kind'], PhaseFigures>>;
  notices: Notice[];
  /** Markets turned live again after a notice. */
  lives: number;
  /** Screens closed, or subscribes refused, with why. */
  closes: string[];
  /** Per market, when each image (by seq) was published, as the process's first screen read it. */
  published: Record<string, (number | null)[]>;
}
