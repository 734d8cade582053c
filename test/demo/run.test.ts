import t from 'tap';
import { startTestService } from '../helpers/service.js';
import { Client, image } from '../helpers/ws.js';
import { Publisher } from '../faults/publisher-socket.js';
import { marketIdOf } from '../../src/demo/markets.js';
import { eventually } from '../helpers/wait.js';

/** Short, so several ticks pass in well under a second; the lifecycle kept out of the way. */
const svc = await startTestService(t, { SIMULATOR: 'on', SIMULATOR_INTERVAL_MS: '20', LIFECYCLE_INTERVAL_MS: '3600000' });

const ANIMATED = marketIdOf(30000011, 1); // Arsenal v Chelsea match odds: in play, so it moves on most ticks
const OTHER = marketIdOf(30000014, 1); // Real Madrid v Barcelona match odds: left to the simulator
const CREATED = 'ext.30000011.1';
const TICKS = 8;

t.test('markets an outside publisher feeds get only its images; the others keep moving', async (t) => {
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', mids: [OTHER], eids: [30000011] });
  const animated = c.frames.length;
  await c.next((f) => f.op === 'odds' && f.mid === ANIMATED, 5000, animated);
  t.pass('the simulator was animating the market');

  const pub = await Publisher.open(svc.url);
  t.teardown(() => pub.close());
  const ours = image(ANIMATED, 1.5, [1101, 1102, 9000]);
  const created = image(CREATED, 1.5, [1, 2]);
  pub.send(1, [ours]);
  pub.send(2, [
    { kind: 'market', mid: CREATED, eid: 30000011, na: 'Next Goal', ty: 'match-odd', s: true, go: false, rt: false, r: [{ rid: 1, na: 'Arsenal' }, { rid: 2, na: 'Chelsea' }] },
    created,
  ]);
  t.match(await pub.ack(1), { status: 1 });
  t.match(await pub.ack(2), { status: 1 });
  const fed = await c.next((f) => f.op === 'odds' && f.mid === ANIMATED && JSON.stringify(f.r) === JSON.stringify(ours.r));
  await c.next((f) => f.op === 'odds' && f.mid === CREATED);

  // Several simulator ticks later, measured by the market it still animates.
  const after = c.frames.indexOf(fed);
  for (let i = 0, at = after; i < TICKS; i++) at = c.frames.indexOf(await c.next((f) => f.op === 'odds' && f.mid === OTHER, 5000, at + 1));
  await c.settled();
  const later = (m: string) => c.oddsOf(m).filter((f) => c.frames.indexOf(f) > after);
  t.same(later(ANIMATED), [], 'nothing after the publisher\'s image of the market it took over');
  t.same(c.oddsOf(CREATED).map((f) => f.r), [created.r], 'only the publisher\'s image of the market it created');
  t.ok(later(OTHER).length >= TICKS, 'the market nobody else feeds kept moving');
});

t.test('a market another publisher created gets no simulator frame, before its own odds or after', async (t) => {
  const created = 'ext.30000014.2';
  const pub = await Publisher.open(svc.url);
  t.teardown(() => pub.close());
  pub.send(1, [{ kind: 'market', mid: created, eid: 30000014, na: 'Total Corners', ty: 'match-odd', s: true, go: false, rt: false, r: [{ rid: 1, na: 'Over' }, { rid: 2, na: 'Under' }] }]);
  t.match(await pub.ack(1), { status: 1 });
  t.ok(await eventually(async () => svc.model.typeOf(created), (ty) => ty !== undefined), 'the read model holds it, so the simulator\'s ticks see it');
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', mids: [OTHER, created] });
  const ticks = async () => {
    for (let i = 0, at = c.frames.length; i < TICKS; i++) at = c.frames.indexOf(await c.next((f) => f.op === 'odds' && f.mid === OTHER, 5000, at + 1));
    await c.settled();
  };
  await ticks();
  t.same(c.oddsOf(created), [], 'no image while it has no odds of its own');
  t.equal(svc.book.get(created), undefined, 'none was ever numbered');

  const own = image(created, 1.5, [1, 2]);
  pub.send(2, [own]);
  t.match(await pub.ack(2), { status: 1 });
  await ticks();
  t.same(c.oddsOf(created).map((f) => f.r), [own.r], 'then only the publisher\'s image');
});
