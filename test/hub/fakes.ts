import t from 'tap';
import { Registry } from 'prom-client';
import { Book, type BookEntry, type Frame } from '../../src/odds/book.js';
import { decodeServerJson, decodeServerProto } from '../../src/odds/codec.js';
import type { OddsImage, ServerMessage } from '../../src/odds/messages.js';
import { Broadcaster } from '../../src/hub/broadcaster.js';
import { Hub } from '../../src/hub/hub.js';
import { Session, type Conn, type Topics } from '../../src/hub/session.js';
import { MarketStates } from '../../src/hub/states.js';
import { Sweeper, type SweepLimits } from '../../src/hub/sweep.js';
import { OddsMetrics } from '../../src/metrics/odds.js';
import { createLogger } from '../../src/log.js';

/**
 * The hub without a server: uWS's pub/sub is two methods (Topics) and a socket
 * a handful (Conn), so both are played here by plain objects that record what
 * they were given.
 */
export class FakeTopics implements Topics {
  readonly subs = new Map<string, Set<FakeConn>>();
  readonly published: { topic: string; frame: Frame }[] = [];
  publish(topic: string, frame: Frame): boolean {
    this.published.push({ topic, frame });
    for (const c of this.subs.get(topic) ?? []) c.frames.push(frame);
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
  buffered = 0;
  closedWith: number | undefined;
  constructor(private readonly topics: FakeTopics) {}
  send(frame: Frame): number {
    this.frames.push(frame);
    return 1;
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
  messages(): ServerMessage[] {
    return this.frames.map((f) => (typeof f === 'string' ? decodeServerJson(f) : decodeServerProto(f)));
  }
}

/** An image whose first runner is at `price`; the others, if any, never move (so a delta is smaller than the image). */
export const img = (mid: string, price: number, runners = 1): OddsImage => ({
  mid, ts: 1, st: 'OPEN', ip: true, r: Array.from({ length: runners }, (_, i) => {
    const p = i === 0 ? price : 3 + i;
    return { rid: i + 1, st: 'ACTIVE', b: [[p, 1], [p - 0.01, 2]], l: [[p + 0.01, 3]] };
  }),
});

let nextId = 0;

/** The hub, broadcaster and sweep wired as the service wires them, over fakes; torn down with the test. */
export function rig(limits: SweepLimits = { slowBytes: 1000, maxBytes: 1_000_000, slowCloseMs: 60_000 }) {
  const topics = new FakeTopics();
  const hub = new Hub({ perKey: 10, total: 100, countPerKey: false, markets: 100 }, { refusals: { socketRefused() {} }, markets: { concluded: () => false } });
  const book = new Book();
  const states = new MarketStates();
  const metrics = new OddsMetrics(new Registry());
  const log = createLogger('error', false, () => undefined);
  const bc = new Broadcaster({ topics, hub, book, states, metrics, log });
  const sweeper = new Sweeper({ bc, hub, book, states, limits, metrics, log });
  hub.watch(bc);
  hub.watch(sweeper);
  bc.watchSends(sweeper);
  /** A socket the hub opened; uWS's close callback is `hub.close(s)`. */
  const open = (format: 'json' | 'proto' = 'json') => {
    const conn = new FakeConn(topics);
    const s = new Session(++nextId, 'public', 'public', format, 5000, conn);
    hub.open(s);
    conn.end = (code?: number) => {
      conn.closedWith = code;
      hub.close(s);
    };
    return { s, conn };
  };
  const put = (mid: string, price: number, pt = Date.now(), runners = 1): BookEntry => book.put({ epoch: 'e', seq: book.next(mid, 'e'), pt, image: img(mid, price, runners) })!;
  /** Publishes and hands the turn's batch to the topics at once, as the end of the loop turn would. */
  const publish = (entry: BookEntry) => {
    bc.publish(entry);
    bc.flush();
  };
  t.teardown(() => bc.stop());
  return { topics, hub, book, states, metrics, bc, sweeper, open, put, publish };
}
