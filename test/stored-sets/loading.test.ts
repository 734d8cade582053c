import t from 'tap';
import type pg from 'pg';
import { Hub } from '../../src/hub/hub.js';
import { MarketIndex } from '../../src/hub/market-index.js';
import { Subscriber } from '../../src/hub/subscriber.js';
import { TokenBucket } from '../../src/lib/token-bucket.js';
import { FakeConn, FakeTopics, rig } from '../hub/fakes.js';
import type { Bus } from '../../src/bus/types.js';
import { STORED_MARKETS_PER_TURN, StoredSets } from '../../src/stored-sets/stored-sets.js';
import { createLogger } from '../../src/log.js';

/**
 * A new socket's stored set loads while the client changes it: the change is
 * applied to the socket at once, so the older set the load read must not be
 * attached after it. Postgres is a fake whose reads the test answers by hand.
 */
class HeldPool {
  readonly reads: ((rows: { client_id: string; mids: string[] }[]) => void)[] = [];
  query(sql: string): Promise<unknown> {
    if (sql.startsWith('SELECT client_id')) return new Promise((ok) => this.reads.push((rows) => ok({ rows })));
    return Promise.resolve({ rows: [], rowCount: 1 });
  }
}

/** Lets the stored set's reads, batched once per turn of the loop, go out. */
async function turns(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise((ok) => setImmediate(ok));
}

t.test('an unsubscribe acked while a new socket\'s stored set loads is not undone by the older set', async (t) => {
  const pool = new HeldPool();
  const hub = new Hub({ perKey: 10, total: 10, countPerKey: false, markets: 10 }, { refusals: { socketRefused() {} }, markets: { concluded: () => false }, index: new MarketIndex<Subscriber>() });
  const attached: string[][] = [];
  const told: string[][] = [];
  const sets = new StoredSets({
    pool: pool as unknown as pg.Pool, hub, bus: { publishClient: () => undefined } as unknown as Bus,
    maxStored: 10, log: createLogger('error', false, () => undefined), outages: { databaseUnavailable() {} },
  });
  hub.watch(sets);
  // A subscriber whose takes and losses are recorded rather than sent.
  const { deps } = rig();
  const s = new Subscriber(1, 'k', 'c', 'json', 5000, new TokenBucket(50, deps.clock), new FakeConn(new FakeTopics()), deps);
  s.subscribe = (mids) => void attached.push([...mids]);
  s.lose = (mids) => void told.push([...mids]);
  hub.open(s);
  await turns();
  t.equal(pool.reads.length, 1, 'the socket\'s stored set is being read');

  await sets.unsubscribe('c', ['1.1']);
  t.same(told, [['1.1']], 'the change reached the socket before its ack');
  pool.reads[0]([{ client_id: 'c', mids: ['1.1', '1.2'] }]);
  await turns();
  t.same(attached, [], 'what was read before the change is not attached');
  t.equal(pool.reads.length, 2, 'the set is read again');
  pool.reads[1]([{ client_id: 'c', mids: ['1.2'] }]);
  await turns();
  t.same(attached, [['1.2']], 'the set as it is after the change');
});

/** Three sockets of one client opening at once over a held Postgres, each recording what it is attached (ID, markets). */
async function storm() {
  const pool = new HeldPool();
  const hub = new Hub({ perKey: 10, total: 10, countPerKey: false, markets: 2000 }, { refusals: { socketRefused() {} }, markets: { concluded: () => false }, index: new MarketIndex<Subscriber>() });
  const sets = new StoredSets({
    pool: pool as unknown as pg.Pool, hub, bus: { publishClient: () => undefined } as unknown as Bus,
    maxStored: 2000, log: createLogger('error', false, () => undefined), outages: { databaseUnavailable() {} },
  });
  hub.watch(sets);
  const { deps } = rig();
  const attached: [number, number][] = [];
  const sockets = [1, 2, 3].map((id) => {
    const s = new Subscriber(id, 'k', 'c', 'json', 5000, new TokenBucket(50, deps.clock), new FakeConn(new FakeTopics()), deps);
    s.subscribe = (mids) => void attached.push([id, [...mids].length]);
    s.lose = () => undefined;
    hub.open(s);
    return s;
  });
  await turns();
  // Each a full set: two make a turn's worth.
  const full = Array.from({ length: STORED_MARKETS_PER_TURN / 2 }, (_, i) => `1.${i + 1}`);
  return { pool, sets, sockets, attached, full };
}

t.test('a storm of sockets opening with full stored sets is attached a few thousand markets a turn, not all in one', async (t) => {
  const { pool, sockets, attached, full } = await storm();
  t.equal(pool.reads.length, 1, 'one read for the three sockets of one client');
  pool.reads[0]([{ client_id: 'c', mids: full }]);
  // A turn at a time: the check below runs once per turn of the loop, before that turn's attaching.
  let turn = 0;
  while (attached.length < 2) {
    if (++turn > 10) throw new Error('never attached');
    await new Promise((ok) => setImmediate(ok));
  }
  t.same(attached.map(([id]) => id), [1, 2], `${STORED_MARKETS_PER_TURN} markets in a turn: two full sets, the third waits`);
  t.ok(sockets[2].storedSetMovedSinceLoad === false, 'the third still counts as loading');
  await new Promise((ok) => setImmediate(ok));
  t.same(attached.map(([id]) => id), [1, 2, 3], 'the third in the next turn');
});

t.test('a stored set that changes while it waits for its turn is read again, not attached over the change', async (t) => {
  const { pool, sets, attached, full } = await storm();
  pool.reads[0]([{ client_id: 'c', mids: full }]);
  while (attached.length < 2) await new Promise((ok) => setImmediate(ok));
  await sets.unsubscribe('c', ['1.1']);
  await turns();
  t.same(attached.map(([id]) => id), [1, 2], 'the third, changed while it waited, is not attached as it was read');
  t.equal(pool.reads.length, 2, 'it is read again');
  pool.reads[1]([{ client_id: 'c', mids: full.slice(1) }]);
  await turns();
  t.same(attached.at(-1), [3, full.length - 1], 'and attached as it is after the change');
});
