import t from 'tap';
import { Registry } from 'prom-client';
import { Sequencer } from '../../src/bus/nats/sequencer.js';
import { Inbound, type Stored } from '../../src/bus/nats/inbound.js';
import { envelope, type ImageStream, type LastStored } from '../../src/bus/nats/stream.js';
import type { OddsHandler, Provenance } from '../../src/bus/types.js';
import type { Ordered } from '../../src/odds/book.js';
import { validateOdds } from '../../src/ingest/validate-odds.js';
import { SerialByKey } from '../../src/lib/serial.js';
import { createLogger } from '../../src/log.js';
import { BusMetrics } from '../../src/metrics/bus.js';
import { Book } from '../../src/odds/book.js';
import { decodeServerProto, encodeProto } from '../../src/odds/codec.js';
import { oddsMessage, type OddsImage } from '../../src/odds/image.js';
import { imageOf } from '../helpers/images.js';
import { waitFor } from '../helpers/wait.js';

/**
 * How pods number each market's images through the NATS stream (sequencer.ts), over a fake
 * stream with JetStream's rules: one last message per market, a write stored only when it names
 * the market's last stream sequence. What a subscriber relies on: within an epoch a market's seq
 * rises by exactly one per image whichever pod took it, no two pods give one seq to different
 * images, and an image numbered while the bus was away is not lost once it is back.
 */
const PREFIX = 'odds';
const log = createLogger('error', false, () => undefined);
const M = '1.100';
const M2 = '1.200';

function image(mid: string, price: number): OddsImage {
  return imageOf({ mid, ts: 1, st: 'OPEN', ip: false, r: [{ rid: 1, st: 'ACTIVE', b: [[price, 10]], l: [] }] });
}

const price = (i: OddsImage): number => i.runners[0].back[0][0];

/** JetStream's answer to a write whose expected last sequence of the subject is not the actual one. */
const wrongLast = (): Error => Object.assign(new Error('wrong last sequence'), { api_error: { err_code: 10071 } });

/**
 * The stream as every pod's link sees it: what is stored (the last of each market), what was
 * fanned out and not yet delivered, and writes of a pod the test plays itself.
 */
class FakeStream implements ImageStream {
  readonly registry = new Registry();
  readonly inbound = new Inbound({ prefix: PREFIX, check: validateOdds, metrics: new BusMetrics(this.registry, 'nats'), log });
  epoch = 'sfirst';
  /** The last of each market, as `max_msgs_per_subject: 1` keeps it. */
  private readonly held = new Map<string, { ss: number; frame: Uint8Array }>();
  /** Fanned out to every pod, in order, until `deliver`. */
  readonly fanned: { mid: string; ss: number; frame: Uint8Array }[] = [];
  stores = 0;
  reads = 0;
  /** Per market, how many of its next writes here lose a race: another pod stores an image of it just before each. */
  readonly rivals = new Map<string, number>();
  /** The next write fails with this error (a timeout, the connection lost). */
  failNext: Error | undefined;
  /** Runs once, between the next read of a market's last image and its answer: what other pods do meanwhile. */
  meanwhile: (() => Promise<void>) | undefined;
  private ss = 0;

  async ensure(): Promise<string> {
    return this.epoch;
  }

  async store(mid: string, frame: Uint8Array, expect: number): Promise<number> {
    this.stores++;
    const fail = this.failNext;
    this.failNext = undefined;
    if (fail) throw fail;
    const rivals = this.rivals.get(mid) ?? 0;
    if (rivals > 0) {
      this.rivals.set(mid, rivals - 1);
      this.rival(mid, 9);
    }
    if ((this.held.get(mid)?.ss ?? 0) !== expect) throw wrongLast();
    this.held.set(mid, { ss: ++this.ss, frame });
    return this.ss;
  }

  async last(mid: string): Promise<LastStored | undefined> {
    this.reads++;
    const h = this.held.get(mid);
    const meanwhile = this.meanwhile;
    this.meanwhile = undefined;
    await meanwhile?.();
    return h && { ss: h.ss, stored: this.inbound.image('stream', `${PREFIX}.raw.${mid}`, h.ss, h.frame) };
  }

