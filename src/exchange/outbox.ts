/**
 * What waits to go to the service, in order, bounded in bytes, sent through the pipelined
 * publisher in batches as its window allows (batches cut to the sizes the service announced).
 * Shared by both adapters:
 *
 * - `push(item, mid)` queues an item as it is (reference rows, and the replay's images: a replay
 *   publishes every image the exchange published). A reference row is first checked against the
 *   service's own rules (ingest/validate.ts): one they refuse is kept back, counted by its market
 *   (`mid`, the market whose definition made it) and named. The rest go in batches of their
 *   own, by market: the sport, league and event rows of a market's definition in one, its market
 *   and result rows in the next, so a row the service refuses anyway (its database's rules: an ID
 *   another publisher's nested market holds) costs only that market. An item larger than the
 *   service's message limit is kept back too: sent, it would close the socket.
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
import { rowName } from '../ingest/items.js';
import { validateReference } from '../ingest/validate.js';
import { Fifo } from '../lib/fifo.js';
import { Batcher } from './batch.js';
import type { Ledger } from './ledger.js';
import { PublishError, type Ack, type Publisher } from './publisher.js';
import type { IngestItemInput } from '../odds/messages.js';
import type { Translator } from './translate.js';
import { ENVELOPE_BYTES } from './window.js';

export const OUTBOX_DEFAULTS = {
  /** Bytes queued before the outbox is full. */
  maxBytes: 8 * 1024 * 1024,
} as const;

/** What a market's slot is counted as before it is rendered: about a three-runner image. */
const SLOT_ESTIMATE = 1024;

interface Encoded {
  json: string;
  /** Its size on the wire (UTF-8). */
  bytes: number;
  kind: string;
  /** The market it is counted by: its own, or the one whose definition made it. */
  mid: string | undefined;
  /** A reference row's batch: the rows a market's definition shares with others, or the market's own; none for the feed. */
  group: string | undefined;
}

/** An item, or a market's slot; `rendered` once its batch is cut (null: nothing to tell). */
interface OutboxEntry {
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

const SHARED_ROWS: ReadonlySet<string> = new Set(['sport', 'league', 'event']);

function encode(item: IngestItemInput, owner?: string): Encoded {
  const mid = owner ?? (typeof item.mid === 'string' ? item.mid : undefined);
  const json = JSON.stringify(item);
  const feed = item.kind === 'odds' || item.kind === 'stale';
  const group = feed ? undefined : `${SHARED_ROWS.has(item.kind) ? 'shared' : 'own'} ${mid ?? ''}`;
  return { json, bytes: Buffer.byteLength(json), kind: item.kind, mid, group };
}

export class Outbox {
  readonly stats: OutboxStats = { batches: 0, fulls: 0, peakBytes: 0 };
  private readonly queue = new Fifo<OutboxEntry>();
  private readonly slots = new Map<string, OutboxEntry>();
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

  /** Queues an item; `mid`: for a reference row, the market whose definition made it. */
  push(item: IngestItemInput, mid?: string): void {
    const encoded = encode(item, mid);
    if (encoded.group !== undefined) {
      const checked = validateReference(item);
      if ('error' in checked) return this.keptBack(encoded, `${rowName(item) ?? item.kind}: ${checked.error}`);
      if (encoded.mid !== undefined) this.slots.delete(encoded.mid);
    }
    this.enqueue({ item: encoded, bytes: encoded.bytes });
  }

  touch(mid: string): void {
    if (this.slots.has(mid)) return;
    const entry: OutboxEntry = { slot: mid, bytes: SLOT_ESTIMATE };
    this.slots.set(mid, entry);
    this.enqueue(entry);
  }

  /** Resolves once the outbox has room; rejects when the publisher failed. */
  async room(): Promise<void> {
    while (this.full && !this.failure) await new Promise<void>((ok) => this.waiters.push(ok));
    if (this.failure) throw this.failure;
  }

  /** Resolves once everything queued so far is cut into batches and handed to the publisher; rejects when the publisher failed. */
  async sent(): Promise<void> {
    while (this.queue.size && !this.failure) await new Promise<void>((ok) => this.waiters.push(ok));
    if (this.failure) throw this.failure;
  }

  /** Resolves once everything queued so far is sent and acked; rejects when the publisher failed. */
  async flush(): Promise<void> {
    await this.sent();
    await this.opts.publisher.flush();
  }

  private enqueue(entry: OutboxEntry): void {
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
    const { publisher } = this.opts;
    try {
      while (this.queue.size && !this.failure) {
        // Room for the largest batch before it is cut, so a live market's image is rendered as late as it can be.
        const most = publisher.batch.bytes + ENVELOPE_BYTES;
        await publisher.room(most);
        const batch = this.cut();
        const bytes = batch.reduce((n, e) => n + e.bytes + 1, ENVELOPE_BYTES);
        // One item larger than a batch goes alone, when the window holds nothing else.
        if (bytes > most) await publisher.room(bytes);
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
    const batcher = new Batcher(this.opts.publisher.batch);
    const out: Encoded[] = [];
    for (let entry = this.queue.peek(); entry; entry = this.queue.peek()) {
      const encoded = entry.item ?? this.render(entry);
      if (encoded && !batcher.fits(encoded.bytes, encoded.group)) break;
      this.queue.shift();
      this.bytes -= entry.bytes;
      if (!encoded) continue;
      if (encoded.bytes + ENVELOPE_BYTES > this.opts.publisher.maxMessageBytes) {
        this.keptBack(encoded, `${encoded.kind} of ${encoded.mid ?? '(no market)'} is ${encoded.bytes} bytes, past the service's message limit of ${this.opts.publisher.maxMessageBytes}`);
        continue;
      }
      batcher.add(encoded.json, encoded.bytes, encoded.group);
      out.push(encoded);
    }
    return out;
  }

  /** An item the service would refuse, kept back: counted by its market and named. */
  private keptBack(e: Encoded, why: string): void {
    this.opts.problem(`kept back, as the service would refuse it: ${why}`);
    this.opts.ledger.record(e.mid ?? '(no market)', 'withheld', why);
  }

  private render(entry: OutboxEntry): Encoded | null {
    if (entry.rendered !== undefined) return entry.rendered;
    if (this.slots.get(entry.slot!) === entry) this.slots.delete(entry.slot!);
    const item = this.opts.translator.render(entry.slot!);
    entry.rendered = item ? encode(item) : null;
    const bytes = entry.rendered?.bytes ?? 0;
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
      // A batch of reference rows holds one market's.
      const [{ group, mid }] = batch;
      const what = group !== undefined && mid !== undefined ? `the reference rows of market ${mid}` : `a batch of ${batch.length} item${batch.length === 1 ? '' : 's'}`;
      problem(`the service refused ${what}: ${ack.message}`);
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
