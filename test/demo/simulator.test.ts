import t from 'tap';
import { demoItems } from '../../src/demo/data.js';
import { LADDER, isOnLadder } from '../../src/demo/ticks.js';
import { Simulator, type SimMarket } from '../../src/demo/simulator.js';
import type { OddsImage } from '../../src/odds/image.js';
import { wireOf } from '../helpers/images.js';
import type { WireOddsImage } from '../../src/odds/messages.js';
import { checkPrices, pricingOf } from '../../src/ingest/prices.js';
import { validateOdds } from '../../src/ingest/validate-odds.js';
import { FakeClock } from '../helpers/clock.js';
import { seeded } from '../helpers/random.js';
import { SLOTS } from '../../src/demo/fixtures.js';
import { OVERROUND, SAME_OUTCOME_BAND, priceProblems } from './coherence.js';

let fixtures = 0;
/** A market of a fixture of its own unless `extra` names one. */
const mk = (mid: string, type: SimMarket['type'], extra: Partial<SimMarket> = {}): SimMarket =>
  ({ mid, type, name: mid, eventId: ++fixtures, startTime: '', inPlay: true, active: true, closed: false, rids: [], ...extra });

const RUNNER_MARKETS: SimMarket[] = [
  mk('mo', 'match-odd', { rids: [101, 102] }),
  mk('soccer', 'match-odd', { rids: [1101, 1102, 9000] }),
  mk('bm', 'bookmaker', { rids: [101, 102], inPlay: false }),
  mk('race', 'winner-market', { rids: [7011, 7012, 7013, 7014, 7015, 7016, 7017], inPlay: false }),
  mk('goals', 'goals', { rids: [9011, 9012] }),
];
const LINE_MARKETS: SimMarket[] = [
  mk('sess', 'session'), mk('ball', 'ball-by-ball'), mk('oe', 'odd-even'), mk('kh', 'khadometer'),
  mk('line', 'line-market', { inPlay: false }), mk('other', 'other-market'),
];

/** A tick's images as the simulator's feed sends them, in the keys of a publisher's items. */
const ticked = (sim: Simulator): WireOddsImage[] => sim.tick().map(wireOf);

/** Runs `ticks` ticks over `markets` and returns each market's images in order. */
function run(markets: SimMarket[], ticks: number, seed = 1): Map<string, WireOddsImage[]> {
  const sim = new Simulator({ markets: () => markets, publish: () => {}, random: seeded(seed), clock: new FakeClock(42) });
  const byMid = new Map<string, WireOddsImage[]>(markets.map((m) => [m.mid, []]));
  for (let i = 0; i < ticks; i++) for (const img of ticked(sim)) byMid.get(img.mid)!.push(img);
  return byMid;
}

const is2dp = (x: number) => x === Math.round(x * 100) / 100;
const open = (imgs: WireOddsImage[]) => imgs.filter((i) => i.st === 'OPEN');

t.test('runner markets quote up to three back and three lay levels per runner, on the ladder, worse level by level', async (t) => {
  const byMid = run(RUNNER_MARKETS, 200);
  for (const m of RUNNER_MARKETS) {
    const imgs = byMid.get(m.mid)!;
    t.ok(imgs.length > 10, `${m.mid} published`);
    for (const img of imgs) {
      t.strictSame(img.r.map((r) => r.rid), m.rids);
      for (const r of img.r) {
        const worse = (side: (readonly [number, number])[], sign: number) => side.every((level, i) => i === 0 || sign * (level[0] - side[i - 1]![0]) > 0);
        const ok = r.st === 'ACTIVE' && r.b.length >= 1 && r.b.length <= 3 && r.l.length >= 1 && r.l.length <= 3
          // Fewer than three only where the ladder ends (1.01, 1000).
          && (r.b.length === 3 || r.b.at(-1)![0] === 1.01) && (r.l.length === 3 || r.l.at(-1)![0] === 1000)
          && [...r.b, ...r.l].every(([p, s]) => isOnLadder(p) && s >= 5 && s <= 2500 && is2dp(s))
          && r.b[0][0] < r.l[0][0] && worse(r.b, -1) && worse(r.l, 1);
        if (!ok) t.fail(`${m.mid} rid ${r.rid}: bad ladder ${JSON.stringify(r)}`);
      }
    }
  }
});