  async loadAll(each: (s: Stored) => void): Promise<number> {
    for (const [mid, h] of this.held) {
      const s = this.inbound.image('stream', `${PREFIX}.raw.${mid}`, h.ss, h.frame);
      if (s) each(s);
    }
    return this.held.size;
  }

  share(mid: string, ss: number, frame: Uint8Array): void {
    this.fanned.push({ mid, ss, frame });
  }

  closed(): boolean {
    return false;
  }

  /** Another pod stores an image of a market: the next seq after what the stream holds, in its epoch. */
  private rival(mid: string, at: number): void {
    const last = this.held.get(mid);
    const held = last && decodeServerProto(last.frame);
    const seq = held?.op === 'odds' ? held.seq + 1 : 1;
    const frame = encodeProto(oddsMessage(image(mid, at), { epoch: this.epoch, seq, publishTime: 1 }));
    this.held.set(mid, { ss: ++this.ss, frame });
  }

  /** Hands everything fanned out so far to these pods, as the subscription on `<prefix>.img.>` does; `skip` is lost on the way. */
  deliver(pods: Pod[], skip = -1): void {
    for (const [i, f] of this.fanned.splice(0).entries()) {
      if (i === skip) continue;
      for (const pod of pods) {
        const s = this.inbound.envelope(`${PREFIX}.img.${f.mid}`, envelope(f.ss, f.frame));
        if (s) pod.seq.received(s);
      }
    }
  }

  /** The stream lost and made again: a new epoch, nothing stored. */
  recreate(epoch: string): void {
    this.epoch = epoch;
    this.held.clear();
    this.ss = 0;
  }

  /** The stored image of a market: its epoch, seq and price. */
  storedOf(mid: string): { epoch: string; seq: number; price: number } | undefined {
    const h = this.held.get(mid);
    const s = h && this.inbound.image('stream', `${PREFIX}.raw.${mid}`, h.ss, h.frame);
    return s && { epoch: s.msg.epoch, seq: s.msg.seq, price: price(s.image) };
  }
}

/** One pod's numbering, with what it handed its odds path, which keeps them in its book as the relay does. */
class Pod implements OddsHandler {
  readonly book = new Book();
  readonly got: { provenance: Provenance; mid: string; epoch: string; seq: number; price: number; pt: number; frame?: Uint8Array }[] = [];
  /** Every down(...) reported, in order. */
  readonly downs: boolean[] = [];
  readonly seq: Sequencer;
  /** As the bus runs them: one market's publishes one at a time. */
  private readonly serial = new SerialByKey<string>();

  constructor(readonly stream: FakeStream) {
    this.seq = new Sequencer({ prefix: PREFIX, book: this.book, log, odds: this, serial: this.serial, inbound: stream.inbound });
  }

  odds(o: Ordered, provenance: Provenance): void {
    this.got.push({ provenance, mid: o.image.marketId, epoch: o.epoch, seq: o.seq, price: price(o.image), pt: o.publishTime, ...(o.frame ? { frame: o.frame } : {}) });
    this.book.put(o);
  }

  down(isDown: boolean): void {
    this.downs.push(isDown);
  }

  /** Connected: the bus attaches the stream and syncs. */
  async connect(): Promise<void> {
    this.seq.attach(this.stream);
    await this.seq.requestSync();
  }

  publish(mid: string, at: number, pt = 1): Promise<void> {
    return this.serial.run(mid, () => this.seq.publish(image(mid, at), pt));
  }

  /** What it handed on, one line each: `provenance mid epoch/seq price`, the pod's own epochs (random) as `l*`. */
  lines(from = 0, to?: number): string[] {
    return this.got.slice(from, to).map((g) => `${g.provenance} ${g.mid} ${g.epoch.startsWith('l') ? 'l*' : g.epoch}/${g.seq} ${g.price}`);
  }

  /** What its book holds for a market, as a subscriber gets it: `epoch/seq price`. */
  holds(mid: string): string | undefined {
    const e = this.book.get(mid);
    return e && `${e.epoch.startsWith('l') ? 'l*' : e.epoch}/${e.seq} ${price(e.image)}`;
  }
}

/** The stream's word on a market as `epoch/seq price`, as a pod that syncs reads it. */
function stored(stream: FakeStream, mid: string): string | undefined {
  const s = stream.storedOf(mid);
  return s && `${s.epoch}/${s.seq} ${s.price}`;
}

