import t from 'tap';
import { Hub, type PublisherSocket } from '../../src/hub/hub.js';
import { MarketIndex } from '../../src/hub/market-index.js';
import { Subscriber } from '../../src/hub/subscriber.js';
import { variant } from '../../src/hub/variant.js';
import { TokenBucket } from '../../src/lib/token-bucket.js';
import { FakeConn, FakeTopics, rig } from './fakes.js';

/**
 * The hub's own work, over fake sockets: the limits a handshake and a request
 * meet, the indexes by market, key, client and format that every count and
 * fan-out reads, and which sockets a revocation or a shutdown closes. The
 * counts must follow the sockets exactly, or a pod refuses clients it has room
 * for, or holds more than it may.
 */
function setup(limits: Partial<{ perKey: number; total: number; countPerKey: boolean; markets: number }> = {}, concluded: string[] = []) {
  const refused: string[] = [];
  const { deps } = rig();
  const index = new MarketIndex<Subscriber>();
  const hub = new Hub(
    { perKey: 2, total: 4, countPerKey: true, markets: 3, ...limits },
    { refusals: { socketRefused: (reason) => refused.push(reason) }, markets: { concluded: (mid) => concluded.includes(mid) }, index },
  );
  const topics = new FakeTopics();
  let id = 0;
  const session = (keyId = 'k1', client = 'c1', format: 'json' | 'proto' = 'json') => {
    const conn = new FakeConn(topics);
    const s = new Subscriber(++id, keyId, client, format, 5000, new TokenBucket(50, deps.clock), conn, { ...deps, index });
    return { s, conn };
  };
  const publisher = (keyId = 'k1') => {
    const ended: number[] = [];
    const events: string[] = [];
    const p: PublisherSocket = {
      keyId, closed: false,
      conn: { end: (code) => ended.push(code!) },
      revoke: async () => void events.push('revoke'),
      drain: async () => void events.push('drain'),
    };
    return { p, ended, events };
  };
  return { hub, index, refused, session, publisher };
}

const turn = () => new Promise((ok) => setImmediate(ok));

t.test('a handshake is refused past the key\'s limit, then past the pod\'s, each counted by its reason; a closed socket frees its room', async (t) => {
  const { hub, refused, session, publisher } = setup();
  const a = session('k1');
  hub.open(a.s);
  hub.open(publisher('k1').p);
  t.match(hub.refuse('k1'), { code: 'TOO_MANY_SOCKETS', message: /limit of 2 sockets/ }, 'subscribers and publishers count against one key');
  t.equal(hub.refuse('k2'), undefined, 'another key has room');
  hub.open(session('k2').s);
  hub.open(session('k3').s);
  t.match(hub.refuse('k4'), { code: 'SERVER_FULL', message: /limit of 4 sockets/ }, 'the pod is full');
  t.same(refused, ['per_key', 'total']);
  hub.close(a.s, 1000);
  t.equal(hub.refuse('k1'), undefined, 'a closed socket frees its room on the key and the pod');
  t.equal(hub.sockets, 3);
});

t.test('with no keys (AUTH=off) only the pod\'s limit applies', async (t) => {
  const { hub, session } = setup({ countPerKey: false });
  for (let i = 0; i < 3; i++) hub.open(session('public').s);
  t.equal(hub.refuse('public'), undefined);
  hub.open(session('public').s);
  t.match(hub.refuse('public'), { code: 'SERVER_FULL' });
});

t.test('admit: held markets cost nothing, a concluded market is left out unless named, the rest fit while there is room and the others are refused by name', async (t) => {
  const { hub, session } = setup({}, ['1.9']);
  const { s } = session();
  hub.open(s);
  const v = variant('json');
  s.subscribe(['1.1'], v);
  t.same(hub.admit(s, ['1.1', '1.9', '1.2', '1.3']), { admitted: ['1.1', '1.2', '1.3'] }, 'the held one and two more fill the three');
  t.same(hub.admit(s, ['1.9'], new Set(['1.9'])), { admitted: ['1.9'] }, 'a concluded market asked for by its ID is taken');
  const over = hub.admit(s, ['1.2', '1.3', '1.4']);
  t.same(over.admitted, ['1.2', '1.3']);
  t.match(over.refused, { code: 'LIMIT', message: /1\.4 did not fit: a socket holds at most 3 markets/ }, 'the market past the limit is named');
  t.equal(s.size, 1, 'admitting takes nothing by itself');
});

