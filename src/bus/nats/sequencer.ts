import { newEpoch, type Ordered } from '../../odds/book.js';
import { encodeProto } from '../../odds/codec.js';
import { oddsMessage, type OddsImage } from '../../odds/image.js';
import type { Logger } from '../../log.js';
import { Repeater } from '../../lib/repeat.js';
import { eachLimit, type SerialByKey } from '../../lib/serial.js';
import type { BusBook, OddsHandler } from '../types.js';
import { isWrongLast, type ImageStream } from './stream.js';
import type { Inbound, RefuseReason, Stored } from './inbound.js';
import { Witness, type WitnessDeps } from './witness.js';

export interface SequencerDeps {
  prefix: string;
  book: BusBook;
  log: Logger;
  odds: OddsHandler;
  /** The bus's per-market queue: numbering and storing one market happen one at a time. */
  serial: SerialByKey<string>;
  /** Checks what is read from the bus, and counts what it refuses. */
  inbound: Inbound;
}

/** Writes that lose a race to another pod are retried after reading the winner; this many times at most. */
const MAX_TRIES = 16;
const RECONCILE_CONCURRENCY = 32;

/**
 * Numbers images across pods. Up: each image gets its market's next seq in
 * the stream's epoch and is stored under the expected last sequence of its
 * subject; a pod that lost a race reads the winner and tries again. Down:
 * the pod numbers images in an epoch of its own and keeps the newest of each
 * market. Syncing (after every connect, or when a write failed): the newest
 * image of each market, by publish time, is stored unless the stream already
 * holds a newer one, then every stored image is read back. A new stream (lost
 * or recreated) is a new epoch, and everything this pod holds is offered to it.
 * It is also what the witness checks other pods' claims against and reports to.
 */
export class Sequencer implements WitnessDeps {
  private stream: ImageStream | undefined;
  /** The stream's epoch is confirmed since the last loss: images may be stored. */
  private ready = false;
  /** Synced since the last loss: reported up. */
  private inSync = false;
  private epoch: string | undefined;
  /** Per market, the last stored image this pod knows of, in `epoch`. */
  private readonly heads = new Map<string, { ss: number; seq: number }>();
  private localEpoch: string | undefined;
  /** Images numbered here while not in sync, newest per market: to be stored once back. */
  private readonly pending = new Map<string, Ordered>();
  /** Counts losses of sync, so a sync that spanned one runs again. */
  private generation = 0;
  private readonly sync = new Repeater(() => this.syncOnce(), (err) => this.deps.log.warn('nats resync failed; retrying', { err: (err as Error).message }));
  private firstSync: (() => void) | undefined;
  private readonly firstSynced = new Promise<void>((ok) => (this.firstSync = ok));
  private readonly witness: Witness;

  constructor(private readonly deps: SequencerDeps) {
    this.witness = new Witness(this);
  }

  /** The stream of a new connection: numbering goes through it from the next sync on. */
  attach(stream: ImageStream): void {
    this.stream = stream;
  }

  synced(): Promise<void> {
    return this.firstSynced;
  }

  /** The connection dropped, or a write failed: number locally until the stream is confirmed again. */
  lost(): void {
    this.generation++;
    this.ready = false;
    if (this.inSync) this.deps.odds.down(true);
    this.inSync = false;
  }

  stop(): void {
    this.sync.stop();
  }

  /** Syncs until one sync completes with nothing left pending and no loss meanwhile. */
  requestSync(): Promise<void> {
    return this.sync.request();
  }

  async publish(image: OddsImage, publishTime: number): Promise<void> {
    for (let tries = 0; this.ready && tries < MAX_TRIES; tries++) {
      try {
        await this.store(image, publishTime);
        return;
      } catch (err) {
        if (isWrongLast(err) && (await this.readLast(image.marketId).then(() => true, () => false))) continue;
        this.deps.log.warn('nats did not store an image; numbering locally until resynced', { mid: image.marketId, err: (err as Error).message });
        this.lost();
        void this.requestSync();
      }
    }
    this.number(image, publishTime);
    // Every race lost with the stream still answering: only a sync stores what was numbered alone.
    if (this.ready) void this.requestSync();
  }

  /** Numbers an image on this pod alone, in an epoch of its own, to be stored once the bus is back. */
  number(image: OddsImage, publishTime: number): void {
    const epoch = (this.localEpoch ??= newEpoch('l'));
    const o: Ordered = { epoch, seq: this.deps.book.next(image.marketId, epoch), publishTime, image };
    this.pending.set(image.marketId, o);
    this.deps.odds.odds(o, 'local');
  }

  /**
   * An image another pod stored and fanned out, its shape already checked.
   * Taken at its word only as the next of its market; any other claim waits
   * on the stream's word (witness.ts), so a forged seq cannot get ahead of
   * the real numbering.
   */
  received(s: Stored): void {
    const { msg } = s;
    if (msg.epoch !== this.epoch) {
      // Before the first sync there is no epoch to compare with, and the sync reads everything.
      if (this.ready) this.witness.foreign(s);
      return;
    }
    const head = this.heads.get(msg.mid);
    // This pod's own image echoed back, or a copy older than one already held.
    if (head && s.ss <= head.ss && msg.seq <= head.seq) return;
    if (head && s.ss > head.ss && msg.seq === head.seq + 1) return this.accept(s, 'remote');
    this.witness.check(s);
  }

  // What the witness (witness.ts) reads of the stream and of this pod's numbering, and what it reports.