t.test('numbering: each market\'s seq rises by exactly one per image, in the order given, in the stream\'s epoch; each is stored, then handed on with its frame and fanned out', async (t) => {
  const stream = new FakeStream();
  const a = new Pod(stream);
  await a.connect();
  t.same(a.downs, [false], 'synced with the stream: the bus is reported up');
  await Promise.all([a.publish(M, 2, 100), a.publish(M, 2.02, 101), a.publish(M2, 3, 102), a.publish(M, 2.04, 103), a.publish(M2, 3.05, 104)]);
  t.same(a.lines(), [
    'local 1.100 sfirst/1 2', 'local 1.200 sfirst/1 3', 'local 1.100 sfirst/2 2.02', 'local 1.200 sfirst/2 3.05', 'local 1.100 sfirst/3 2.04',
  ], 'each market 1, 2, 3... in the order its images were given, the two markets side by side');
  t.same(a.got.map((g) => g.pt), [100, 102, 101, 104, 103], 'each with the publish time it was given');
  t.same([stored(stream, M), stored(stream, M2)], ['sfirst/3 2.04', 'sfirst/2 3.05'], 'the stream holds the newest of each market');
  t.equal(stream.stores, 5, 'one write per image: none lost a race');
  t.same(stream.fanned.map((f) => [f.mid, f.ss]), [[M, 1], [M2, 2], [M, 3], [M2, 4], [M, 5]], 'fanned out behind its stream sequence');
  t.ok(a.got.every((g, i) => g.frame && Buffer.compare(g.frame, stream.fanned[i].frame) === 0), 'the odds path got the very frame stored and fanned out');
});

t.test('a race: a pod that writes a market another pod has just stored reads the winner, hands it on, and numbers its own next, so no seq is given twice', async (t) => {
  const stream = new FakeStream();
  const [a, b] = [new Pod(stream), new Pod(stream)];
  await a.connect();
  await b.connect();
  await a.publish(M, 2);
  // B has not heard of A's image yet (it is on its way): its write expects an empty market and loses.
  await b.publish(M, 2.02);
  t.same(b.lines(), ['stored 1.100 sfirst/1 2', 'local 1.100 sfirst/2 2.02'], 'B took A\'s image from the stream, then its own as the next');
  t.equal(stream.stores, 3, 'B wrote twice: the lost race and the retry');
  t.equal(stream.reads, 1, 'one read of the market after the lost race');
  stream.deliver([a, b]);
  t.same(a.lines(), ['local 1.100 sfirst/1 2', 'remote 1.100 sfirst/2 2.02'], 'A takes B\'s image as the next of the market, and its own echo not twice');
  t.equal(stream.reads, 1, 'the next of a market is taken without asking the stream');
  t.same(b.got.length, 2, 'B\'s echoes are not handed on again');
  t.same([a.holds(M), b.holds(M), stored(stream, M)], ['sfirst/2 2.02', 'sfirst/2 2.02', 'sfirst/2 2.02'], 'both pods hold what the stream holds');
});

t.test('a market contested without end: after 16 lost races the image is numbered on this pod alone, so its publisher is not held for ever, and stored once the races end', async (t) => {
  const stream = new FakeStream();
  const a = new Pod(stream);
  await a.connect();
  // Exactly the publish's sixteen tries lose; the sync it asks for then finds the market quiet.
  stream.rivals.set(M, 16);
  await a.publish(M, 2, 100);
  t.equal(stream.stores, 16, 'sixteen writes, each beaten by another pod\'s');
  t.same(a.lines().slice(-2), ['stored 1.100 sfirst/16 9', 'local 1.100 l*/1 2'], 'each winner handed on, then its own image in an epoch of its own');
  await waitFor(() => stored(stream, M) === 'sfirst/17 2', () => `the image numbered alone was never stored: the stream holds ${stored(stream, M)}`, 2000);
  t.same(a.lines().slice(-1), ['local 1.100 sfirst/17 2'], 'then stored as the market\'s next, for every pod');
  t.same(a.holds(M), 'sfirst/17 2', 'the pod holds what the stream holds');
  t.notOk(a.downs.includes(true), `the stream answered every time: the bus is never reported down (${JSON.stringify(a.downs)})`);
});