t.test('best prices move by a few ticks, never more than 10 in one step', async (t) => {
  const byMid = run(RUNNER_MARKETS, 200);
  let moves = 0;
  for (const [mid, imgs] of byMid) {
    for (let i = 1; i < imgs.length; i++) {
      imgs[i].r.forEach((r, k) => {
        const jump = Math.abs(LADDER.indexOf(r.b[0][0]) - LADDER.indexOf(imgs[i - 1].r[k].b[0][0]));
        if (jump > 10) t.fail(`${mid} rid ${r.rid} jumped ${jump} ticks`);
        if (jump > 0) moves++;
      });
    }
  }
  t.ok(moves > 100, `best backs moved ${moves} times`);
});

t.test('the back book is overround and the lay book underround', async (t) => {
  for (const [mid, imgs] of run(RUNNER_MARKETS, 100)) {
    for (const img of open(imgs)) {
      const back = img.r.reduce((s, r) => s + 1 / r.b[0][0], 0);
      const lay = img.r.reduce((s, r) => s + 1 / r.l[0][0], 0);
      if (!(lay < 1 && back > 1 && back < 1.2)) t.fail(`${mid}: back ${back}, lay ${lay}`);
    }
  }
  t.pass('every open book between 100% and 120% on the back side');
});

t.test('line markets quote one synthetic runner, rid 1, on integer run lines', async (t) => {
  for (const [mid, imgs] of run(LINE_MARKETS, 200)) {
    t.ok(imgs.length > 10, `${mid} published`);
    const lines = new Set<number>();
    for (const img of imgs) {
      t.equal(img.r.length, 1);
      const [{ rid, b, l }] = img.r;
      const [[yes, yesRate]] = b;
      const [[no, noRate]] = l;
      lines.add(no);
      const ok = rid === 1 && b.length === 1 && l.length === 1 && Number.isInteger(no) && no >= 0
        && (yes === no + 1 ? yesRate === 100 && noRate === 100 : yes === no && yesRate === 90 && noRate === 110);
      if (!ok) t.fail(`${mid}: bad line ${JSON.stringify(img.r)}`);
    }
    t.ok(lines.size > 1, `${mid} line moved`);
  }
});

t.test('every image of every market type passes its price rule, whatever the seed', async (t) => {
  const markets = [...RUNNER_MARKETS, ...LINE_MARKETS];
  let images = 0;
  for (const seed of [1, 2, 3, 4, 5]) {
    for (const [mid, imgs] of run(markets, 300, seed)) {
      const m = markets.find((x) => x.mid === mid)!;
      for (const img of imgs) {
        images++;
        const read = validateOdds({ ...img });
        const bad = 'error' in read ? read.error : checkPrices(read.image, pricingOf(m.type, m.rids.length > 0));
        if (bad) t.fail(`seed ${seed} ${mid}: ${bad}`);
      }
    }
  }
  t.ok(images > 5000, `${images} images checked`);
});

t.test('runner markets trade at a best price with volumes that only grow; line markets carry neither', async (t) => {
  const byMid = run([...RUNNER_MARKETS, ...LINE_MARKETS], 100);
  for (const m of RUNNER_MARKETS) {
    let before = new Map<number, number>();
    for (const img of open(byMid.get(m.mid)!)) {
      const now = new Map(img.r.map((r) => [r.rid, r.tv!]));
      const ok = img.r.every((r) => (r.ltp === r.b[0][0] || r.ltp === r.l[0][0]) && r.tv! >= (before.get(r.rid) ?? 0))
        && Math.abs(img.tv! - img.r.reduce((s, r) => s + r.tv!, 0)) < 0.01;
      if (!ok) t.fail(`${m.mid}: ${JSON.stringify(img)}`);
      before = now;
    }
  }
  for (const m of LINE_MARKETS) {
    const imgs = byMid.get(m.mid)!;
    t.notOk(imgs.some((img) => 'tv' in img || img.r.some((r) => 'ltp' in r || 'tv' in r)), `${m.mid} has no ltp or tv`);
  }
});

