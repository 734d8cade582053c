/**
 * Freshness over real sockets: a real service on a clock the test moves, real publisher and
 * subscriber sockets. Publishers' liveness and heartbeats, `late` and `stale` items, the feed's
 * status, the metrics. (The logic alone: relay/freshness.test.ts, relay/feed-status.test.ts.)
 */
import t, { type Test } from 'tap';
import type { FreshnessMessage } from '../../src/odds/messages.js';
import { FakeClock } from '../helpers/clock.js';
import { scrape, value } from '../helpers/metrics.js';
import { postJson, startTestService } from '../helpers/service.js';
import { Client, image } from '../helpers/ws.js';
import { Publisher } from '../faults/publisher-socket.js';

/** The service on a clock the test moves: a publisher's silence passes exactly when the test says. */
const clock = new FakeClock(Date.now());
const svc = await startTestService(t, {}, undefined, { clock });
const M = '1.200001001';
const M2 = '1.200001002';
/** A subscriber in each format on `mids`, whose new frames start at `mark()`. */
async function subscribers(t: Test, mids: string[]): Promise<Client[]> {
  const subs = [await Client.connect(svc.url), await Client.connect(svc.url, { format: 'proto' })];
  for (const c of subs) {
    t.teardown(() => c.close());
    t.equal((await c.request({ op: 'subscribe', mids })).status, 1);
  }
  return subs;
}
const freshnessOf = (c: Client, mid: string, from: number) => c.frames.slice(from).filter((f): f is FreshnessMessage => f.op === 'freshness' && f.mid === mid);

t.test('heartbeats keep a quiet publisher\'s markets live; silence past two intervals makes them stale, a heartbeat live again', async (t) => {
  const pub = await Publisher.open(svc.url, {}, 'live=1000');
  t.teardown(() => pub.close());
  pub.send(1, [image(M, 2.5)]);
  t.same(await pub.ack(1), { id: 1, status: 1, message: 'Ingested 1 item' });
  const subs = await subscribers(t, [M]);
  const from = subs.map((c) => c.frames.length);
  let id = 1;
  // 3.6 s of heartbeats alone on the service's clock, one every 400 ms: well within the 1 s interval.
  for (let i = 0; i < 9; i++) {
    clock.advance(400);
    pub.send(++id, []);
    t.same(await pub.ack(id), { id, status: 1, message: 'Ingested 0 items' });
  }
  const lastHeard = clock.now();
  clock.advance(2000);
  for (const [i, c] of subs.entries()) {
    await c.settled();
    t.same(freshnessOf(c, M, from[i]), [], `${c.format}: live through 3.6 s of heartbeats at a 1 s interval, and at two intervals of silence`);
  }
  clock.advance(250);
  for (const [i, c] of subs.entries()) {
    const f = await c.next((f) => f.op === 'freshness' && f.mid === M, 5000, from[i]);
    t.match(f, { live: false, why: 'publisher' }, `${c.format}: stale once silent past two intervals`);
    t.ok(f.op === 'freshness' && f.at > lastHeard + 2000 && f.at <= lastHeard + 2250, `${c.format}: at the first look past two intervals (looked at every 250 ms)`);
  }
  const beforeHeartbeat = subs.map((c) => c.frames.length);
  pub.send(++id, []);
  for (const [i, c] of subs.entries()) await c.next((f) => f.op === 'freshness' && f.mid === M && f.live, 2000, beforeHeartbeat[i]);
  t.pass('a heartbeat makes them live again at once');
  const beforeClose = subs.map((c) => c.frames.length);
  pub.close();
  await pub.closed;
  for (const [i, c] of subs.entries()) {
    t.match(await c.next((f) => f.op === 'freshness' && f.mid === M, 2000, beforeClose[i]), { live: false, why: 'publisher' }, `${c.format}: a disconnect makes them stale at once`);
  }
});

