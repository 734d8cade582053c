import type { RefuseReason, Stored } from './inbound.js';

/** Markets whose claims may wait on the stream at once, and claims per market: a flood costs bounded memory and reads. */
const MAX_MARKETS = 256;
const MAX_CLAIMS = 16;

/** What the witness reads of the stream and of the pod's numbering, and what it reports: the sequencer (sequencer.ts). */
export interface WitnessDeps {
  /** The stream's last stored image of a market (checked like any bus message). */
  last(mid: string): Promise<Stored | undefined>;
  /** The stream's epoch, read from the server. */
  streamEpoch(): Promise<string>;
  /** The epoch this pod numbers in. */
  currentEpoch(): string | undefined;
  /** Takes an image the stream holds: `remote` when a claim proved true, `stored` when only the stream's own is taken. */
  accept(s: Stored, provenance: 'remote' | 'stored'): void;
  /** The stream really is in another epoch: resync. */
  moved(): void;
  refuse(s: Stored, reason: RefuseReason, detail: string, n?: number): void;
}

const same = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && Buffer.compare(a, b) === 0;

/**
 * Images fanned out by other pods are taken at their word only when each is
 * the next of its market (sequencer.ts). Any other claim (a seq that jumps, a
 * market never seen, another epoch) is checked against the stream before it
 * may reach a subscriber: the stream is where every genuine image is stored
 * before it is fanned out, so a claim it does not hold was never stored.
 */
export class Witness {
  private readonly claims = new Map<string, Stored[]>();
  private epochCheck: Promise<void> | undefined;
  /** Claims of another epoch since the epoch check began, and one of them to name in the log. */
  private strangers = 0;
  private stranger: Stored | undefined;

  constructor(private readonly deps: WitnessDeps) {}

  /** A claim in this pod's epoch that is not the next of its market. */
  check(s: Stored): void {
    const mid = s.msg.mid;
    const waiting = this.claims.get(mid);
    if (waiting) {
      if (waiting.length < MAX_CLAIMS) waiting.push(s);
      else this.deps.refuse(s, 'overload', `more than ${MAX_CLAIMS} claims of one market wait on the stream`);
      return;
    }
    if (this.claims.size >= MAX_MARKETS) return this.deps.refuse(s, 'overload', `claims of ${MAX_MARKETS} markets wait on the stream`);
    this.claims.set(mid, [s]);
    void this.settle(mid);
  }

  /** A claim in another epoch: the stream was made anew (resync), or the claim is false. */
  foreign(s: Stored): void {
    this.strangers++;
    this.stranger ??= s;
    this.epochCheck ??= this.deps.streamEpoch().then((epoch) => {
      const [n, sample] = [this.strangers, this.stranger!];
      if (epoch !== this.deps.currentEpoch()) this.deps.moved();
      else this.deps.refuse(sample, 'epoch', `epoch ${sample.msg.epoch} is not the stream's ${epoch}`, n);
    }, () => undefined).finally(() => {
      this.strangers = 0;
      this.stranger = undefined;
      this.epochCheck = undefined;
    });
  }

  private async settle(mid: string): Promise<void> {
    let last: Stored | undefined;
    try {
      last = await this.deps.last(mid);
    } catch {
      // The stream is away: the resync that follows reads every market from it anyway.
      this.claims.delete(mid);
      return;
    }
    const claims = this.claims.get(mid) ?? [];
    this.claims.delete(mid);
    let proved = false;
    for (const c of claims) {
      if (last && c.ss === last.ss && same(c.frame, last.frame)) proved = true;
      else if (!last || c.ss >= last.ss) this.deps.refuse(c, 'forged', `the stream holds ${last ? `sequence ${last.ss}` : 'nothing'} for this market`);
      // Older than what the stream holds now: superseded, and the stream's own goes out below.
    }
    if (last) this.deps.accept(last, proved ? 'remote' : 'stored');
  }
}
