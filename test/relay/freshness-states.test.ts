import t from 'tap';
import { FakeClock } from '../helpers/clock.js';
import { Freshness, type MarketsHere } from '../../src/relay/freshness.js';
import type { SourceFreshness } from '../../src/bus/types.js';
import type { FreshnessMessage } from '../../src/odds/messages.js';

/**
 * Each market's freshness, over a clock the test moves and fakes of what it
 * tells: a price is live, or stale with why (its publisher gone or silent, the
 * publisher's own late or unreliable, a refused image, the bus down), each
 * change told to the market's subscribers once, and to other pods when this
 * pod's publisher feeds it.
 */
function setup(known = ['1.1', '1.2', '1.3']) {
  const clock = new FakeClock(1000);
  const told: FreshnessMessage[] = [];
  const shared: SourceFreshness[][] = [];
  const held = new Set<string>();
  const markets: MarketsHere = { known: (mid) => known.includes(mid) || held.has(mid), held: () => held };
  const fresh = new Freshness({ listener: { publishState: (m) => told.push(m) }, bus: { shareFreshness: (s) => shared.push([...s]) }, markets, clock });
  /** What subscribers were told since the last call, one line each: `mid live` or `mid why`. */
  const said = () => told.splice(0).map((m) => `${m.mid} ${m.live ? 'live' : m.why}`);
  const microtask = () => new Promise<void>((ok) => queueMicrotask(ok));
  return { fresh, said, shared, held, advance: (ms: number) => clock.advance(ms), microtask };
}

t.test('a fed market is live; its publisher closing makes it stale (publisher) at once; another publisher feeding it makes it live', async (t) => {
  const { fresh, said } = setup();
  const a = fresh.connect();
  fresh.fed(a, '1.1', false);
  fresh.fed(a, '1.1', false);
  t.same(said(), [], 'live is what subscribers assume: nothing to tell');
  a.close();
  t.same(said(), ['1.1 publisher']);
  const b = fresh.connect();
  const c = fresh.connect();
  fresh.fed(b, '1.1', false);
  t.same(said(), ['1.1 live']);
  fresh.fed(c, '1.1', false);
  b.close();
  t.same(said(), [], 'a publisher that no longer feeds the market closing changes nothing: the newest image is c\'s');
});

t.test('a publisher silent past two liveness intervals makes its markets stale; heard again, live', async (t) => {
  const { fresh, said, advance } = setup();
  const a = fresh.connect(1000);
  fresh.fed(a, '1.1', false);
  fresh.fed(a, '1.2', false);
  said();
  advance(2000);
  fresh.check();
  t.same(said(), [], 'two intervals are allowed');
  advance(1);
  fresh.check();
  t.same(said().sort(), ['1.1 publisher', '1.2 publisher']);
  t.same(fresh.staleCounts(), { bus: 0, publisher: 2, unreliable: 0, late: 0 }, 'counted by reason');
  a.heard();
  t.same(said().sort(), ['1.1 live', '1.2 live'], 'any sign of life, even a refused message, is life');
  t.same(fresh.staleCounts().publisher, 0);
});

t.test('late and unreliable from the publisher, and a refused image, hold until the next accepted image', async (t) => {
  const { fresh, said } = setup();
  const a = fresh.connect();
  fresh.fed(a, '1.1', true);
  t.same(said(), ['1.1 late'], 'an image the source says is late');
  fresh.fed(a, '1.1', false);
  fresh.marked(a, '1.1', 'unreliable');
  fresh.fed(a, '1.2', false);
  fresh.refused(a, '1.2');
  t.same(said(), ['1.1 live', '1.1 unreliable', '1.2 unreliable'], 'a refused image leaves subscribers holding a price that is no longer true');
  fresh.fed(a, '1.2', false);
  t.same(said(), ['1.2 live']);
});

t.test('the bus down makes every market held here stale (bus) over any other reason; back, each shows its own again', async (t) => {
  const { fresh, said, held } = setup();
  const a = fresh.connect();
  fresh.fed(a, '1.1', false);
  fresh.fed(a, '1.2', true);
  held.add('1.1').add('1.2').add('1.3');
  said();
  fresh.busDown(true);
  t.same(said().sort(), ['1.1 bus', '1.2 bus', '1.3 bus'], 'even a market no publisher here feeds: its price came through the bus');
  fresh.busDown(true);
  t.same(said(), [], 'told once');
  fresh.busDown(false);
  t.same(said().sort(), ['1.1 live', '1.2 late', '1.3 live']);
});

t.test('other pods: their reports of known markets are shown with their time; a silent pod makes its markets stale; a market fed here is shared once per change, together per turn', async (t) => {
  const { fresh, said, shared, microtask } = setup();
  fresh.reported('pod-b', [{ mid: '1.1', why: 'late', at: 500 }, { mid: '9.9', why: undefined, at: 500 }]);
  const told = said();
  t.same(told, ['1.1 late'], 'an unknown market\'s report is dropped');
  fresh.pod('pod-b', false);
  t.same(said(), ['1.1 publisher'], 'the pod that fed it fell silent');
  fresh.pod('pod-b', true);
  t.same(said(), ['1.1 late']);
  const a = fresh.connect();
  fresh.fed(a, '1.2', false);
  fresh.fed(a, '1.3', false);
  await microtask();
  t.same(shared, [[{ mid: '1.2', why: undefined, at: 1000 }, { mid: '1.3', why: undefined, at: 1000 }]], 'one message for the turn\'s changes');
  fresh.fed(a, '1.2', false);
  await microtask();
  t.equal(shared.length, 1, 'nothing changed: nothing shared');
  fresh.fed(a, '1.1', false);
  t.same(said().slice(-1), ['1.1 live'], 'a publisher here takes the market over from the other pod');
  t.same(fresh.fedHere().map((s) => s.mid).sort(), ['1.1', '1.2', '1.3'], 'what a joining pod is told this pod feeds');
});

t.test('a market the read model deleted is forgotten with its count and no frame', async (t) => {
  const { fresh, said } = setup();
  const a = fresh.connect();
  fresh.fed(a, '1.1', true);
  said();
  fresh.forget('1.1');
  t.same(fresh.staleCounts().late, 0);
  a.close();
  t.same(said(), [], 'its feeder closing tells nobody of it');
  t.same(fresh.fedHere(), []);
});