t.test('a write that fails (a timeout): the bus is reported down, the image numbered alone, and once resynced stored as its market\'s next', async (t) => {
  const stream = new FakeStream();
  const a = new Pod(stream);
  await a.connect();
  await a.publish(M, 2, 100);
  stream.failNext = new Error('timeout');
  await a.publish(M, 2.02, 200);
  t.same(a.lines(1, 2), ['local 1.100 l*/1 2.02'], 'subscribers get it at once, in the pod\'s own epoch');
  await waitFor(() => a.downs.length === 3, () => `the resync never ended: downs ${JSON.stringify(a.downs)}`, 2000);
  t.same(a.downs, [false, true, false], 'down while it numbered alone, up once resynced');
  t.same(a.lines(2), ['local 1.100 sfirst/2 2.02'], 'its image stored as the next of the stream\'s, and the older stored one not handed back meanwhile');
  t.same([a.holds(M), stored(stream, M)], ['sfirst/2 2.02', 'sfirst/2 2.02'], 'the pod holds what the stream holds');
  t.same(stream.fanned.map((f) => f.ss), [1, 2], 'and fanned out to the other pods');
  await a.publish(M, 2.04, 300);
  t.same(a.lines(3), ['local 1.100 sfirst/3 2.04'], 'numbering goes on through the stream');
});

t.test('epochs: a stream made anew starts a new epoch, numbering starts again at 1, and the pod offers the newest image it holds of each market', async (t) => {
  const stream = new FakeStream();
  const a = new Pod(stream);
  await a.connect();
  await a.publish(M, 2, 100);
  await a.publish(M, 2.02, 110);
  await a.publish(M2, 3, 120);
  stream.recreate('ssecond');
  // The link dropped and came back to a stream that lost everything.
  a.seq.lost();
  await a.seq.requestSync();
  t.same(a.downs, [false, true, false], 'down from the loss until synced with the new stream');
  t.same(a.lines(3).sort(), ['local 1.100 ssecond/1 2.02', 'local 1.200 ssecond/1 3'], 'each market\'s newest, as the first of the new epoch');
  t.same([stored(stream, M), stored(stream, M2)], ['ssecond/1 2.02', 'ssecond/1 3'], 'the new stream holds them, for every other pod');
  await a.publish(M, 2.04, 130);
  t.same(a.lines(5), ['local 1.100 ssecond/2 2.04'], 'and rises by one from there');
});

t.test('epochs: a pod learns the stream was made anew from another pod\'s image in the new epoch, checks it with the stream, and resyncs', async (t) => {
  const stream = new FakeStream();
  const a = new Pod(stream);
  await a.connect();
  await a.publish(M, 2, 100);
  stream.deliver([]);
  stream.recreate('ssecond');
  const b = new Pod(stream);
  await b.connect();
  await b.publish(M2, 3, 200);
  stream.deliver([a]);
  await waitFor(() => a.downs.length === 3, () => `A never resynced: downs ${JSON.stringify(a.downs)}`, 2000);
  t.same(a.downs, [false, true, false], 'down until resynced with the new stream');
  t.same(a.lines(1).sort(), ['local 1.100 ssecond/1 2', 'stored 1.200 ssecond/1 3'], 'B\'s image as the stream holds it, and its own offered to the new stream');
  t.same([stored(stream, M), stored(stream, M2)], ['ssecond/1 2', 'ssecond/1 3'], 'the new stream holds both');
});

t.test('restarts: a pod started against a stream that holds images takes each market\'s newest as stored and numbers on from it', async (t) => {
  const stream = new FakeStream();
  const a = new Pod(stream);
  await a.connect();
  for (const p of [2, 2.02, 2.04]) await a.publish(M, p);
  await a.publish(M2, 3);
  const restarted = new Pod(stream);
  await restarted.connect();
  await t.resolves(restarted.seq.synced(), 'the start\'s wait for the first sync ends');
  t.same(restarted.lines().sort(), ['stored 1.100 sfirst/3 2.04', 'stored 1.200 sfirst/1 3'], 'what the stream holds, as stored');
  t.same(restarted.downs, [false], 'reported up once synced');
  await restarted.publish(M, 2.06);
  t.same(restarted.lines(2), ['local 1.100 sfirst/4 2.06'], 'the next seq after the stream\'s, not 1');
});

