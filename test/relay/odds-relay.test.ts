/**
 * The odds path's hand-over in the middle, over fakes of what it hands to: each image of a batch
 * to the bus, which numbers it; each numbered image into the book and, when newer, to the
 * broadcaster; a publisher's ack held while a stage cannot keep up; the record told of what this
 * pod numbered only; another pod's images counting as a publisher heard; the bus down making the
 * feed and every market stale.
 */
import t from 'tap';
import { Registry } from 'prom-client';
import { MemoryBus } from '../../src/bus/memory.js';
import type { Pressure } from '../../src/hub/publish-batch.js';
import { BusMetrics } from '../../src/metrics/bus.js';
import { Book, type BookEntry, type Ordered } from '../../src/odds/book.js';
import { OddsRelay } from '../../src/relay/odds-relay.js';
import { img } from '../hub/fakes.js';
import { parseMetrics } from '../helpers/prometheus.js';

function setup() {
  const book = new Book();
  const published: BookEntry[] = [];
  const recorded: Ordered[] = [];
  const told: string[] = [];
  const registry = new Registry();
  let release: () => void = () => undefined;
  const stage: Pressure & { isBusy: boolean } = { isBusy: false, busy() { return this.isBusy; }, eased: () => new Promise<void>((ok) => (release = ok)) };
  const bus = new MemoryBus(book);
  const relay = new OddsRelay({
    book, bus, broadcaster: { publish: (e: BookEntry) => void published.push(e) } as never,
    monitor: { heard: () => void told.push('heard'), busDown: (d: boolean) => void told.push(`feed down ${d}`) } as never,
    freshness: { busDown: (d) => void told.push(`markets down ${d}`) },
    metrics: new BusMetrics(registry, 'memory'), pressure: [stage], record: { odds: (o) => void recorded.push(o) },
  });
  void bus.start(relay);
  return { book, published, recorded, told, registry, stage, relay, release: () => release() };
}

t.test('a batch\'s images numbered by the bus, kept in the book, handed to the broadcaster and the record', async (t) => {
  const { book, published, recorded, relay } = setup();
  t.equal(relay.publish([img('1.1', 2), img('1.2', 3)], 100), undefined, 'nothing to wait on: the ack goes at once');
  t.same(published.map((e) => [e.marketId, e.seq]), [['1.1', 1], ['1.2', 1]]);
  t.same(recorded.map((o) => o.image.marketId), ['1.1', '1.2'], 'recorded by the pod that numbered them');
  t.equal(relay.image('1.1')?.runners[0].back[0][0], 2, 'the newest image held, for a bet stop to suspend');
  t.equal(book.get('1.2')?.publishTime, 100);
});

t.test('another pod\'s image: a publisher heard, not recorded here; an old one not broadcast', async (t) => {
  const { book, published, recorded, told, registry, relay } = setup();
  relay.odds({ epoch: 'e', seq: 5, publishTime: Date.now(), image: img('1.1', 2) }, 'remote');
  relay.odds({ epoch: 'e', seq: 4, publishTime: Date.now(), image: img('1.1', 1) }, 'remote');
  t.same(published.map((e) => e.seq), [5], 'the older one kept out of the book and off the sockets');
  t.equal(book.get('1.1')?.seq, 5);
  t.same(recorded, [], 'the pod that numbered it recorded it');
  t.same(told.filter((x) => x === 'heard'), ['heard', 'heard'], 'each counts as a publisher heard');
  t.equal(parseMetrics(await registry.metrics()).get('odds_bus_images_received_total'), 2);
});

t.test('while a stage cannot keep up, the ack waits until it has eased', async (t) => {
  const { stage, relay, release } = setup();
  stage.isBusy = true;
  let acked = false;
  void Promise.resolve(relay.publish([img('1.1', 2)], 1)).then(() => (acked = true));
  await new Promise((ok) => setImmediate(ok));
  t.notOk(acked, 'held');
  release();
  await new Promise((ok) => setImmediate(ok));
  t.ok(acked, 'answered once eased');
});

t.test('the bus down: the feed and every market stale, the gauge at 0; back: live and 1', async (t) => {
  const { told, registry, relay } = setup();
  told.length = 0;
  relay.down(true);
  t.same(told, ['feed down true', 'markets down true']);
  t.equal(parseMetrics(await registry.metrics()).get('odds_bus_connected'), 0);
  relay.down(false);
  t.equal(parseMetrics(await registry.metrics()).get('odds_bus_connected'), 1);
});
