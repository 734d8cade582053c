import t from 'tap';
import { startTestService } from '../helpers/service.js';
import { Client, image } from '../helpers/ws.js';
import { OutsideFeeds } from '../../src/ingest/outside.js';
import { mid as demoMid } from '../../src/demo/markets.js';
import type { Market } from '../../src/refdata/types.js';

const svc = await startTestService(t);

t.test('a simulator batch still in flight when an outside image arrives never overwrites it', async (t) => {
  const mid = demoMid(30000011, 1);
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', mids: [mid] });
  const from = c.frames.length;
  // The sport item makes the simulator's batch wait on a transaction; the
  // outside batch (odds only) is numbered in the meantime.
  const simulated = svc.ingest.accept(svc.ingest.read([{ kind: 'sport', si: 77, na: 'Curling', a: true }, image(mid, 3)]), { from: 'simulator' });
  const outside = svc.ingest.accept(svc.ingest.read([image(mid, 1.5)]));
  t.match(await Promise.all([simulated, outside]), [{ count: 2 }, { count: 1 }]);
  await c.settled();
  const frames = c.oddsOf(mid).filter((f) => c.frames.indexOf(f) >= from);
  t.same(frames.map((f) => f.r[0].b[0][0]), [1.5], 'only the outside image went out');
});

t.test('the simulator\'s odds go out until another publisher feeds the market, and never after', async (t) => {
  const mid = demoMid(30000014, 1);
  const c = await Client.connect(svc.url);
  t.teardown(() => c.close());
  await c.request({ op: 'subscribe', mids: [mid] });
  const from = c.frames.length;
  await svc.ingest.accept(svc.ingest.read([image(mid, 3)]), { from: 'simulator' });
  await svc.ingest.accept(svc.ingest.read([image(mid, 1.5)]));
  await svc.ingest.accept(svc.ingest.read([image(mid, 4)]), { from: 'simulator' });
  await c.settled();
  t.same(c.oddsOf(mid).filter((f) => c.frames.indexOf(f) >= from).map((f) => f.r[0].b[0][0]), [3, 1.5]);
});

t.test('markets leave the set when they leave the read model, nested ones included', async (t) => {
  const feeds = new OutsideFeeds();
  for (const mid of ['p', 'p.1', 'p.2', 'q', 'keep']) feeds.claim(mid);
  const race = (...nested: string[]): Market => ({
    id: 'p', eventId: 1, name: 'Race', sportId: 1, isActive: true, concluded: false, type: 'player-race', recalled: false,
    nested: nested.map((n) => ({ id: n, isActive: true, concluded: false, runners: [], info: null })),
  });
  const q: Market = { id: 'q', eventId: 1, name: 'Q', sportId: 1, isActive: true, concluded: false, type: 'match-odd', recalled: false };
  feeds.forgetGone([
    { kind: 'market', before: race('p.1', 'p.2'), after: race('p.1') },
    { kind: 'market', before: q },
    { kind: 'result', before: { marketId: 'keep', marketType: 'match-odd', outcome: '', recalled: false, abandoned: false } },
  ]);
  t.same(['p', 'p.1', 'p.2', 'q', 'keep'].filter((m) => feeds.has(m)), ['p', 'p.1', 'keep']);
});