t.test('the market index counts each variant\'s takers; taking again another way moves the count; closing a socket takes it out of every index', async (t) => {
  const { hub, index, session } = setup({ countPerKey: false, total: 10 });
  const a = session('k', 'alice', 'json');
  const b = session('k', 'alice', 'proto');
  const c = session('k', 'bob', 'json');
  for (const x of [a, b, c]) hub.open(x.s);
  const live = variant('json');
  const deep = variant('json', 2);
  a.s.subscribe(['1.1'], live);
  a.s.subscribe(['1.1'], live);
  b.s.subscribe(['1.1'], variant('proto'));
  c.s.subscribe(['1.1'], live);
  c.s.subscribe(['1.2'], live);
  const takers = () => [...index.market('1.1')?.variants ?? []].map(([key, v]) => `${key}x${v.count}`).sort();
  t.same(takers(), ['j0.0x2', 'p0.0x1'], 'the same way again changes nothing');
  t.equal(hub.subscriptions(), 4);
  a.s.subscribe(['1.1'], deep);
  t.same(takers(), ['j0.0x1', 'j2.0x1', 'p0.0x1'], 'the socket moved from one variant to the other');
  t.equal(hub.subscriptions(), 4, 'still one subscription');
  t.same([hub.count('json'), hub.count('proto'), hub.size], [2, 1, 3]);
  t.same([...hub.clientSubscribers('alice')].map((s) => s.id), [a.s.id, b.s.id]);
  hub.close(c.s, 1000);
  t.equal(index.market('1.2'), undefined, 'a market nobody takes leaves the index');
  t.same(takers(), ['j2.0x1', 'p0.0x1']);
  t.equal(hub.subscriptions(), 2);
  t.same(a.s.unsubscribe(['1.1']), ['1.1']);
  t.same(a.s.unsubscribe(['1.1']), [], 'not held: nothing to drop');
  t.same(takers(), ['p0.0x1']);
  t.ok(c.s.closed, 'the subscriber knows it closed');
});

t.test('filters: the subscribers an event or sport covers, with the variant each asked for; a closed one leaves them', async (t) => {
  const { hub, index, session } = setup({ countPerKey: false, total: 10 });
  const a = session();
  const b = session();
  hub.open(a.s);
  hub.open(b.s);
  const deep = variant('json', 3);
  a.s.setFilter('events', 30, variant('json'));
  b.s.setFilter('sports', 4, deep);
  const covered = (eid: number, si: number) => [...index.filtered(eid, si, { type: 'match-odd', bettingType: 'ODDS' })].map(([s, v]) => `${s.id}:${v.key}`).sort();
  t.same(covered(30, 4), [`${a.s.id}:j0.0`, `${b.s.id}:j3.0`]);
  t.same(covered(31, 4), [`${b.s.id}:j3.0`], 'another event of the sport');
  b.s.setFilter('sports', 4, undefined);
  t.same(covered(31, 4), [], 'a removed filter covers nothing');
  hub.close(a.s, 1000);
  t.same(covered(30, 4), [], 'nor does a closed socket\'s');
});

t.test('narrowed filters: a market created later goes to the subscribers whose narrowing it passes; set again, a filter replaces its narrowing', async (t) => {
  const { hub, index, session } = setup({ countPerKey: false, total: 10 });
  const [a, b, c] = [session(), session(), session()];
  for (const x of [a, b, c]) hub.open(x.s);
  a.s.setFilter('sports', 7, variant('json'), { types: new Set(['winner-market']), countries: new Set(['GB', 'IE']) });
  b.s.setFilter('sports', 7, variant('json'), { bettingTypes: new Set(['LINE']) });
  c.s.setFilter('events', 70, variant('json'), { turnInPlay: true });
  const covered = (facts: Parameters<typeof index.filtered>[2]) => [...index.filtered(70, 7, facts)].map(([s]) => s.id).sort();
  t.same(covered({ type: 'winner-market', bettingType: 'ODDS', country: 'IE', turnInPlay: true }), [a.s.id, c.s.id].sort());
  t.same(covered({ type: 'winner-market', bettingType: 'ODDS', country: 'FR' }), [], 'another country; and turning in play unknown matches no tip filter');
  t.same(covered({ type: 'winner-market', bettingType: 'ODDS' }), [], 'no country in its terms matches no country filter');
  t.same(covered({ type: 'line-market', bettingType: 'LINE', turnInPlay: false }), [b.s.id]);
  a.s.setFilter('sports', 7, variant('json'));
  t.same(covered({ type: 'line-market', bettingType: 'LINE' }), [a.s.id, b.s.id].sort(), 'set again without narrowing: every market of the sport');
});

t.test('a revoked key: its subscribers close with 4003 at once, its publishers refuse what they have not started and then close; other keys are untouched', async (t) => {
  const { hub, session, publisher } = setup({ perKey: 5, total: 10 });
  const mine = session('k1');
  const other = session('k2');
  const pub = publisher('k1');
  hub.open(mine.s);
  hub.open(other.s);
  hub.open(pub.p);
  let counted = 0;
  hub.revoke('k1', { revokedClose: () => counted++ });
  t.equal(mine.conn.closedWith, 4003);
  t.equal(other.conn.closedWith, undefined, 'another key keeps its socket');
  t.equal(counted, 2, 'each socket closed is counted');
  await turn();
  t.same(pub.events, ['revoke']);
  t.same(pub.ended, [4003], 'the publisher closes once its batches are answered');
});

t.test('shutdown: publishers drain and close with 1001 first; then every subscriber gets 1001; a socket closed already is left alone', async (t) => {
  const { hub, session, publisher } = setup({ perKey: 5, total: 10 });
  const a = session();
  const b = session();
  const pub = publisher();
  const gone = publisher();
  for (const x of [a.s, b.s, pub.p, gone.p]) hub.open(x);
  gone.p.closed = true;
  await hub.drainPublishers();
  t.same([pub.events, pub.ended], [['drain'], [1001]]);
  t.same(gone.ended, [], 'uWS throws on ending a closed socket: the hub does not');
  t.equal(a.conn.closedWith, undefined, 'subscribers still open while publishers drain');
  hub.closeSubscribers();
  t.same([a.conn.closedWith, b.conn.closedWith], [1001, 1001]);
});