t.test('in-play, a cricket fixture\'s ball markets go BALL_RUNNING together, saying so, with ladders, then reopen on a moved line', async (t) => {
  const markets = [mk('sess', 'session', { sportId: 4, eventId: 500 }), mk('ball', 'ball-by-ball', { sportId: 4, eventId: 500 })];
  const sim = new Simulator({ markets: () => markets, publish: () => {}, random: seeded(1), clock: new FakeClock(42) });
  const imgs = new Map<string, WireOddsImage[]>(markets.map((m) => [m.mid, []]));
  const at = new Map<string, number[]>(markets.map((m) => [m.mid, []]));
  for (let tick = 0; tick < 400; tick++) {
    for (const img of ticked(sim)) {
      imgs.get(img.mid)!.push(img);
      if (img.st === 'BALL_RUNNING') at.get(img.mid)!.push(tick);
    }
  }
  const ticks = (mid: string) => at.get(mid)!;
  for (const [mid, list] of imgs) {
    const running = list.flatMap((img, i) => (img.st === 'BALL_RUNNING' ? [i] : []));
    t.ok(running.length >= 15 && running.length <= 80, `${mid}: ${running.length} balls in 400 ticks`);
    t.ok(running.every((i) => list[i].sr === 'ball running'), 'each says why');
    for (const i of running.filter((i) => i + 1 < list.length)) {
      t.equal(list[i].r[0].l.length, 1, 'ladder kept while the ball runs');
      t.equal(list[i + 1].st, 'OPEN');
      t.not(list[i + 1].r[0].l[0][0], list[i].r[0].l[0][0], 'line moved after the ball');
    }
  }
  t.same(ticks('sess'), ticks('ball'), 'one ball, both markets at once');
});

t.test('pre-match markets never ball-run nor pause', async (t) => {
  const markets = [mk('sess', 'session', { inPlay: false }), mk('ball', 'ball-by-ball', { inPlay: false }),
    mk('mo', 'match-odd', { rids: [1, 2], inPlay: false })];
  const sts = [...run(markets, 500).values()].flat().map((i) => i.st);
  t.ok(sts.length > 100);
  t.ok(sts.every((st) => st === 'OPEN'));
});

t.test('in play, a soccer match\'s markets are suspended together for each goal (and its VAR check), saying why, ladders kept; never without an event', async (t) => {
  const markets = [mk('mo', 'match-odd', { rids: [1, 2, 9000], sportId: 1, eventId: 600 }), mk('ou', 'goals', { name: 'Over/Under 2.5 Goals', rids: [9011, 9012], sportId: 1, eventId: 600 })];
  const byMid = run(markets, 6000);
  const stops = (mid: string) => byMid.get(mid)!.filter((img) => img.st === 'SUSPENDED');
  const mo = stops('mo');
  t.ok(mo.length >= 3 && mo.length <= 30, `${mo.length} suspensions in 6000 ticks`);
  t.ok(mo.every((img) => img.sr === 'goal' || img.sr === 'VAR'), 'each for a goal or its VAR check');
  t.same(mo.map((img) => img.sr), stops('ou').map((img) => img.sr), 'both markets, each time');
  t.ok(mo.every((img) => img.r[0].b.length === 3), 'ladders kept');
  const plain = run([mk('tennis', 'match-odd', { rids: [1, 2], sportId: 2 })], 2000).get('tennis')!;
  t.notOk(plain.some((img) => img.st !== 'OPEN'), 'a match without events never suspends');
});

t.test('in-play markets change on most ticks, pre-match ones on about one in five', async (t) => {
  const byMid = run([mk('live', 'match-odd', { rids: [1, 2] }), mk('pre', 'match-odd', { rids: [1, 2], inPlay: false })], 500);
  const live = byMid.get('live')!.length;
  const pre = byMid.get('pre')!.length;
  t.ok(live > 330 && live < 450, `in play: ${live} of 500`);
  t.ok(pre > 70 && pre < 130, `pre-match: ${pre} of 500`);
});

t.test('a closed market is published once as CLOSED, then never again', async (t) => {
  const closing = mk('later', 'match-odd', { rids: [1, 2] });
  const markets = [mk('done', 'match-odd', { rids: [1, 2], closed: true }), mk('sdone', 'session', { closed: true }), closing];
  const seen: WireOddsImage[] = [];
  const sim = new Simulator({ markets: () => markets, publish: () => {}, random: seeded(3) });
  for (let i = 0; i < 50; i++) {
    if (i === 20) closing.closed = true;
    seen.push(...ticked(sim));
  }
  for (const mid of ['done', 'sdone', 'later']) {
    const closed = seen.filter((i) => i.mid === mid && i.st === 'CLOSED');
    t.equal(closed.length, 1, `${mid} closed once`);
    t.equal(seen.filter((i) => i.mid === mid).at(-1), closed[0], `${mid}: nothing after CLOSED`);
  }
  t.strictSame(seen.find((i) => i.mid === 'sdone')!.r, [{ rid: 1, st: 'ACTIVE', b: [], l: [] }]);
});

