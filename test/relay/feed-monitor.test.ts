import t from 'tap';
import { FakeClock } from '../helpers/clock.js';
import { FeedMonitor } from '../../src/relay/feed-monitor.js';
import type { FeedStatus } from '../../src/odds/messages.js';
import { postJson, startTestService } from '../helpers/service.js';
import { Client, image } from '../helpers/ws.js';

/** A monitor on a clock the test moves, telling every change. */
function monitor(staleMs = 1000) {
  const clock = new FakeClock(0);
  const changes: FeedStatus[] = [];
  const m = new FeedMonitor({ staleMs, clock });
  m.listen({ feedChanged: (s) => changes.push(s) });
  return { m, changes, advance: (ms: number) => { clock.advance(ms); m.evaluate(); } };
}

t.test('STALE after the silence passes staleMs, OK again once a publisher is heard; each change told once', async (t) => {
  const { m, changes, advance } = monitor();
  advance(1000);
  t.equal(m.status, 'OK', 'at the limit it is still OK');
  advance(1);
  advance(500);
  t.same(changes, ['STALE']);
  m.heard();
  t.same(changes, ['STALE', 'OK']);
  m.heard();
  t.same(changes, ['STALE', 'OK'], 'no repeat');
});

t.test('while the bus is down it stays STALE, however much is heard', async (t) => {
  const { m, changes } = monitor();
  m.busDown(true);
  m.heard();
  m.heard();
  t.equal(m.status, 'STALE');
  m.busDown(false);
  t.same(changes, ['STALE', 'OK'], 'OK once the bus is back and publishers are heard');
});

t.test('a bus back after the silence passed stays STALE until a publisher is heard', async (t) => {
  const { m, advance } = monitor();
  m.busDown(true);
  advance(5000);
  m.busDown(false);
  t.equal(m.status, 'STALE');
  m.heard();
  t.equal(m.status, 'OK');
});

const M = '1.200001007';

t.test('over sockets: STALE after the silence, told at once to a socket that opens while stale, OK when a batch is accepted', async (t) => {
  const svc = await startTestService(t, { FEED_STALE_MS: '400' });
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  t.same(await c.next((f) => f.op === 'feed', 3000), { op: 'feed', status: 'STALE' });
  const late = await Client.connect(svc.url, { format: 'proto' });
  t.teardown(() => late.close());
  t.same(await late.next((f) => f.op === 'feed', 1000), { op: 'feed', status: 'STALE' }, 'a socket opening while stale is told at once');
  const from = c.frames.length;
  const refused = await postJson(svc.url, '/api/v1/ingest', { data: [{ kind: 'market', mid: 'no.such.market', s: 'open' }] });
  t.equal(refused.status, 400);
  await c.settled();
  t.equal(c.frames.slice(from).filter((f) => f.op === 'feed').length, 0, 'a refused batch is not a publisher being heard');
  await postJson(svc.url, '/api/v1/ingest', { data: [image(M, 2, [1])] });
  t.same(await c.next((f) => f.op === 'feed', 2000, from), { op: 'feed', status: 'OK' });
});
