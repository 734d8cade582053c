import t from 'tap';
import { Witness, type WitnessDeps } from '../../src/bus/nats/witness.js';
import type { RefuseReason, Stored } from '../../src/bus/nats/inbound.js';
import type { OddsImage } from '../../src/odds/image.js';
import type { OddsMessage } from '../../src/odds/messages.js';
import { imageOf } from '../helpers/images.js';

/**
 * Another pod's image that is not the next of its market reaches subscribers only once the
 * stream proves it: the stream is where every genuine image is stored before it is fanned out.
 * Over a fake stream; a flood of claims costs bounded memory and reads.
 */
const EPOCH = 'e1';

function stored(mid: string, ss: number, seq: number, price = 2, epoch = EPOCH): Stored {
  const image: OddsImage = imageOf({ mid, ts: 1, st: 'OPEN', ip: false, r: [{ rid: 1, st: 'ACTIVE', b: [[price, 10]], l: [] }] });
  const msg = { op: 'odds', mid, epoch, seq, pt: 1 } as unknown as OddsMessage;
  return { ss, msg, image, frame: new TextEncoder().encode(`${mid}|${epoch}|${seq}|${price}`) };
}

/** The stream as the witness reads it, answering when told to, and what the witness did. */
class FakeStream implements WitnessDeps {
  readonly held = new Map<string, Stored>();
  serverEpoch = EPOCH;
  podEpoch = EPOCH;
  away = false;
  reads = 0;
  readonly accepted: [Stored, 'remote' | 'stored'][] = [];
  readonly refused: { mid: string; reason: RefuseReason; detail: string; n?: number }[] = [];
  movedTimes = 0;
  private readonly waiting: (() => void)[] = [];

  async last(mid: string): Promise<Stored | undefined> {
    this.reads++;
    await new Promise<void>((go) => this.waiting.push(go));
    if (this.away) throw new Error('stream away');
    return this.held.get(mid);
  }
  async streamEpoch(): Promise<string> {
    await new Promise<void>((go) => this.waiting.push(go));
    return this.serverEpoch;
  }
  currentEpoch(): string {
    return this.podEpoch;
  }
  accept(s: Stored, provenance: 'remote' | 'stored'): void {
    this.accepted.push([s, provenance]);
  }
  moved(): void {
    this.movedTimes++;
  }
  refuse(s: Stored, reason: RefuseReason, detail: string, n?: number): void {
    this.refused.push({ mid: s.msg.mid, reason, detail, ...(n === undefined ? {} : { n }) });
  }
  /** Lets every read under way answer, and what follows from them run. */
  async answer(): Promise<void> {
    for (const go of this.waiting.splice(0)) go();
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  }
}

t.test('a claim the stream holds, byte for byte, goes out as remote; nothing refused', async (t) => {
  const stream = new FakeStream();
  const witness = new Witness(stream);
  const claim = stored('1.1', 7, 5);
  stream.held.set('1.1', claim);
  witness.check(claim);
  t.same(stream.accepted, [], 'nothing goes out before the stream answers');
  await stream.answer();
  t.same(stream.accepted, [[claim, 'remote']]);
  t.same(stream.refused, []);
});

t.test('a claim the stream does not hold is refused as forged, and the stream\'s own image goes out instead', async (t) => {
  const stream = new FakeStream();
  const witness = new Witness(stream);
  const genuine = stored('1.1', 7, 5, 2);
  stream.held.set('1.1', genuine);
  witness.check(stored('1.1', 7, 5, 1.01)); // same sequence, other bytes
  witness.check(stored('1.1', 9, 6)); // a sequence the stream never stored
  witness.check(stored('1.1', 3, 2)); // older than the stream's: superseded, not forged
  await stream.answer();
  t.same(stream.refused.map((r) => [r.reason, r.detail]), [
    ['forged', 'the stream holds sequence 7 for this market'],
    ['forged', 'the stream holds sequence 7 for this market'],
  ]);
  t.same(stream.accepted, [[genuine, 'stored']], 'the newest genuine image, once');
  t.equal(stream.reads, 1, 'one read of the stream for all claims of the market that waited together');
});

t.test('a claim of a market the stream holds nothing of is forged, and nothing goes out', async (t) => {
  const stream = new FakeStream();
  const witness = new Witness(stream);
  witness.check(stored('1.9', 1, 1));
  await stream.answer();
  t.same(stream.refused.map((r) => [r.mid, r.reason, r.detail]), [['1.9', 'forged', 'the stream holds nothing for this market']]);
  t.same(stream.accepted, []);
});

t.test('a flood of claims is refused past 16 per market and 256 markets waiting, so memory and reads stay bounded', async (t) => {
  const stream = new FakeStream();
  const witness = new Witness(stream);
  for (let i = 0; i < 20; i++) witness.check(stored('1.1', 100 + i, 100 + i));
  for (let m = 2; m <= 300; m++) witness.check(stored(`1.${m}`, 1, 1));
  const overload = stream.refused.filter((r) => r.reason === 'overload');
  t.equal(overload.filter((r) => r.mid === '1.1').length, 4, 'the 17th to 20th claims of one market');
  t.match(overload.find((r) => r.mid === '1.1')!.detail, 'more than 16 claims of one market wait on the stream');
  t.equal(overload.filter((r) => r.mid !== '1.1').length, 300 - 256, 'markets past the 256th');
  t.match(overload.find((r) => r.mid !== '1.1')!.detail, 'claims of 256 markets wait on the stream');
  t.equal(stream.reads, 256, 'one read per waiting market, no more');
  await stream.answer();
  stream.refused.length = 0;
  witness.check(stored('1.299', 1, 1));
  t.equal(stream.reads, 257, 'once they settled, a new claim is read again');
  await stream.answer();
});

t.test('the stream away: the waiting claims are dropped without a word, and the next claim is read anew', async (t) => {
  const stream = new FakeStream();
  const witness = new Witness(stream);
  stream.away = true;
  witness.check(stored('1.1', 5, 5));
  await stream.answer();
  t.same([stream.accepted, stream.refused], [[], []], 'the resync that follows reads every market anyway');
  stream.away = false;
  const genuine = stored('1.1', 5, 5);
  stream.held.set('1.1', genuine);
  witness.check(genuine);
  await stream.answer();
  t.same(stream.accepted, [[genuine, 'remote']]);
});

t.test('claims of another epoch: one check of the stream\'s epoch for all of them; its own, they are refused and counted; another, the pod resyncs', async (t) => {
  const stream = new FakeStream();
  const witness = new Witness(stream);
  witness.foreign(stored('1.1', 1, 1, 2, 'e0'));
  witness.foreign(stored('1.2', 1, 1, 2, 'e0'));
  witness.foreign(stored('1.3', 1, 1, 2, 'e0'));
  await stream.answer();
  t.same(stream.refused, [{ mid: '1.1', reason: 'epoch', detail: 'epoch e0 is not the stream\'s e1', n: 3 }], 'one refusal naming the first, counting all three');
  t.equal(stream.movedTimes, 0);
  stream.serverEpoch = 'e2';
  witness.foreign(stored('1.1', 1, 1, 2, 'e2'));
  await stream.answer();
  t.equal(stream.movedTimes, 1, 'the stream was made anew: resync');
  t.equal(stream.refused.length, 1, 'nothing more refused');
});
