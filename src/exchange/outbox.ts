/**
 * What waits to go to the service, in order, bounded in bytes, sent through the pipelined
 * publisher in batches as its window allows. Shared by both adapters:
 *
 * - `push(item)` queues an item as it is (reference rows, and the replay's images: a replay
 *   publishes every image the exchange published).
 * - `touch(mid)` queues the market's newest state, rendered by the translator only when its
 *   batch is cut: while the service is behind, a busy market's changes merge into that one slot,
 *   so the live adapter sends the newest image of a market rather than every one. A reference
 *   item of the market closes its slot, so the market's rows and images keep their order.
 *
 * Past `maxBytes` queued the outbox says it is full (`pressure(true)`): the live adapter stops
 * reading the exchange's socket, so the exchange conflates for it; under half of it, room again.
 * Each ack is accounted by market in the ledger: images published, items the service refused
 * (one by one from the ack's `refused`, or a whole batch). Heartbeats are the publisher's own.
 */
import { Fifo } from '../lib/fifo.js';
import { Batcher } from './batch.js';
import type { Ledger } from './ledger.js';
import { PublishError, type Ack, type Publisher } from './publisher.js';
import type { IngestItemInput } from '../odds/messages.js';
import type { Translator } from './translate.js';

export const OUTBOX_DEFAULTS = {
  /** Bytes queued before the outbox is full. */
  maxBytes: 8 * 1024 * 1024,
} as const;

/** What a market's slot is counted as before it is rendered: about a three-runner image. */
const SLOT_ESTIMATE = 1024;

interface Encoded {
  json: string;
  /** Odds images and stale marks: the feed, published after a batch's reference rows. */
  feed: boolean;
  kind: string;
  mid: string | undefined;
}

/** An item, or a market's slot; `rendered` once its batch is cut (null: nothing to tell). */
interface Entry {
  item?: Encoded;
  slot?: string;
  rendered?: Encoded | null;
  bytes: number;
}

interface OutboxOptions {
  publisher: Publisher;
  translator: Translator;
  ledger: Ledger;
  problem: (text: string) => void;
  maxBytes?: number;
  /** Told true when the outbox fills, false when it has room again. */
  pressure?: (full: boolean) => void;
}

export interface OutboxStats {
  batches: number;
  /** Times the outbox filled. */
  fulls: number;
  /** The most bytes queued at once. */
  peakBytes: number;
}

function encode(item: IngestItemInput): Encoded {
  const mid = typeof item.mid === 'string' ? item.mid : undefined;
  return { json: JSON.stringify(item), feed: item.kind === 'odds' || item.kind === 'stale', kind: item.kind, mid };
}

export class Outbox {
  readonly stats: OutboxStats = { batches: 0, fulls: 0, peakBytes: 0 };
  private readonly queue = new Fifo<Entry>();
  private readonly slots = new Map<string, Entry>();
  private bytes = 0;
  private full = false;
  private pumping = false;
  private waiters: (() => void)[] = [];
  private readonly maxBytes: number;
  private failure: PublishError | undefined;

  constructor(private readonly opts: OutboxOptions) {
    this.maxBytes = opts.maxBytes ?? OUTBOX_DEFAULTS.maxBytes;
  }

  get queuedBytes(): number {
    return this.bytes;
  }

  get isFull(): boolean {
    return this.full;
  }

  push(item: IngestItemInput): void {
    const encoded = encode(item);
    if (!encoded.feed && encoded.mid !== undefined) this.slots.delete(encoded.mid);
    this.enqueue({ item: encoded, bytes: encoded.json.length });
  }

  touch(mid: string): void {
    if (this.slots.has(mid)) return;
    const entry: Entry = { slot: mid, bytes: SLOT_ESTIMATE };
    this.slots.set(mid, entry);
    this.enqueue(entry);
  }

  /** Resolves once the outbox has room; rejects when the publisher failed. */
  async room(): Promise<void> {
    while (this.full && !this.failure) await new Promise<void>((ok) => this.waiters.push(ok));
    if (this.failure) throw this.failure;
  }

  /** Resolves once everything queued so far is sent and acked; rejects when the publisher failed. */
  async flush(): Promise<void> {
    while (this.queue.size && !this.failure) await new Promise<void>((ok) => this.waiters.push(ok));
    if (this.failure) throw this.failure;
    await this.opts.publisher.flush();
  }

  private enqueue(entry: Entry): void {
    this.queue.push(entry);
    this.bytes += entry.bytes;
    if (this.bytes > this.stats.peakBytes) this.stats.peakBytes = this.bytes;
    if (!this.full && this.bytes >= this.maxBytes) {
      this.full = true;
      this.stats.fulls++;
      this.opts.pressure?.(true);
    }
    if (this.pumping) return;
    // What comes in the same turn of the event loop (one read of a file or of the exchange's socket) goes out together.
    this.pumping = true;
    setImmediate(() => void this.pump());
  }

  private async pump(): Promise<void> {
    try {
      while (this.queue.size && !this.failure) {
        await this.opts.publisher.room();
        const batch = this.cut();
        if (batch.length) this.send(batch);
        this.relieve();
      }
    } catch (err) {
      this.failure = err instanceof PublishError ? err : new PublishError((err as Error).message);
    } finally {
      this.pumping = false;
      this.wake();
    }
  }

  /** The next batch from the head of the queue, slots rendered now. */
  private cut(): Encoded[] {
    const batcher = new Batcher();
    const out: Encoded[] = [];
    for (let entry = this.queue.peek(); entry; entry = this.queue.peek()) {
      const encoded = entry.item ?? this.render(entry);
      if (encoded && !batcher.fits(encoded.json, encoded.feed)) break;
      this.queue.shift();
      this.bytes -= entry.bytes;
      if (!encoded) continue;
      batcher.add(encoded.json, encoded.feed);
      out.push(encoded);
    }
    return out;
  }

  private render(entry: Entry): Encoded | null {
    if (entry.rendered !== undefined) return entry.rendered;
    if (this.slots.get(entry.slot!) === entry) this.slots.delete(entry.slot!);
    const item = this.opts.translator.render(entry.slot!);
    entry.rendered = item ? encode(item) : null;
    const bytes = entry.rendered?.json.length ?? 0;
    this.bytes += bytes - entry.bytes;
    entry.bytes = bytes;
    return entry.rendered;
  }

  private send(batch: Encoded[]): void {
    this.stats.batches++;
    this.opts.publisher.sendEncoded(batch.map((e) => e.json)).then((ack) => this.account(batch, ack), () => undefined);
  }

  private account(batch: Encoded[], ack: Ack): void {
    const { ledger, problem } = this.opts;
    if (ack.status === 0) {
      problem(`the service refused a batch of ${batch.length} items: ${ack.message}`);
      for (const e of batch) if (e.mid !== undefined) ledger.record(e.mid, 'refused', ack.message);
      return;
    }
    const refused = new Map(ack.refused.map((r) => [r.i, r]));
    for (const [i, e] of batch.entries()) {
      const r = refused.get(i);
      if (r) {
        problem(`the service refused ${e.kind} of ${e.mid ?? '(no market)'}: ${r.message}`);
        ledger.record(r.mid || e.mid || '(no market)', 'refused', r.message);
      } else if (e.kind === 'odds') {
        ledger.record(e.mid!, 'published');
      }
    }
  }

  private relieve(): void {
    if (this.full && this.bytes <= this.maxBytes / 2) {
      this.full = false;
      this.opts.pressure?.(false);
    }
    this.wake();
  }

  private wake(): void {
    for (const ok of this.waiters.splice(0)) ok();
  }
}
