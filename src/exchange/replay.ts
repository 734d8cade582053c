/**
 * Replays recordings through the outbox: the files' messages merged by publish time (merge.ts),
 * each translated and its items queued, pipelined. At a speed N a message goes out when its
 * `pt` comes due on a clock running N times real time from the first message published (in
 * `files` order, a `pt` earlier than the one before, as at the start of the next file, restarts
 * that clock), each instant (one `pt`) in batches of its own; at `max`, as fast as the outbox has
 * room, what waited for the service merged into full batches. With `from`, the messages before it build
 * the books and the reference rows silently, and the first message at or after it starts the
 * replay with each market's image as it stood then. Bad input is reported through `problem` and
 * counted, and the replay goes on.
 */
import { systemClock, type Clock } from '../lib/clock.js';
import { merged, type MergeOptions } from './merge.js';
import type { Outbox } from './outbox.js';
import type { Translator } from './translate.js';
import type { IngestItemInput } from '../odds/messages.js';

export interface ReplayStats {
  /** Messages replayed, from `from` on. */
  messages: number;
  /** Messages read before `from`, only to build the books. */
  before: number;
  images: number;
  /** Problems reported: lines not read as messages (not JSON, unreadable rests of files), bad messages and market changes. */
  problems: number;
  /** `pt` of the newest message, ms: the recording's clock. */
  clock: number | undefined;
}

interface ReplayOptions extends Omit<MergeOptions, 'to'> {
  files: readonly string[];
  speed: number | 'max';
  from?: number;
  to?: number;
  translator: Translator;
  outbox: Outbox;
  /** Filled in as the replay goes, so a caller can show progress and a summary even after a failure. */
  stats: ReplayStats;
  problem: (text: string) => void;
  /** What the pace is kept by: the system's, unless a test moves its own. */
  clock?: Clock;
}

export const newStats = (): ReplayStats => ({ messages: 0, before: 0, images: 0, problems: 0, clock: undefined });

/** When each message is due, at a speed. */
export class Pace {
  private origin: { pt: number; wall: number } | undefined;
  private last = -Infinity;

  constructor(private readonly speed: number, private readonly restartOnRewind: boolean, private readonly clock: Pick<Clock, 'now'>) {}

  /** Milliseconds to wait before the message with this `pt` is due; 0 for one already late. */
  wait(pt: number): number {
    const now = this.clock.now();
    if (!this.origin || (this.restartOnRewind && pt < this.last)) this.origin = { pt, wall: now };
    this.last = pt;
    return Math.max(0, this.origin.wall + (pt - this.origin.pt) / this.speed - now);
  }
}

export async function replay(opts: ReplayOptions): Promise<void> {
  const { translator, outbox, stats, clock = systemClock } = opts;
  const pace = opts.speed === 'max' ? undefined : new Pace(opts.speed, opts.order === 'files', clock);
  /** Markets moved before `from`: their images go out when the replay reaches it. */
  let held: Set<string> | undefined = opts.from === undefined ? undefined : new Set();
  /** The `pt` of the message last sent. */
  let instant: number | undefined;
  const messages = merged(opts.files, { order: opts.order, maxOpen: opts.maxOpen, to: opts.to, limits: opts.limits });
  for await (const m of messages) {
    if ('problem' in m) {
      note([`${m.where}: ${m.problem}`], opts);
      continue;
    }
    if (held && m.pt !== undefined && m.pt >= opts.from!) {
      for (const mid of held) stats.images += publish(translator.render(mid), outbox);
      held = undefined;
    }
    if (held) {
      stats.before++;
      const { steps, problems } = translator.apply(m.msg, m.where);
      note(problems, opts);
      for (const step of steps) if ('item' in step) outbox.push(step.item, step.mid);
      else held.add(step.mid);
      continue;
    }
    if (m.pt !== undefined) {
      // At a speed N each instant of the recording goes in batches of its own, however far the
      // service is behind the pace: merged with the next, a state that lasted between the two
      // (a market late for a second) would never be told.
      if (pace && m.pt !== instant) await outbox.sent();
      instant = m.pt;
      const wait = pace?.wait(m.pt) ?? 0;
      if (wait > 0) await new Promise<void>((due) => clock.after(wait, due));
      stats.clock = m.pt;
    }
    const { steps, problems } = translator.apply(m.msg, m.where);
    note(problems, opts);
    stats.messages++;
    // Every image as the message left its market: the reference rows with the market they belong to.
    for (const step of steps) if ('item' in step) outbox.push(step.item, step.mid);
    else stats.images += publish(translator.render(step.mid), outbox);
    await outbox.room();
  }
  await outbox.flush();
}

/** Queues what tells the service a market's state; 1 when it is an odds image. */
function publish(item: IngestItemInput | undefined, outbox: Outbox): number {
  if (!item) return 0;
  outbox.push(item);
  return item.kind === 'odds' ? 1 : 0;
}

function note(problems: string[], opts: Pick<ReplayOptions, 'problem' | 'stats'>): void {
  opts.stats.problems += problems.length;
  for (const p of problems) opts.problem(p);
}