t.test('an inactive market is published SUSPENDED once, and reopens when active', async (t) => {
  const m = mk('bm2', 'bookmaker2', { rids: [101, 102], active: false });
  const sim = new Simulator({ markets: () => [m], publish: () => {}, random: seeded(4) });
  const first = ticked(sim);
  t.equal(first.length, 1);
  t.equal(first[0].st, 'SUSPENDED');
  t.equal(first[0].r[0].b.length, 3, 'suspended with its ladders');
  for (let i = 0; i < 30; i++) t.strictSame(ticked(sim), [], 'silent while still inactive');
  m.active = true;
  t.equal(ticked(sim)[0]?.st, 'OPEN');
});

t.test('images carry now() and the in-play flag; markets are re-read every tick', async (t) => {
  const markets: SimMarket[] = [mk('a', 'match-odd', { rids: [1, 2], inPlay: false })];
  const clock = new FakeClock(1000);
  const sim = new Simulator({ markets: () => markets, publish: () => {}, random: seeded(5), clock });
  t.match(ticked(sim), [{ mid: 'a', ts: 1000, ip: false, st: 'OPEN' }]);
  markets.push(mk('b', 'session'), mk('race', 'player-race'));
  clock.advance(1000);
  const next = ticked(sim);
  t.match(next.find((i) => i.mid === 'b'), { ts: 2000, ip: true }, 'a new market is picked up');
  t.notOk(next.some((i) => i.mid === 'race'), 'a market with no runners and no line has no book');
});

t.test('the same seed gives the same feed', async (t) => {
  t.strictSame(run([...RUNNER_MARKETS, ...LINE_MARKETS], 50, 9), run([...RUNNER_MARKETS, ...LINE_MARKETS], 50, 9));
});

/** The demo data set's markets as the simulator lists them: a player race's head-to-heads each a market of their own. */
function demoMarkets(now: Date): SimMarket[] {
  const items = demoItems(now);
  const events = new Map(items.flatMap((i) => (i.kind === 'event' ? [[i.eid, i] as const] : [])));
  return items.flatMap((i) => {
    if (i.kind !== 'market') return [];
    const e = events.get(i.eid)!;
    const of = { name: i.na, type: i.ty, eventId: i.eid, startTime: e.st, inPlay: e.ip };
    return [
      { ...of, mid: i.mid, active: i.s, closed: i.go, rids: (i.r ?? []).map((r) => r.rid) },
      ...(i.m ?? []).map((n) => ({ ...of, mid: n.mid, active: n.s, closed: n.go, rids: n.r.map((r) => r.rid) })),
    ];
  });
}

t.test('the first tick over the demo data set prices every market that has a book', async (t) => {
  const markets = demoMarkets(new Date());
  const images = ticked(new Simulator({ markets: () => markets, publish: () => {}, random: seeded(6) }));
  const priced = markets.filter((m) => m.rids.length || m.type !== 'player-race');
  t.equal(images.length, priced.length);
  for (const img of images) {
    const m = priced.find((x) => x.mid === img.mid)!;
    t.equal(img.st, m.closed ? 'CLOSED' : m.active ? 'OPEN' : 'SUSPENDED', img.mid);
  }
});

t.test('start() publishes on a timer and stop() stops it', async (t) => {
  const batches: OddsImage[][] = [];
  const clock = new FakeClock();
  let alive = 0;
  const sim = new Simulator({ markets: () => RUNNER_MARKETS, publish: (b) => batches.push(b), alive: () => alive++, intervalMs: 5, clock });
  sim.start();
  sim.start(); // a second start must not add a second timer
  t.same(clock.periods(), [5], 'one timer, at its interval');
  clock.advance(4);
  t.equal(alive, 0, 'nothing before the first interval');
  clock.advance(1);
  t.equal(alive, 1, 'a tick at each interval, a sign of life whether it changed anything or not');
  clock.advance(95);
  t.equal(alive, 20, 'twenty in 100 ms: one timer');
  t.ok(batches.length >= 3 && batches.every((b) => b.length > 0), `${batches.length} batches, only non-empty ones published`);
  const n = batches.length;
  sim.stop();
  t.same(clock.periods(), [], 'stop() stops its timer');
  clock.advance(1000);
  t.equal(batches.length, n, 'nothing after stop()');
});

t.test('a tick prices at most 500 markets, taking the rest round robin', async (t) => {
  const markets = Array.from({ length: 600 }, (_, i) => mk(`m${i}`, 'match-odd', { rids: [1, 2] }));
  const sim = new Simulator({ markets: () => markets, publish: () => {}, random: seeded(7) });
  const first = ticked(sim);
  t.equal(first.length, 500);
  t.strictSame(ticked(sim).slice(0, 100).map((i) => i.mid), markets.slice(500).map((m) => m.mid));
});

