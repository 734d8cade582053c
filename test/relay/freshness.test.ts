import t from 'tap';
import { FakeClock } from '../helpers/clock.js';
import { Freshness, LIVENESS, parseLiveness } from '../../src/relay/freshness.js';
import type { SourceFreshness } from '../../src/bus/types.js';
import type { FreshnessMessage } from '../../src/odds/messages.js';

/**
 * Every market's freshness, the tracker on a clock the test moves: publishers' liveness, `late`
 * and `stale` items, refusals, other pods. (The whole path over real sockets: relay/sockets.test.ts.)
 */

/** A tracker on a clock the test moves, telling every change; `known` markets are 1.1 to 1.9, `held` those with an image. */
function tracker(held: string[] = []) {
  const clock = new FakeClock(1000);
  const told: FreshnessMessage[] = [];
  const shared: SourceFreshness[][] = [];
  const f = new Freshness({
    listener: { publishState: (msg) => told.push(msg) },
    bus: { shareFreshness: (states) => shared.push([...states]) },
    markets: { known: (mid) => /^1\.\d$/.test(mid), held: () => held },
    clock,
  });
  const advance = (ms: number) => {
    clock.advance(ms);
    f.check();
  };
  const said = () => told.splice(0).map((m) => (m.live ? `${m.mid} live` : `${m.mid} ${m.why}`));
  /** Shares leave once the turn's items are judged: after a microtask. */
  const flushed = async () => {
    await Promise.resolve();
    return shared.splice(0).flat().map((s) => `${s.mid} ${s.why ?? 'live'}`);
  };
  return { f, told, said, advance, flushed, at: () => clock.now() };
}

t.test('a connection silent for two intervals makes exactly its markets stale (publisher); anything it sends makes them live again', async (t) => {
  const { f, said, advance } = tracker();
  const a = f.connect(1000);
  const b = f.connect(5000);
  f.fed(a, '1.1', false);
  f.fed(a, '1.2', false);
  f.fed(b, '1.3', false);
  t.same(said(), [], 'fed markets start live: nothing to tell');
  advance(2000);
  t.same(said(), [], 'at two intervals it is still live');
  advance(1);
  t.same(said(), ['1.1 publisher', '1.2 publisher'], 'past two intervals: its markets, and only those');
  advance(1000);
  t.same(said(), [], 'told once');
  a.heard();
  t.same(said(), ['1.1 live', '1.2 live'], 'a heartbeat brings them back at once');
  for (let i = 0; i < 5; i++) {
    advance(1500);
    a.heard();
    b.heard();
  }
  t.same(said(), [], 'heard within every two intervals: live throughout');
  advance(2001);
  t.same(said(), ['1.1 publisher', '1.2 publisher']);
  advance(7999);
  t.same(said(), [], 'b within its own two intervals of 5 s');
  advance(1);
  t.same(said(), ['1.3 publisher']);
});

t.test('a disconnect makes its markets stale at once; a new connection feeding them makes them live', async (t) => {
  const { f, said, told, at } = tracker();
  const a = f.connect();
  f.fed(a, '1.1', false);
  f.fed(a, '1.2', false);
  a.close();
  const closedAt = at();
  t.match(told, [{ op: 'freshness', mid: '1.1', live: false, why: 'publisher', at: closedAt }, { mid: '1.2', live: false, why: 'publisher' }]);
  said();
  const b = f.connect();
  f.fed(b, '1.1', false);
  t.same(said(), ['1.1 live'], 'the new connection feeds 1.1; 1.2 stays stale until someone feeds it');
  a.heard();
  t.same(said(), [], 'a closed connection heard late changes nothing');
});

t.test('the newest feeder owns a market: the one it took it from going quiet leaves it live', async (t) => {
  const { f, said, advance } = tracker();
  const old = f.connect(1000);
  const fresh = f.connect(1000);
  f.fed(old, '1.1', false);
  f.fed(fresh, '1.1', false);
  old.close();
  t.same(said(), [], 'the old one no longer feeds it');
  advance(1500);
  fresh.heard();
  advance(1500);
  t.same(said(), []);
});

t.test('late: from an image flagged late, or a stale item, until an image without it', async (t) => {
  const { f, said } = tracker();
  const a = f.connect();
  f.fed(a, '1.1', true);
  t.same(said(), ['1.1 late']);
  f.fed(a, '1.1', true);
  t.same(said(), [], 'still late: no repeat');
  f.fed(a, '1.1', false);
  t.same(said(), ['1.1 live']);
  f.marked(a, '1.2', 'late');
  f.marked(a, '1.3', 'unreliable');
  t.same(said(), ['1.2 late', '1.3 unreliable']);
  f.fed(a, '1.2', false);
  f.fed(a, '1.3', true);
  t.same(said(), ['1.2 live', '1.3 late'], 'an image clears unreliable; its own late flag still counts');
});

