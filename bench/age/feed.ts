/**
 * bench:age's feed: AGE_MARKETS markets of three runners with ten levels a side (an image of about
 * a kilobyte), every market's new image in every batch, sent through the `/ingest` socket on a
 * fixed schedule (age/settings.ts): each batch when it is due, without waiting for the acks of
 * those before (up to 64 unacked), its images' `ts` the moment it is sent.
 */
import { cpuMicros } from '../lib/proc.js';
import { sleep } from '../lib/run.js';
import type { Ingest } from '../scale/market.js';
import { SETTINGS, type Phase, type Plan } from './settings.js';

/** Batches sent and not yet acked, at most. */
const IN_FLIGHT = 64;
const SI = 66;
const EID = 66_000_001;
const RUNNERS = [1, 2, 3];
export const MIDS = Array.from({ length: SETTINGS.markets }, (_, i) => `6.66${String(i).padStart(4, '0')}`);

export function reference(): Record<string, unknown>[] {
  return [
    { kind: 'sport', si: SI, na: 'Age', a: true },
    { kind: 'league', li: 6601, si: SI, na: 'Age League' },
    { kind: 'event', eid: EID, na: 'Fast v Slow', st: new Date().toISOString(), go: false, ip: true, si: SI, li: 6601, tv: null },
    ...MIDS.map((mid) => ({ kind: 'market', mid, eid: EID, na: `Market ${mid}`, ty: 'match-odd', s: true, go: false, rt: false, r: RUNNERS.map((rid) => ({ rid, na: `R${rid}` })) })),
  ];
}

/** Batch `k`: every market's image, each unlike the one before. */
export function batch(k: number, ts: number): Record<string, unknown>[] {
  return MIDS.map((mid) => ({
    kind: 'odds', mid, ts, st: 'OPEN', ip: true,
    r: RUNNERS.map((rid) => {
      const p = 2 + rid + (k % 50) / 100;
      const price = (x: number) => Math.round(x * 100) / 100;
      return { rid, st: 'ACTIVE', b: Array.from({ length: 10 }, (_, i) => [price(p - i / 100), 10 + (k % 7)]), l: Array.from({ length: 10 }, (_, i) => [price(p + 0.01 + i / 100), 11]) };
    }),
  }));
}

/** What the feed did: how many batches per phase kind, and the server's CPU over each kind. */
export interface FeedRun {
  batches: Record<Phase['kind'], number>;
  cpuMicros: Record<Phase['kind'], number>;
  seconds: Record<Phase['kind'], number>;
  /** Batches sent more than a batch's interval after they were due. */
  late: number;
}

/** Sends the schedule's batches (the warm-up at the steady rate, then each phase at its own), timing the server's CPU per phase. */
export async function publish(ingest: Ingest, plan: Plan, serverPid: number): Promise<FeedRun> {
  const run: FeedRun = { batches: { steady: 0, burst: 0 }, cpuMicros: { steady: 0, burst: 0 }, seconds: { steady: 0, burst: 0 }, late: 0 };
  const acks: Promise<void>[] = [];
  let refused: Error | undefined;
  let k = 1;
  const spans: (Phase | { kind: 'warmup'; from: number; to: number; rate: number })[] = [{ kind: 'warmup', from: plan.t0, to: plan.warmupEnd, rate: SETTINGS.rate }, ...plan.phases];
  for (const span of spans) {
    const cpu0 = cpuMicros(serverPid);
    for (let due = span.from; due < span.to; due += 1000 / span.rate) {
      // At most IN_FLIGHT batches unacked (acks come in order): a server that falls behind delays the feed rather than refusing it.
      if (acks.length >= IN_FLIGHT) await acks[acks.length - IN_FLIGHT];
      const wait = due - Date.now();
      if (wait > 0) await sleep(wait);
      const ts = Date.now();
      if (ts - due > 1000 / span.rate) run.late++;
      acks.push(ingest.send(batch(k++, ts)).catch((err: Error) => void (refused ??= err)));
      if (span.kind !== 'warmup') run.batches[span.kind]++;
    }
    if (span.to > Date.now()) await sleep(span.to - Date.now());
    if (span.kind === 'warmup') continue;
    run.cpuMicros[span.kind] += cpuMicros(serverPid) - cpu0;
    run.seconds[span.kind] += (span.to - span.from) / 1000;
  }
  await Promise.all(acks);
  if (refused) throw refused;
  return run;
}
