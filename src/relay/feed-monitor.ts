import type { FeedStatus } from '../odds/messages.js';
import type { Clock, Ticker } from '../lib/clock.js';
import type { Component } from '../lib/component.js';

/** Told of every change of the feed status, once: the broadcaster, which tells every socket. */
export interface FeedListener {
  feedChanged(status: FeedStatus): void;
}

export interface FeedMonitorOptions {
  /** Silence from publishers after which the feed is STALE. */
  staleMs: number;
  /** How often silence is checked; a STALE comes at most this late. */
  checkMs?: number;
  clock: Clock;
}

/**
 * The one owner of the feed status. The feed is OK while some publisher was
 * heard within `staleMs` (here, or on another pod through the bus) and the bus
 * is up; otherwise STALE. A refused batch is not a publisher being heard.
 */
export class FeedMonitor implements Component {
  readonly name = 'feed monitor';
  private readonly listeners: FeedListener[] = [];
  private lastHeard: number;
  private down = false;
  private current: FeedStatus = 'OK';
  private timer: Ticker | undefined;

  constructor(private readonly opts: FeedMonitorOptions) {
    this.lastHeard = opts.clock.now();
  }

  get status(): FeedStatus {
    return this.current;
  }

  /** Registered before the first change: the status starts OK, which every listener assumes. */
  listen(listener: FeedListener): void {
    this.listeners.push(listener);
  }

  start(): void {
    this.timer ??= this.opts.clock.every(this.opts.checkMs ?? Math.min(250, this.opts.staleMs / 4), () => this.evaluate());
  }

  stop(): void {
    this.timer?.stop();
    this.timer = undefined;
  }

  /** A publisher was heard: an accepted batch here, or an image from another pod. */
  heard(): void {
    this.lastHeard = this.opts.clock.now();
    this.evaluate();
  }

  /** The bus between pods went down (true) or is back and synced (false). */
  busDown(down: boolean): void {
    this.down = down;
    this.evaluate();
  }

  /** Recomputes the status from silence and the bus; the timer calls it too. */
  evaluate(): void {
    const status: FeedStatus = this.down || this.opts.clock.now() - this.lastHeard > this.opts.staleMs ? 'STALE' : 'OK';
    if (status === this.current) return;
    this.current = status;
    for (const l of this.listeners) l.feedChanged(status);
  }
}
