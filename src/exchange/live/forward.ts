/**
 * Live market changes to the service: each change applied to the books at once (the translator),
 * its reference rows queued in order and its markets' slots touched in the outbox, which renders a
 * market's newest state only when its batch is cut. While the service is behind, a busy market's
 * changes merge into one image; when the outbox fills, the caller pauses the stream.
 *
 * A market whose book became unreliable (a change that could not be applied) is sent as stale and
 * waits for a fresh image: when none came within `refreshMs`, the whole subscription is asked
 * again for one (`refresh`, a resubscription, at most once per `refreshMs`). A market that the
 * fresh SUB_IMAGE did not mend (it left the subscription) stays stale, and is not asked for again.
 */
import { systemClock, type Clock, type Ticker } from '../../lib/clock.js';
import type { Outbox } from '../outbox.js';
import type { MarketChangeMessage } from '../stream.js';
import type { Translator } from '../translate.js';

/** How long an unreliable market waits for a fresh image before the subscription is asked for one. */
export const REFRESH_MS = 10_000;

interface ForwardStats {
  /** Messages handed on (heartbeats included). */
  messages: number;
  /** Market changes among them. */
  changes: number;
  /** Problems reported: market changes that could not be applied, messages refused whole. */
  problems: number;
  /** Resubscriptions asked for a fresh image. */
  refreshes: number;
}

interface ForwarderOptions {
  translator: Translator;
  outbox: Outbox;
  problem: (text: string) => void;
  /** Asks the exchange for a fresh image of every market; false when it cannot now (no live connection). */
  refresh: () => boolean;
  refreshMs?: number;
  /** What the wait before a refresh is timed by: the system's, unless a test moves its own. */
  clock?: Clock;
}

export class Forwarder {
  readonly stats: ForwardStats = { messages: 0, changes: 0, problems: 0, refreshes: 0 };
  private readonly refreshMs: number;
  private readonly clock: Clock;
  private timer: Ticker | undefined;
  private lastRefresh = -Infinity;
  /** Markets unreliable when the last refresh was asked: still so after its image, they are given up. */
  private asked = new Set<string>();
  private readonly givenUp = new Set<string>();

  constructor(private readonly opts: ForwarderOptions) {
    this.refreshMs = opts.refreshMs ?? REFRESH_MS;
    this.clock = opts.clock ?? systemClock;
  }

  push(msg: MarketChangeMessage, where: string): void {
    const { translator, outbox } = this.opts;
    this.stats.messages++;
    this.stats.changes += msg.mc?.length ?? 0;
    const { steps, problems } = translator.apply(msg, where);
    this.stats.problems += problems.length;
    for (const p of problems) this.opts.problem(p);
    for (const step of steps) if ('item' in step) outbox.push(step.item, step.mid);
    else outbox.touch(step.mid);
    if (msg.ct === 'SUB_IMAGE' && this.asked.size) {
      const still = translator.unreliable();
      for (const mid of this.asked) if (still.has(mid)) this.givenUp.add(mid);
      this.asked.clear();
    }
    this.watch();
  }

  stop(): void {
    this.timer?.stop();
  }

  /** Markets waiting for a fresh image that a refresh could still bring. */
  private waiting(): string[] {
    return [...this.opts.translator.unreliable().keys()].filter((mid) => !this.givenUp.has(mid));
  }

  private watch(): void {
    if (this.timer || !this.waiting().length) return;
    const due = Math.max(this.refreshMs, this.lastRefresh + this.refreshMs - this.clock.now());
    this.timer = this.clock.after(due, () => {
      this.timer = undefined;
      const waiting = this.waiting();
      if (!waiting.length) return;
      if (this.opts.refresh()) {
        this.stats.refreshes++;
        this.lastRefresh = this.clock.now();
        this.asked = new Set(waiting);
      }
      this.watch();
    });
  }
}