t.test('a pod that started while NATS was away numbers alone, and once connected the newest image of each market by publish time wins', async (t) => {
  const stream = new FakeStream();
  const a = new Pod(stream);
  await a.connect();
  await a.publish(M, 2, 300);
  await a.publish(M2, 3, 100);
  const b = new Pod(stream);
  await b.publish(M, 1.5, 200);
  await b.publish(M2, 3.5, 400);
  t.same(b.lines(), ['local 1.100 l*/1 1.5', 'local 1.200 l*/1 3.5'], 'numbered alone, in an epoch of its own');
  t.same(b.downs, [], 'nothing reported up before a sync');
  await b.connect();
  t.same(b.downs, [false], 'reported up once synced');
  t.same([b.holds(M), stored(stream, M)], ['sfirst/1 2', 'sfirst/1 2'], 'the stream\'s image of M is newer than B\'s: B takes it, and never stores its own');
  t.same([b.holds(M2), stored(stream, M2)], ['sfirst/2 3.5', 'sfirst/2 3.5'], 'B\'s image of M2 is newer: stored as the next of the stream\'s');
});

t.test('another pod\'s images: a market\'s first and any gap wait on the stream\'s word; a claim the stream does not hold is refused and counted', async (t) => {
  const stream = new FakeStream();
  const [a, b] = [new Pod(stream), new Pod(stream)];
  await a.connect();
  await b.connect();
  await a.publish(M, 2);
  stream.deliver([b]);
  t.same(b.got, [], 'a market B never saw: nothing goes out before the stream answers');
  await waitFor(() => b.got.length === 1, 'the stream never proved A\'s first image', 2000);
  t.same(b.lines(), ['remote 1.100 sfirst/1 2'], 'then it goes out as the stream holds it');
  await a.publish(M, 2.02);
  await a.publish(M, 2.04);
  await a.publish(M, 2.06);
  const reads = stream.reads;
  stream.deliver([b], 1);
  t.same(b.lines(1), ['remote 1.100 sfirst/2 2.02'], 'the next of the market at once');
  await waitFor(() => b.got.length === 3, 'the stream never proved the image after the gap', 2000);
  t.same(b.lines(2), ['remote 1.100 sfirst/4 2.06'], 'after the lost one, the newest once the stream holds it');
  t.equal(stream.reads, reads + 1, 'one read of the stream, for the gap');
  const forged = encodeProto(oddsMessage(image(M, 1.01), { epoch: 'sfirst', seq: 9, publishTime: 1 }));
  stream.share(M, 99, forged);
  stream.deliver([b]);
  const rejected = async () => (await stream.registry.getSingleMetric('odds_bus_rejected_total')!.get()).values.filter((v) => v.labels.reason === 'forged' && v.labels.subject_kind === 'image');
  await waitFor(async () => (await rejected()).length > 0, 'the forged claim was never refused', 2000);
  t.same((await rejected()).map((v) => v.value), [1], 'counted once as a forged image');
  t.equal(b.holds(M), 'sfirst/4 2.06', 'subscribers keep the stream\'s image');
});

t.test('NATS back after both pods numbered alone: a newer image another pod stores between this pod\'s read and its write is not overwritten by this pod\'s older one', async (t) => {
  const stream = new FakeStream();
  const [a, b] = [new Pod(stream), new Pod(stream)];
  await a.connect();
  await b.connect();
  await a.publish(M, 2, 100);
  stream.deliver([b]);
  await waitFor(() => b.holds(M) === 'sfirst/1 2', 'B never took A\'s first image', 2000);
  a.seq.lost();
  b.seq.lost();
  await b.publish(M, 2.2, 200);
  await a.publish(M, 2.3, 300);
  // B reads the stream's last (A's first, older than its own); before B writes, A stores its newer
  // image and B hears of it from A's fan-out.
  stream.meanwhile = async () => {
    await a.seq.requestSync();
    stream.deliver([b]);
  };
  await b.seq.requestSync();
  t.same(stored(stream, M), 'sfirst/2 2.3', 'the stream keeps A\'s newer image: B\'s older one is not stored over it');
  t.same([a.holds(M), b.holds(M)], ['sfirst/2 2.3', 'sfirst/2 2.3'], 'both pods hold it');
});
