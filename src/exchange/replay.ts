/**
 * Replays recorded stream files through a publisher: each line parsed, translated, cut into
 * batches and sent, pipelined. At a speed N, a message goes out when its `pt` comes due on a clock
 * running N times real time from the first message (a `pt` earlier than the one before, as at the
 * start of another market's file, restarts that clock); at `max`, as fast as acks allow. Bad input
 * is reported through `problem` and counted, and the replay goes on; a refused batch ends it by
 * throwing the publisher's PublishError.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Batcher } from './batch.js';
import { readLines } from './files.js';
import type { Publisher } from './publisher.js';
import type { Translator } from './translate.js';

export interface ReplayStats {
  messages: number;
  images: number;
  /** Lines refused as bad input (and unreadable rests of files). */
  refused: number;
  /** `pt` of the newest message, ms. */
  clock: number | undefined;
}

interface ReplayOptions {
  files: readonly string[];
  speed: number | 'max';
  translator: Translator;
  publisher: Publisher;
  /** Filled in as the replay goes, so a caller can show progress and a summary even after a failure. */
  stats: ReplayStats;
  problem: (text: string) => void;
}

export const newStats = (): ReplayStats => ({ messages: 0, images: 0, refused: 0, clock: undefined });

/** When each message is due, at a speed. */
class Pace {
  private origin: { pt: number; wall: number } | undefined;
  private last = -Infinity;

  constructor(private readonly speed: number) {}

  /** Milliseconds to wait before the message with this `pt` is due. */
  wait(pt: number): number {
    const now = performance.now();
    if (!this.origin || pt < this.last) this.origin = { pt, wall: now };
    this.last = pt;
    return Math.max(0, this.origin.wall + (pt - this.origin.pt) / this.speed - now);
  }
}

export async function replay(opts: ReplayOptions): Promise<void> {
  const { translator, publisher, stats } = opts;
  const batcher = new Batcher();
  const pace = opts.speed === 'max' ? undefined : new Pace(opts.speed);
  const send = async (batch: string[] | undefined) => {
    if (!batch) return;
    await publisher.room();
    void publisher.sendEncoded(batch);
  };
  for await (const line of readLines(opts.files)) {
    const where = `${line.file}:${line.line}`;
    if ('problem' in line) {
      stats.refused++;
      opts.problem(`${where}: ${line.problem}`);
      continue;
    }
    let msg: unknown;
    try {
      msg = JSON.parse(line.text);
    } catch (err) {
      stats.refused++;
      opts.problem(`${where}: not JSON (${(err as Error).message})`);
      continue;
    }
    const out = translator.apply(msg, where);
    if (out.errors.length) {
      stats.refused++;
      for (const e of out.errors) opts.problem(e);
      continue;
    }
    stats.messages++;
    const pt = (msg as { pt?: number }).pt;
    if (pt !== undefined) {
      const wait = pace?.wait(pt) ?? 0;
      if (wait > 0) {
        await send(batcher.take());
        await sleep(wait);
      }
      stats.clock = pt;
    }
    stats.images += out.images;
    for (const item of out.items) await send(batcher.add(item));
  }
  await send(batcher.take());
  await publisher.flush();
}