  /** The stream's last stored image of a market. */
  async last(mid: string): Promise<Stored | undefined> {
    return (await this.stream!.last(mid))?.stored;
  }

  streamEpoch(): Promise<string> {
    return this.stream!.ensure();
  }

  currentEpoch(): string | undefined {
    return this.epoch;
  }

  /** The stream was made anew under this pod: number locally until synced with it. */
  moved(): void {
    if (!this.ready) return;
    this.lost();
    void this.requestSync();
  }

  /** A claim the witness found false is counted and logged as a refused image. */
  refuse(s: Stored, reason: RefuseReason, detail: string, n?: number): void {
    this.deps.inbound.refuse('image', `${this.deps.prefix}.img.${s.msg.mid}`, reason, detail, n);
  }

  /** Takes an image in this epoch, stored (read back, or proved by the witness) or the next of its market from another pod. */
  accept(s: Stored, provenance: 'remote' | 'stored'): void {
    const { msg } = s;
    if (msg.epoch !== this.epoch) return;
    const head = this.heads.get(msg.mid);
    if (!head || s.ss > head.ss) this.heads.set(msg.mid, { ss: s.ss, seq: msg.seq });
    // A newer image of ours is about to be stored over it: keeping this one meanwhile would step back.
    if ((this.pending.get(msg.mid)?.publishTime ?? -1) > msg.pt) return;
    this.deps.odds.odds({ epoch: msg.epoch, seq: msg.seq, publishTime: msg.pt, image: s.image, frame: s.frame }, provenance);
  }

  /** One sync; true when it completed with nothing left pending and no loss meanwhile. */
  private async syncOnce(): Promise<boolean> {
    const stream = this.stream;
    if (!stream || stream.closed()) return true;
    const generation = this.generation;
    const epoch = await stream.ensure();
    if (epoch !== this.epoch) {
      if (this.epoch) this.deps.log.warn('nats stream is new: numbering starts a new epoch', { from: this.epoch, to: epoch });
      this.epoch = epoch;
      this.heads.clear();
      // The stream may have lost everything: every image this pod holds may be the newest anyone has.
      for (const e of this.deps.book.values()) {
        if (e.epoch !== epoch && !this.pending.has(e.marketId)) this.pending.set(e.marketId, { epoch: e.epoch, seq: e.seq, publishTime: e.publishTime, image: e.image });
      }
    }
    // From here new images go to the stream; only what was numbered alone is left to reconcile.
    this.ready = true;
    await stream.loadAll((s) => this.accept(s, 'stored'));
    while (this.pending.size) {
      await eachLimit([...this.pending.values()], RECONCILE_CONCURRENCY, (o) => this.deps.serial.run(o.image.marketId, () => this.reconcile(o)));
    }
    if (generation !== this.generation || this.pending.size) return false;
    this.inSync = true;
    this.localEpoch = undefined;
    this.deps.odds.down(false);
    this.firstSync?.();
    this.deps.log.info('nats in sync', { epoch: this.epoch, markets: this.heads.size });
    return true;
  }

  /** Stores a pending image unless the stream already holds one as new or newer (by publish time). */
  private async reconcile(o: Ordered): Promise<void> {
    const mid = o.image.marketId;
    for (let tries = 0; tries < MAX_TRIES && this.pending.get(mid) === o; tries++) {
      const last = await this.readLast(mid);
      if (!last.stored || last.stored.msg.pt < o.publishTime) {
        try {
          // Expects the image just compared, not this pod's head: another pod's newer image heard of
          // since (received) moves the head, and storing over it would put an older image last.
          await this.store(o.image, o.publishTime, last.ss);
        } catch (err) {
          if (isWrongLast(err)) continue;
          throw err;
        }
      }
      if (this.pending.get(mid) === o) this.pending.delete(mid);
      return;
    }
    if (this.pending.get(mid) === o) throw new Error(`could not store the newest image of ${mid}: ${MAX_TRIES} races lost`);
  }

  /** Stores an image as its market's next in the epoch and hands it on: here first, then to other pods. */
  private async store(image: OddsImage, publishTime: number, expect?: number): Promise<void> {
    const mid = image.marketId;
    const epoch = this.epoch!;
    const head = this.heads.get(mid);
    const held = this.deps.book.get(mid);
    const seq = Math.max(head?.seq ?? 0, held?.epoch === epoch ? held.seq : 0) + 1;
    const frame = encodeProto(oddsMessage(image, { epoch, seq, publishTime }));
    const ss = await this.stream!.store(mid, frame, expect ?? head?.ss ?? 0);
    if (!head || ss > head.ss) this.heads.set(mid, { ss, seq });
    this.deps.odds.odds({ epoch, seq, publishTime, image, frame }, 'local');
    this.stream!.share(mid, ss, frame);
  }

  /**
   * Reads a market's last stored image after a lost race, and learns from it:
   * its stream sequence (0: none), and the image unless there is none this pod
   * can take (then the next write stores over whatever is there).
   */
  private async readLast(mid: string): Promise<{ ss: number; stored: Stored | undefined }> {
    const last = await this.stream!.last(mid);
    const stored = last?.stored && last.stored.msg.epoch === this.epoch ? last.stored : undefined;
    if (stored) this.accept(stored, 'stored');
    // Nothing stored (it aged out, or was purged), or something refused: the next write expects what is there, and seq still rises.
    else this.heads.set(mid, { ss: last?.ss ?? 0, seq: this.heads.get(mid)?.seq ?? 0 });
    return { ss: last?.ss ?? 0, stored };
  }
}