t.test('`late` on an image and `stale` items mark a market until its next plain image, with the reason, in metrics too', async (t) => {
  const pub = await Publisher.open(svc.url);
  t.teardown(() => pub.close());
  const subs = await subscribers(t, [M, M2]);
  pub.send(1, [image(M, 3), image(M2, 3)]);
  await pub.ack(1);
  for (const c of subs) {
    await c.next((f) => f.op === 'odds' && f.mid === M2 && f.r[0].b[0][0] === 3);
    await c.settled();
  }
  const from = subs.map((c) => c.frames.length);
  pub.send(2, [{ ...image(M, 3.1), late: true }, { kind: 'stale', mid: M2, why: 'unreliable' }]);
  t.same(await pub.ack(2), { id: 2, status: 1, message: 'Ingested 2 items' });
  for (const [i, c] of subs.entries()) {
    const late = await c.next((f) => f.op === 'freshness' && f.mid === M, 2000, from[i]);
    t.match(late, { live: false, why: 'late' }, `${c.format}: late`);
    const image = c.frames.findIndex((f, k) => k >= from[i] && f.op === 'odds' && f.mid === M);
    t.ok(image > c.frames.indexOf(late), 'before the late image, which is published');
    t.match(await c.next((f) => f.op === 'freshness' && f.mid === M2, 2000, from[i]), { live: false, why: 'unreliable' }, `${c.format}: unreliable`);
  }
  const stale = await scrape(svc.url);
  t.ok(value(stale, 'odds_markets_stale', 'reason="late"') >= 1 && value(stale, 'odds_markets_stale', 'reason="unreliable"') >= 1, 'the gauge counts them by reason');
  t.notOk([...stale.keys()].some((k) => k.startsWith('odds_markets_stale{') && k.includes(M)), 'never by market');
  pub.send(3, [{ kind: 'stale', mid: M, why: 'nope' }, { kind: 'stale', mid: 'no.such', why: 'late' }]);
  t.match(await pub.ack(3), { status: 1, message: 'Ingested 0 items; refused 2', refused: [{ i: 0, mid: M, message: /why must be one of late, unreliable/ }, { i: 1, mid: 'no.such', message: /market no.such is not known/ }] });
  pub.send(4, [image(M, 3.2), image(M2, 3.2)]);
  await pub.ack(4);
  for (const [i, c] of subs.entries()) {
    await c.next((f) => f.op === 'freshness' && f.mid === M && f.live, 2000, from[i]);
    await c.next((f) => f.op === 'freshness' && f.mid === M2 && f.live, 2000, from[i]);
    t.same(freshnessOf(c, M, from[i]).map((f) => f.why ?? 'live'), ['late', 'unreliable', 'live'], `${c.format}: a refused stale item of a known market makes it unreliable too`);
  }
});

t.test('a liveness out of range refuses the publisher\'s handshake, naming the parameter', async (t) => {
  for (const live of ['999', '60001', 'soon']) {
    await t.rejects(Publisher.open(svc.url, {}, `live=${live}`), /400/, live);
  }
});

t.test('the feed: STALE after the silence, told at once to a socket that opens while stale, OK when a batch is accepted', async (t) => {
  const feedClock = new FakeClock(Date.now());
  const feed = await startTestService(t, { FEED_STALE_MS: '400' }, undefined, { clock: feedClock });
  const c = await Client.connect(feed.url);
  t.teardown(() => c.close());
  await c.settled();
  t.same(c.frames.filter((f) => f.op === 'feed'), [], 'OK at the start, which sockets assume: nothing told');
  feedClock.advance(500);
  t.same(await c.next((f) => f.op === 'feed', 3000), { op: 'feed', status: 'STALE' });
  const late = await Client.connect(feed.url, { format: 'proto' });
  t.teardown(() => late.close());
  t.same(await late.next((f) => f.op === 'feed', 1000), { op: 'feed', status: 'STALE' }, 'a socket opening while stale is told at once');
  const from = c.frames.length;
  const refused = await postJson(feed.url, '/api/v1/ingest', { data: [{ kind: 'market', mid: 'no.such.market', s: 'open' }] });
  t.equal(refused.status, 400);
  await c.settled();
  t.equal(c.frames.slice(from).filter((f) => f.op === 'feed').length, 0, 'a refused batch is not a publisher being heard');
  await postJson(feed.url, '/api/v1/ingest', { data: [image('1.200001007', 2, [1])] });
  t.same(await c.next((f) => f.op === 'feed', 2000, from), { op: 'feed', status: 'OK' });
});
