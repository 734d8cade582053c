import t from 'tap';
import { OddsClient } from '../../src/client/index.js';
import type { MarketFreshness } from '../../src/client/index.js';
import { FakeClock } from '../helpers/clock.js';
import { FakeSocket } from './helpers.js';

/**
 * The client's own judgement of the age of what it reads, on a clock the test moves and a socket
 * the test plays: the server's clock from the frames' stamps, and every market `behind` from the
 * moment nothing read can prove the screen within `maxAgeMs` of the newest.
 */

/** A connected client holding market 1.1, the server's clock 1000 ms behind this machine's, the link 20 ms at its quickest. */
async function setup() {
  const clock = new FakeClock();
  const client = new OddsClient({ url: 'ws://odds.test/ws', WebSocket: FakeSocket as never, clock, maxAgeMs: 2000, hb: 30000 });
  const seen: MarketFreshness[] = [];
  client.on('freshness', (f) => seen.push(f));
  client.connect();
  const socket = FakeSocket.last;
  socket.emit('open', {});
  const subscribed = client.subscribe({ mids: ['1.1'] });
  const server = () => clock.now() - 1000 - 20;
  socket.frame({ op: 'ack', id: 1, status: 1, message: 'Subscribed from market 1.1' });
  await subscribed;
  let seq = 0;
  const odds = (pt = server()) => socket.frame({ op: 'odds', mid: '1.1', epoch: 'e', seq: ++seq, ts: pt, pt, st: 'OPEN', ip: true, con: false, cf: false, r: [] });
  const tick = (late = 0) => socket.frame({ op: 'clock', ts: server() - late });
  return { clock, client, seen, odds, tick, server };
}

t.test('a link that stalls: behind exactly when what the screen holds may be superseded longer than the bound', async (t) => {
  const { clock, client, seen, odds, tick } = await setup();
  tick();
  odds();
  t.same(client.freshness('1.1'), { mid: '1.1', live: true });
  clock.advance(500);
  odds();
  // The link stalls: nothing more is read.
  clock.advance(1999);
  t.same(seen, [], 'within the bound of the last frame read');
  clock.advance(1);
  t.match(seen, [{ mid: '1.1', live: false, why: 'behind' }], 'the bound after the last frame read, to the ms');
  t.equal(client.freshness('1.1').live, false);
  clock.advance(100);
  tick(1500);
  t.equal(client.freshness('1.1').live, false, 'a clock frame 1.5 s late: still behind (live again within half the bound)');
  tick(200);
  t.same(client.freshness('1.1'), { mid: '1.1', live: true }, 'a timely clock frame: live');
});

t.test('a frame read late leaves the next less time; a clock frame past the bound makes every market behind at once', async (t) => {
  const { clock, seen, tick, client, odds } = await setup();
  tick();
  odds();
  // The next clock frame, sent a second later, is read 0.9 s late.
  clock.advance(1900);
  tick(900);
  t.same(seen, [], '0.9 s late: within the bound, and proof of the screen until 1.1 s from now');
  clock.advance(1099);
  t.same(seen, []);
  clock.advance(1);
  t.match(seen, [{ why: 'behind' }], 'then behind: what was sent after it, read 0.9 s late, may have waited the bound');
  seen.length = 0;
  clock.advance(400);
  tick(1500);
  t.equal(client.freshness('1.1').live, false, 'read 1.5 s late: still behind (live again within half the bound)');
  clock.advance(1000);
  tick(400);
  t.same(client.freshness('1.1'), { mid: '1.1', live: true }, 'read 0.4 s late: live');
  clock.advance(1000);
  tick(2500);
  t.match(seen.at(-1), { live: false, why: 'behind' }, 'a clock frame 2.5 s late: behind at once');
});

t.test('an old stamp (a quiet market\'s image) proves nothing and takes nothing away', async (t) => {
  const { clock, seen, odds, tick, server } = await setup();
  tick();
  clock.advance(1000);
  odds(server() - 3_600_000);
  clock.advance(999);
  t.same(seen, [], 'the clock frame 1 s ago still proves the screen fresh');
  clock.advance(1);
  t.match(seen, [{ why: 'behind' }]);
});

t.test('a server that sends no clock frames: the client does not judge', async (t) => {
  const { clock, seen, odds } = await setup();
  odds();
  clock.advance(10_000);
  t.same(seen, []);
});
