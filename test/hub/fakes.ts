import t from 'tap';
import { Registry } from 'prom-client';
import { Book, type BookEntry, type Frame } from '../../src/odds/book.js';
import { decodeServerJson, decodeServerProto } from '../../src/odds/codec.js';
import type { OddsImage } from '../../src/odds/image.js';
import type { ServerMessage } from '../../src/odds/messages.js';
import { imageOf } from '../helpers/images.js';
import { Broadcaster, type Topics } from '../../src/hub/broadcaster.js';
import { Hub } from '../../src/hub/hub.js';
import { MarketIndex } from '../../src/hub/market-index.js';
import { SocketSubscriptions } from '../../src/hub/socket-subscriptions.js';
import { Subscriber, type AgeLimits, type Conn, type SubscriberDeps } from '../../src/hub/subscriber.js';
import { MarketStates } from '../../src/hub/states.js';
import { Sweep } from '../../src/hub/sweep.js';
import { FakeClock } from '../helpers/clock.js';
import { TokenBucket } from '../../src/lib/token-bucket.js';
import { OddsMetrics } from '../../src/metrics/odds.js';
import type { ReadModel } from '../../src/refdata/model.js';
import { createLogger } from '../../src/log.js';
import { UNRECORDED, type SocketLedger } from '../../src/record/ledger.js';

export { FakeClock };

/**
 * The hub without a server: uWS's pub/sub is two methods (Topics) and a socket
 * a handful (Conn), so both are played here by plain objects that record what
 * they were given; time is a clock the test moves.
 */
export class FakeTopics implements Topics {
  readonly subs = new Map<string, Set<FakeConn>>();
  readonly published: { topic: string; frame: Frame }[] = [];
  publish(topic: string, frame: Frame): boolean {
    this.published.push({ topic, frame });
    for (const c of this.subs.get(topic) ?? []) c.deliver(frame);
    return true;
  }
  numSubscribers(topic: string): number {
    return this.subs.get(topic)?.size ?? 0;
  }
  /** The topics a socket is on, sorted. */
  of(conn: FakeConn): string[] {
    return [...this.subs].filter(([, set]) => set.has(conn)).map(([topic]) => topic).sort();
  }
}

export class FakeConn implements Conn {
  readonly frames: Frame[] = [];
  /** Pings sent and not yet answered: the client has not read up to them. */
  readonly pings: ArrayBuffer[] = [];
  buffered = 0;
  closedWith: number | undefined;
  constructor(private readonly topics: FakeTopics) {}
  send(frame: Frame): number {
    this.deliver(frame);
    return 1;
  }
  /** A frame on its way to the client, sent directly or by a topic. */
  deliver(frame: Frame): void {
    this.frames.push(frame);
  }
  subscribe(topic: string): boolean {
    let set = this.topics.subs.get(topic);
    if (!set) this.topics.subs.set(topic, (set = new Set()));
    set.add(this);
    return true;
  }
  unsubscribe(topic: string): boolean {
    return this.topics.subs.get(topic)?.delete(this) ?? false;
  }
  getBufferedAmount(): number {
    return this.buffered;
  }
  cork(fn: () => void): void {
    fn();
  }
  end(code?: number): void {
    this.closedWith = code;
  }
  ping(message?: Uint8Array): number {
    this.pings.push(new Uint8Array(message ?? []).buffer);
    return 1;
  }
  messages(): ServerMessage[] {
    return this.frames.map((f) => (typeof f === 'string' ? decodeServerJson(f) : decodeServerProto(f)));
  }
}

/** An image whose first runner is at `price`; the others, if any, never move (so a delta is smaller than the image). */
export const img = (mid: string, price: number, runners = 1): OddsImage => imageOf({
  mid, ts: 1, st: 'OPEN', ip: true, r: Array.from({ length: runners }, (_, i) => {
    const p = i === 0 ? price : 3 + i;
    return { rid: i + 1, st: 'ACTIVE', b: [[p, 1], [p - 0.01, 2]], l: [[p + 0.01, 3]] };
  }),
});

let nextId = 0;

/** The limits of the rig's subscribers: small enough for a test to pass them with a few frames. */
export const LIMITS: AgeLimits = { maxAgeMs: 2000, slowBytes: 1000, maxBytes: 1_000_000, slowCloseMs: 60_000 };

/**
 * The hub, broadcaster, sweep and subscribers wired as the service wires them, over fakes and a
 * clock the test moves, telling `ledger` what the record would be told; torn down with the test.
 */
export function rig(limits: Partial<AgeLimits> = {}, model: Pick<ReadModel, 'eventMarkets' | 'sportMarkets'> = { eventMarkets: () => [], sportMarkets: () => [] }, ledger: SocketLedger = UNRECORDED) {
  const topics = new FakeTopics();
  const clock = new FakeClock();
  const index = new MarketIndex<Subscriber>();
  const hub = new Hub({ perKey: 10, total: 100, countPerKey: false, markets: 100 }, { refusals: { socketRefused() {} }, markets: { concluded: () => false }, index });
  const book = new Book();
  const states = new MarketStates();
  const metrics = new OddsMetrics(new Registry());
  const log = createLogger('error', false, () => undefined);
  const bc = new Broadcaster({ topics, index, book, states, metrics, log, clock, ledger });
  const sweep = new Sweep(index, clock);
  bc.watch(sweep);
  const deps: SubscriberDeps = { index, publishing: bc, book, states, looks: sweep, limits: { ...LIMITS, ...limits }, metrics, log, clock, compress: false, ledger };
  const subs = new SocketSubscriptions({ hub, index, book, model: model as ReadModel });
  /** A socket the hub opened; uWS's close callback is `hub.close(s)`. */
  const open = <C extends FakeConn = FakeConn>(format: 'json' | 'proto' = 'json', hbMs = 5000, conn: C = new FakeConn(topics) as C) => {
    const s = new Subscriber(++nextId, 'public', 'public', format, hbMs, new TokenBucket(50, clock), conn, deps);
    hub.open(s);
    sweep.add(s);
    conn.end = (code?: number) => {
      conn.closedWith = code;
      hub.close(s, code ?? 1005);
    };
    return { s, conn };
  };
  /** The client read everything it was sent so far: it answers every ping. */
  const read = ({ s, conn }: { s: Subscriber; conn: FakeConn }) => {
    for (const p of conn.pings.splice(0)) s.pong(p);
  };
  const put = (mid: string, price: number, pt = clock.now(), runners = 1): BookEntry => book.put({ epoch: 'e', seq: book.next(mid, 'e'), publishTime: pt, image: img(mid, price, runners) })!;
  /** Publishes and hands the turn's batch to the topics at once, as the end of the loop turn would. */
  const publish = (entry: BookEntry) => {
    bc.publish(entry);
    bc.flush();
  };
  t.teardown(() => bc.stop());
  return { topics, clock, index, hub, book, states, metrics, bc, sweep, subs, deps, open, read, put, publish };
}
