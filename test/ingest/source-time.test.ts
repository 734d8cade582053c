import t from 'tap';
import type { FreshnessMessage, OddsMessage } from '../../src/odds/messages.js';
import { startTestService } from '../helpers/service.js';
import { Client, image } from '../helpers/ws.js';
import { Publisher } from '../faults/publisher-socket.js';

/**
 * Source times taken on no one's word: too far ahead refused naming both times, older than the
 * newest its publisher sent refused as out of order, old published as late; a replay judged by
 * its order alone, over real sockets. (The rule on a clock the test sets: ingest/source-time-rule.test.ts.)
 */

const svc = await startTestService(t);
const M = '1.200001001';
const M2 = '1.200001002';

async function subscriber(mids: string[]) {
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  t.equal((await c.request({ op: 'subscribe', mids })).status, 1);
  await c.settled();
  return c;
}
const at = (item: Record<string, unknown>, ts: number) => ({ ...item, ts });

t.test('over sockets: ahead refused, old published late, out of order refused; the held price stays the newest', async (t) => {
  const pub = await Publisher.open(svc.url);
  t.teardown(() => pub.close());
  const sub = await subscriber([M, M2]);
  const from = sub.frames.length;
  const now = Date.now();
  pub.send(1, [at(image(M, 3), now + 365 * 86_400_000), at(image(M2, 3), 1e300)]);
  const ahead = await pub.ack(1);
  t.match(ahead, { status: 1, message: 'Ingested 0 items; refused 2' });
  t.match(ahead.refused, [{ i: 0, mid: M, message: /ms ahead of the server's clock .*INGEST_MAX_SKEW_MS/ }, { i: 1, mid: M2, message: /ts 1e\+300 is/ }]);
  t.notOk(sub.oddsOf(M).some((f) => f.r[0].b[0][0] === 3), 'a time a year ahead is not published');

  pub.send(2, [at(image(M, 4), now - 3_600_000)]);
  t.same(await pub.ack(2), { id: 2, status: 1, message: 'Ingested 1 item' }, 'an hour old: published');
  const late = await sub.next((f) => f.op === 'freshness' && f.mid === M && f.why === 'late', 5000, from);
  t.match(late, { live: false, why: 'late' }, '... as late');
  pub.send(3, [at(image(M, 4.5), 0)]);
  t.equal((await pub.ack(3)).status, 1, 'ts 0: published, late as well');

  // A plain image makes it live; then a batch whose second image goes back in time.
  const t0 = Date.now();
  pub.send(4, [at(image(M, 2.4), t0)]);
  await pub.ack(4);
  await sub.next((f) => f.op === 'freshness' && f.mid === M && f.live, 5000, from);
  pub.send(5, [at(image(M, 2.5), t0 + 1000), at(image(M, 9), t0 - 60_000)]);
  const order = await pub.ack(5);
  t.match(order, { status: 1, message: 'Ingested 1 item; refused 1', refused: [{ i: 1, mid: M, message: /out of order/ }] });
  pub.send(6, [at(image(M, 8), t0 + 500)]);
  t.match(await pub.ack(6), { refused: [{ i: 0, message: /older than .*out of order/ }] }, 'older than the last batch\'s newest: out of order too');
  await sub.settled();
  const last = sub.oddsOf(M).at(-1) as OddsMessage;
  t.equal(last.r[0].b[0][0], 2.5, 'the newest in source time is what subscribers hold');
  t.equal(last.ts, t0 + 1000);
});

t.test('over sockets: a replay keeps recorded times, and its markets live', async (t) => {
  const pub = await Publisher.open(svc.url, {}, 'replay=1');
  t.teardown(() => pub.close());
  const sub = await subscriber([M2]);
  const from = sub.frames.length;
  const recorded = Date.UTC(2025, 4, 1, 14);
  for (let i = 0; i < 5; i++) {
    pub.send(10 + i, [at(image(M2, 2 + i / 10), recorded + i * 1000)]);
    t.same(await pub.ack(10 + i), { id: 10 + i, status: 1, message: 'Ingested 1 item' });
  }
  pub.send(20, [at(image(M2, 5), recorded)]);
  t.match(await pub.ack(20), { refused: [{ message: /out of order/ }] }, 'its order is still judged');
  await sub.next((f) => f.op === 'odds' && f.mid === M2 && f.ts === recorded + 4000, 5000, from);
  await sub.settled();
  const stale = sub.frames.slice(from).filter((f): f is FreshnessMessage => f.op === 'freshness' && !f.live && f.why !== 'unreliable');
  t.same(stale, [], 'a year-old recording is not late');
  await t.rejects(Publisher.open(svc.url, {}, 'replay=yes'), /400/, 'a bad replay value refuses the handshake');
});

// A stop older than the market's newest image suspended it at the older time, and the image that
// time let in after it was published live: two seconds older than the price it replaced.
t.test('over sockets: a suspend item keeps the order too: older than a market\'s newest, it leaves the market; newer, it is the newest', async (t) => {
  const EVENT = 30000001;
  const markets = (await (await fetch(`${svc.url}/api/v1/events/markets?eid=${EVENT}`)).json()) as { data: Record<string, { mid: string }[]> };
  t.ok(markets.data[EVENT].some((m) => m.mid === M), `${M} is a market of event ${EVENT}`);
  const pub = await Publisher.open(svc.url);
  t.teardown(() => pub.close());
  const sub = await subscriber([M]);
  const t0 = Date.now();
  pub.send(30, [at(image(M, 2.2), t0)]);
  t.equal((await pub.ack(30)).status, 1);
  pub.send(31, [{ kind: 'suspend', eid: EVENT, sr: 'an old stop', ts: t0 - 3000 }]);
  t.match(await pub.ack(31), { status: 1 }, 'the stop is taken');
  pub.send(32, [at(image(M, 7), t0 - 2000)]);
  t.match(await pub.ack(32), { refused: [{ i: 0, mid: M, message: /out of order/ }] }, 'an image older than the newest is still out of order');
  await sub.settled();
  t.notOk(sub.oddsOf(M).some((f) => f.sr === 'an old stop' || f.r[0].b[0][0] === 7), 'neither the old stop nor the old image reached the market');
  t.match(sub.oddsOf(M).at(-1), { ts: t0, st: 'OPEN' }, 'it holds its newest image');

  pub.send(33, [{ kind: 'suspend', eid: EVENT, sr: 'goal', ts: t0 + 100 }, at(image(M, 2.3), t0 + 50)]);
  t.match(await pub.ack(33), { refused: [{ i: 1, mid: M, message: /out of order/ }] }, 'a newer stop is the newest: an image older than it is out of order, in its batch too');
  await sub.settled();
  t.match(sub.oddsOf(M).at(-1), { ts: t0 + 100, st: 'SUSPENDED', sr: 'goal' });
});
