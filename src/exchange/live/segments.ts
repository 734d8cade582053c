/**
 * Joins a change the exchange split into segments (SEG_START, SEG..., SEG_END)
 * back into one message, so whoever reads the stream sees a change whole or
 * not at all: a connection lost mid-segment loses only the partial change,
 * and the resume (from the clk of the last whole change) sends it again.
 * What a change may hold is bounded in bytes (its lines) and in market
 * changes: a server that never ends a change is refused at the cap, and the
 * connection resumes from the last whole change.
 */
import type { Clock } from '../../lib/clock.js';
import { StreamError } from './errors.js';
import type { MarketChange, MarketChangeMessage } from '../stream.js';

export class SegmentJoiner {
  private pending: MarketChangeMessage | undefined;
  private changes: MarketChange[] = [];
  private bytes = 0;
  private startedAt: number | undefined;

  /**
   * @param maxMarkets the most market changes one joined message may hold.
   * @param maxBytes the most bytes its segments' lines may hold together.
   * @param clock what `started` is measured on (ms): the stream's reading time.
   */
  constructor(private readonly maxMarkets: number, private readonly maxBytes: number, private readonly clock: Pick<Clock, 'now'>) {}

  /** When the change being joined started on the clock, while one is. */
  get started(): number | undefined {
    return this.startedAt;
  }

  /** The whole message this one completes, or undefined while a segmented change is still arriving. */
  add(msg: MarketChangeMessage, bytes: number): MarketChangeMessage | undefined {
    switch (msg.segmentType) {
      case undefined:
        if (this.pending) throw this.broken('an unsegmented message arrived inside a segmented change');
        return msg;
      case 'SEG_START':
        if (this.pending) throw this.broken('SEG_START arrived before the previous change ended');
        this.pending = { ...msg };
        this.startedAt = this.clock.now();
        this.collect(msg, bytes);
        return undefined;
      case 'SEG':
      case 'SEG_END': {
        if (!this.pending) throw this.broken(`${msg.segmentType} arrived without a SEG_START`);
        this.collect(msg, bytes);
        // Later segments carry the newer header fields (the clk comes with the last one).
        for (const [key, value] of Object.entries(msg)) if (value !== undefined && key !== 'mc') (this.pending as unknown as Record<string, unknown>)[key] = value;
        if (msg.segmentType === 'SEG') return undefined;
        const whole: MarketChangeMessage = { ...this.pending, mc: this.changes };
        delete whole.segmentType;
        this.reset();
        return whole;
      }
      default:
        throw this.broken(`unknown segmentType ${JSON.stringify(msg.segmentType)}`);
    }
  }

  reset(): void {
    this.pending = undefined;
    this.changes = [];
    this.bytes = 0;
    this.startedAt = undefined;
  }

  private collect(msg: MarketChangeMessage, bytes: number): void {
    this.bytes += bytes;
    if (this.bytes > this.maxBytes) {
      this.reset();
      throw new StreamError('SEGMENTS_TOO_LARGE', `a segmented change passed ${this.maxBytes} bytes without its SEG_END`);
    }
    const mc = msg.mc ?? [];
    if (this.changes.length + mc.length > this.maxMarkets) {
      this.reset();
      throw new StreamError('TOO_MANY_SEGMENTS', `a segmented change held more than ${this.maxMarkets} market changes`);
    }
    for (const change of mc) this.changes.push(change);
  }

  private broken(why: string): StreamError {
    this.reset();
    return new StreamError('BAD_MESSAGE', `the stream broke its segments: ${why}`);
  }
}
