import t from 'tap';
import { Session, variant, conflatePreset, CONFLATE_PRESETS } from '../../src/hub/session.js';
import { FakeConn, FakeTopics } from './fakes.js';
import { waitFor } from '../helpers/wait.js';

/**
 * A session is the one owner of its subscriber's state: the topics its socket
 * is on follow from what it takes and whether it is behind, whatever order
 * the changes come in.
 */
function open() {
  const topics = new FakeTopics();
  const conn = new FakeConn(topics);
  const s = new Session(1, 'k', 'c', 'json', 5000, conn);
  return { topics, conn, s };
}

const at = (seqs: Record<string, number>) => (mid: string) => (mid in seqs ? { epoch: 'e', seq: seqs[mid] } : undefined);

t.test('take and drop keep the socket on one topic per market, the variant it takes', async (t) => {
  const { topics, conn, s } = open();
  const live = variant('json');
  const deep = variant('json', 2);
  t.equal(s.take('a', live), true);
  t.equal(s.take('b', live), true);
  t.equal(s.take('a', live), false, 'the same way again changes nothing');
  t.same(topics.of(conn), ['j0.0/a', 'j0.0/b']);
  t.equal(s.take('a', deep), true, 'another way');
  t.same(topics.of(conn), ['j0.0/b', 'j2.0/a'], 'moved to the new variant\'s topic, off the old');
  t.same([...s.markets].map(([mid, v]) => `${mid} ${v.key}`), ['a j2.0', 'b j0.0']);
  t.equal(s.drop('b'), true);
  t.equal(s.drop('b'), false, 'not taken: nothing to drop');
  t.same(topics.of(conn), ['j2.0/a']);
});

t.test('behind, it is on no market topic; what it takes meanwhile joins when it catches up', async (t) => {
  const { topics, conn, s } = open();
  const v = variant('json');
  s.joinFeed();
  s.take('a', v);
  s.take('b', v);
  s.fallBehind(1000, at({ a: 4 }), 7);
  t.same(topics.of(conn), ['j$feed'], 'off every market topic, still on the feed\'s');
  t.match(s.lag, { since: 1000, stateRev: 7 });
  t.same([...s.lag!.seqs], [['a', { epoch: 'e', seq: 4 }]], 'what it had been sent of each market');
  s.fallBehind(2000, at({}), 9);
  t.equal(s.lag!.since, 1000, 'falling behind again while behind changes nothing');
  s.take('c', v);
  s.drop('b');
  t.same(topics.of(conn), ['j$feed'], 'taking and dropping while behind touches no topic');
  const lag = s.catchUp();
  t.equal(lag?.since, 1000, 'catching up hands back where it stood');
  t.equal(s.lag, undefined);
  t.same(topics.of(conn), ['j$feed', 'j0.0/a', 'j0.0/c'], 'back on exactly the topics of what it takes now');
  t.equal(s.catchUp(), undefined, 'not behind: nothing to catch up');
});

t.test('a market lost while behind is owed, unless it is taken again', async (t) => {
  const { s } = open();
  const v = variant('json');
  s.take('a', v);
  s.take('b', v);
  s.lostWhileBehind('a');
  t.equal(s.lag, undefined, 'not behind: nothing is owed');
  s.fallBehind(1, at({}), 0);
  s.drop('a');
  s.lostWhileBehind('a');
  s.drop('b');
  s.lostWhileBehind('b');
  s.take('b', v);
  t.same([...s.catchUp()!.lost], ['a']);
});

t.test('closed, it sends nothing and changes no topic (uWS throws on a closed socket)', async (t) => {
  const { topics, conn, s } = open();
  s.take('a', variant('json'));
  s.close();
  t.equal(s.closed, true);
  s.send('x', false);
  s.take('b', variant('json'));
  s.fallBehind(1, at({}), 0);
  s.end(4008, 'slow consumer');
  t.same(conn.frames, []);
  t.same(topics.of(conn), ['j0.0/a'], 'uWS drops its topics itself');
  t.equal(conn.closedWith, undefined, 'no second close');
});

t.test('closed by the server, it leaves its topics first: no frame may follow its close frame', async (t) => {
  const { topics, conn, s } = open();
  s.take('a', variant('json'));
  s.end(4008, 'slow consumer');
  t.same(topics.of(conn), [], 'off every market topic');
  t.equal(conn.closedWith, 4008);
  s.take('b', variant('json'));
  t.same(topics.of(conn), [], 'and joins none while its close completes');
});

t.test('a send is noted as its last frame, for heartbeats', async (t) => {
  const { conn, s } = open();
  const before = s.lastSendAt;
  await waitFor(() => Date.now() > before, 'the clock moved on, so the send can be told apart', 1000, 1);
  s.send('x', false);
  t.ok(s.lastSendAt > before);
  t.same(conn.frames, ['x']);
});

t.test('conflation intervals snap up to a preset: any value a client asks runs as one of a few variants', async (t) => {
  t.equal(conflatePreset(0), 0, 'every update stays every update');
  t.equal(conflatePreset(100), 100);
  t.equal(conflatePreset(101), 200, 'never more often than asked');
  t.equal(conflatePreset(1001), 2000);
  t.equal(conflatePreset(60000), 60000);
  const keys = new Set<string>();
  for (let ms = 100; ms <= 60000; ms += 7) keys.add(variant('proto', 0, ms, true).key);
  t.equal(keys.size, CONFLATE_PRESETS.length, 'thousands of intervals, as many variants as presets');
  t.equal(variant('json', 0, 150).conflate, 200, 'the variant runs at its preset');
});