t.test('unreliable from a refused image until the next accepted one; the reasons rank bus, publisher, unreliable, late', async (t) => {
  const { f, said } = tracker(['1.1', '1.2']);
  const a = f.connect();
  f.fed(a, '1.1', true);
  f.refused(a, '1.1');
  t.same(said(), ['1.1 late', '1.1 unreliable'], 'unreliable outranks late');
  a.close();
  t.same(said(), ['1.1 publisher']);
  f.busDown(true);
  t.same(said(), ['1.1 bus', '1.2 bus'], 'every market held is stale while the bus is down, publisher or not');
  t.same(f.staleCounts(), { bus: 2, publisher: 0, unreliable: 0, late: 0 });
  f.busDown(false);
  t.same(said(), ['1.1 publisher', '1.2 live'], 'back: each to what its source says');
  const b = f.connect();
  f.fed(b, '1.1', false);
  t.same(said(), ['1.1 live']);
  t.same(f.staleCounts(), { bus: 0, publisher: 0, unreliable: 0, late: 0 });
});

t.test('REST keys are feeders at the default interval, one per key', async (t) => {
  const { f, said, advance } = tracker();
  const k = f.rest('key-a');
  t.equal(f.rest('key-a'), k, 'one per key');
  t.not(f.rest('key-b'), k);
  t.equal(k.liveMs, LIVENESS.default);
  f.fed(k, '1.1', false);
  advance(2 * LIVENESS.default);
  t.same(said(), []);
  advance(1);
  t.same(said(), ['1.1 publisher']);
  f.rest('key-a').heard();
  t.same(said(), ['1.1 live']);
});

t.test('a forgotten market is gone from the counts and is told nothing more', async (t) => {
  const { f, said } = tracker();
  const a = f.connect();
  f.marked(a, '1.1', 'late');
  said();
  f.forget('1.1');
  t.same(f.staleCounts(), { bus: 0, publisher: 0, unreliable: 0, late: 0 });
  a.close();
  t.same(said(), [], 'no longer fed by a');
});

t.test('other pods: what they report is shown, a pod gone silent makes its markets publisher-stale, and back restores them', async (t) => {
  const { f, said, told, flushed } = tracker();
  const POD = '00000000-0000-4000-8000-000000000001';
  f.reported(POD, [{ mid: '1.1', why: undefined, at: 1 }, { mid: '1.2', why: 'late', at: 500 }, { mid: 'nope', why: 'late', at: 1 }]);
  t.match(told, [{ mid: '1.2', live: false, why: 'late', at: 500 }], 'its time, when what it says is shown');
  t.same(said(), ['1.2 late'], 'an unknown market is dropped');
  f.pod(POD, false);
  t.same(said(), ['1.1 publisher', '1.2 publisher']);
  f.pod(POD, true);
  t.match(told, [{ mid: '1.1', live: true }, { mid: '1.2', live: false, why: 'late', at: 500 }], 'back as it said, since when it said');
  said();
  t.same(await flushed(), [], 'what other pods feed is never shared back');
  const here = f.connect();
  f.fed(here, '1.1', false);
  t.same(await flushed(), ['1.1 live'], 'a publisher here takes the market over, and the other pods are told');
  f.pod(POD, false);
  t.same(said(), ['1.2 publisher'], 'the silent pod no longer feeds 1.1');
  t.same(f.fedHere().map((s) => s.mid), ['1.1']);
});

t.test('what this pod\'s publishers feed is shared once per change, a batch in one message', async (t) => {
  const { f, flushed } = tracker();
  const a = f.connect();
  f.fed(a, '1.1', false);
  f.fed(a, '1.2', true);
  f.fed(a, '1.1', false);
  t.same(await flushed(), ['1.1 live', '1.2 late'], 'a new feeder is told even when live');
  f.fed(a, '1.1', false);
  t.same(await flushed(), [], 'nothing changed');
  a.close();
  t.same(await flushed(), ['1.1 publisher', '1.2 publisher']);
});

t.test('the liveness a connection may declare', async (t) => {
  t.equal(parseLiveness('1000'), 1000);
  t.equal(parseLiveness('60000'), 60000);
  for (const bad of ['999', '60001', '5e3', '-1000', '', '1000.5', '0x3e8']) t.equal(parseLiveness(bad), undefined, bad);
});