t.test('a market listed again after it closed trades again, from a fresh book', async (t) => {
  const m = mk('again', 'match-odd', { rids: [101, 102] });
  const sim = new Simulator({ markets: () => [m], publish: () => {}, random: seeded(3), clock: new FakeClock(42) });
  t.equal(ticked(sim)[0]?.st, 'OPEN');
  m.closed = true;
  t.equal(ticked(sim)[0]?.st, 'CLOSED');
  t.same(ticked(sim), [], 'nothing more while it is closed');
  m.closed = false;
  const [image] = ticked(sim);
  t.equal(image?.st, 'OPEN', 'open again');
  t.ok(image.r.every((r) => r.b.length && r.l.length), 'with prices');
});

t.test('a line market opens within the range it is given, not its type\'s', async (t) => {
  const markets = Array.from({ length: 50 }, (_, i) => mk(`s${i}`, 'session', { line: [300, 310] }));
  const first = [...run(markets, 1).values()].map((images) => images[0].r[0].l[0][0]);
  t.ok(first.every((line) => line >= 298 && line <= 312), `No lines ${Math.min(...first)} to ${Math.max(...first)}`);
});

t.test('over a simulated day of the demo, each open book sums to 100% within its overround and each fixture\'s markets agree', async (t) => {
  // Every hour each fixture slot lists its next fixture (a new model) and the fixtures take turns in
  // play; the newest quotes of every fixture are checked each ten ticks.
  const day = Date.parse('2026-06-01T00:00:00Z');
  const markets = demoMarkets(new Date(day));
  const eids = [...new Set(markets.map((m) => m.eventId))];
  const sim = new Simulator({ markets: () => markets, publish: () => {}, random: seeded(11), clock: new FakeClock(42) });
  const quotes = new Map<string, WireOddsImage>();
  const problems: string[] = [];
  let checked = 0;
  for (let hour = 0; hour < 24; hour++) {
    for (const m of markets) {
      if (SLOTS.some((s) => s.eid === m.eventId)) m.startTime = new Date(day + hour * 3_600_000).toISOString();
      m.inPlay = (hour + m.eventId) % 3 !== 0;
    }
    for (let tick = 0; tick < 60; tick++) {
      for (const image of ticked(sim)) quotes.set(image.mid, image);
      if (tick % 10 !== 9) continue;
      for (const eid of eids) {
        const own = markets.filter((m) => m.eventId === eid && !m.closed);
        problems.push(...priceProblems(own, quotes).map((p) => `hour ${hour}, event ${eid}: ${p}`));
        checked += own.filter((m) => quotes.get(m.mid)?.st === 'OPEN' && m.rids.length).length;
      }
      if (problems.length > 20) break;
    }
  }
  t.same(problems.slice(0, 20), [], `the back book within ${OVERROUND.exchange! * 100}% over (a bookmaker ${OVERROUND.bookmaker! * 100}%, the second ${OVERROUND.bookmaker2! * 100}%), the lay book under 100%, one outcome within ${Math.round((SAME_OUTCOME_BAND - 1) * 100)}% across markets`);
  t.ok(checked > 5000, `${checked} open books checked`);
});

t.test('prices a betting screen would show: the tied match long, completed short, over 0.5 goals shorter than over 2.5', async (t) => {
  const markets = demoMarkets(new Date());
  const sim = new Simulator({ markets: () => markets, publish: () => {}, random: seeded(12), clock: new FakeClock(42) });
  const quotes = new Map<string, WireOddsImage>();
  for (let i = 0; i < 20; i++) for (const image of ticked(sim)) quotes.set(image.mid, image);
  const best = (na: string, eid: number, rid: number) => quotes.get(markets.find((m) => m.eventId === eid && m.name === na)!.mid)!.r.find((r) => r.rid === rid)!.b[0]![0];
  t.ok(best('Tied Match', 30000001, 9001) >= 20, `a tie at ${best('Tied Match', 30000001, 9001)}`);
  t.ok(best('Completed Match', 30000001, 9001) <= 1.05, `completed at ${best('Completed Match', 30000001, 9001)}`);
  t.ok(best('Over/Under 0.5 Goals', 30000011, 9011) < best('Over/Under 2.5 Goals', 30000011, 9011), 'over 0.5 goals the shorter');
});
