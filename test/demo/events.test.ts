import t from 'tap';
import { Simulator, type SimMarket } from '../../src/demo/simulator.js';
import { wireOf } from '../helpers/images.js';
import type { WireOddsImage } from '../../src/odds/messages.js';
import { FakeClock } from '../helpers/clock.js';
import { seeded } from '../helpers/random.js';
import { priceProblems } from './coherence.js';

/**
 * The demo's prices move with the match, as a betting screen's do: a goal moves the match odds
 * and every goal line together (the markets suspended at once, saying why, and reopened at once
 * at the prices the goal moved them to), a wicket moves every market pricing the match and
 * lowers the runs lines; between events prices only drift, never swing. Checked with the
 * tests' own rules (coherence.ts), over long seeded runs.
 */

const TICKS = 30_000;
const LINES = [0.5, 1.5, 2.5, 3.5];
const HOME = 1101;

interface Tick {
  n: number;
  images: Map<string, WireOddsImage>;
}

/**
 * Runs the markets and yields each tick's images by market, as the simulator's feed sends them:
 * one tick at a time, so a long run is never held whole (holding 30,000 ticks cost more in
 * garbage collection than the simulation itself).
 */
function* run(markets: SimMarket[], ticks: number, seed: number): Generator<Tick> {
  const sim = new Simulator({ markets: () => markets, publish: () => {}, random: seeded(seed), clock: new FakeClock(42) });
  for (let n = 0; n < ticks; n++) yield { n, images: new Map(sim.tick().map(wireOf).map((img) => [img.mid, img])) };
}

/** A runner's chance as the best back prices say, each book normalised to 100%. */
function chance(img: WireOddsImage, rid: number): number {
  const total = img.r.reduce((s, r) => s + 1 / r.b[0][0], 0);
  return 1 / img.r.find((r) => r.rid === rid)!.b[0][0] / total;
}

const soccer: SimMarket[] = [
  { mid: 'mo', type: 'match-odd', name: 'Match Odds', eventId: 1, startTime: '', sportId: 1, inPlay: true, active: true, closed: false, rids: [HOME, 1102, 9000] },
  ...LINES.map((line): SimMarket => ({
    mid: `ou${line}`, type: 'goals', name: `Over/Under ${line} Goals`, eventId: 1, startTime: '', sportId: 1, inPlay: true, active: true, closed: false, rids: [9011, 9012],
  })),
];

/**
 * How far the match odds move in open play: each image's step over 0.02 from the one before, and
 * the most they moved over any minute (240 ticks). A suspension starts the count again.
 */
class SwingWatch {
  readonly steps: string[] = [];
  worst = 0;
  private open: { n: number; chances: number[] }[] = [];

  see(n: number, images: Map<string, WireOddsImage>): void {
    const mo = images.get('mo');
    if (!mo) return;
    if (mo.st !== 'OPEN') {
      this.open = [];
      return;
    }
    const chances = [HOME, 1102, 9000].map((rid) => chance(mo, rid));
    const before = this.open.at(-1);
    if (before) {
      const step = Math.max(...chances.map((c, i) => Math.abs(c - before.chances[i])));
      if (step > 0.02) this.steps.push(`tick ${n}: moved ${step.toFixed(3)}`);
    }
    this.open.push({ n, chances });
    this.open = this.open.filter((o) => o.n > n - 240);
    this.worst = Math.max(this.worst, ...chances.map((c, i) => Math.abs(c - this.open[0].chances[i])));
  }
}

/** The simulation is most of this file's time: the swing test reads the goal test's matches, watched as they ran. */
const swings = new Map<number, SwingWatch>();

t.test('soccer: a goal suspends match odds and every goal line at once, saying so, and they reopen together moved by it', async (t) => {
  for (const seed of [1, 2, 3]) {
    const held = new Map<string, WireOddsImage>();
    let goals = 0;
    /** The books before the goal being dealt with, and whether VAR looked at it (it may have ruled it out). */
    let lastOpen: Map<string, WireOddsImage> | undefined;
    let checked = false;
    const swing = new SwingWatch();
    swings.set(seed, swing);
    for (const { n, images } of run(soccer, TICKS, seed)) {
      swing.see(n, images);
      const stopped = [...images.values()].filter((img) => img.st === 'SUSPENDED');
      if (stopped.length) {
        t.equal(stopped.length, soccer.length, `seed ${seed} tick ${n}: every market of the match at once`);
        t.ok(stopped.every((img) => img.sr === stopped[0].sr && (img.sr === 'goal' || img.sr === 'VAR')), 'each for the same reason');
        if (stopped[0].sr === 'goal' && held.get('mo')?.st === 'OPEN') [lastOpen, checked] = [new Map(held), false];
        if (stopped[0].sr === 'VAR') checked = true;
      }
      for (const [mid, img] of images) held.set(mid, img);
      const reopened = [...images.values()].filter((img) => img.st === 'OPEN');
      if (lastOpen && reopened.length && [...held.values()].every((img) => img.st === 'OPEN')) {
        t.equal(reopened.length, soccer.length, `seed ${seed} tick ${n}: every market reopens at once`);
        const was = lastOpen;
        lastOpen = undefined;
        if (checked) continue;
        goals++;
        const moved = Math.max(...[HOME, 1102, 9000].map((rid) => Math.abs(chance(held.get('mo')!, rid) - chance(was.get('mo')!, rid))));
        // A goal in a match all but decided (its likeliest outcome 85% or more) hardly moves it, as on an exchange.
        const decidedMatch = Math.max(...[HOME, 1102, 9000].map((rid) => chance(was.get('mo')!, rid))) >= 0.85;
        t.ok(moved > 0.04 || decidedMatch, `seed ${seed} tick ${n}: the goal moved the match odds (by ${moved.toFixed(3)})`);
        const over = (img: WireOddsImage) => chance(img, 9011);
        t.ok(LINES.every((line) => over(held.get(`ou${line}`)!) >= over(was.get(`ou${line}`)!) - 0.005), `seed ${seed} tick ${n}: no goal line less likely over after a goal`);
        const decided = LINES.every((line) => held.get(`ou${line}`)!.r[0].b[0][0] === 1.01);
        t.ok(decided || LINES.some((line) => over(held.get(`ou${line}`)!) > over(was.get(`ou${line}`)!) + 0.01), `seed ${seed} tick ${n}: and the goal lines moved with it`);
      }
      if (n % 50 === 49) {
        const problems = priceProblems(soccer, held);
        if (problems.length) t.fail(`seed ${seed} tick ${n}: ${problems.join('; ')}`);
      }
    }
    t.ok(goals >= 3, `seed ${seed}: ${goals} goals scored and reopened on`);
  }
});

t.test('soccer: no swing without an event, image to image and over any minute of open play', async (t) => {
  t.same([...swings.keys()], [1, 2, 3], 'watched over the three matches above');
  for (const [seed, swing] of swings) {
    t.same(swing.steps, [], `seed ${seed}: no image moved the match odds over 0.02 without an event`);
    t.ok(swing.worst < 0.06, `seed ${seed}: at most ${swing.worst.toFixed(3)} in any minute of open play`);
  }
});

t.test('cricket: a wicket suspends every market of the match at once and moves them together; a ball runs only the ball markets', async (t) => {
  const cricket: SimMarket[] = [
    { mid: 'mo', type: 'match-odd', name: 'Match Odds', eventId: 2, startTime: '', sportId: 4, inPlay: true, active: true, closed: false, rids: [101, 102] },
    { mid: 'bm', type: 'bookmaker', name: 'Bookmaker', eventId: 2, startTime: '', sportId: 4, inPlay: true, active: true, closed: false, rids: [101, 102] },
    { mid: 'runs', type: 'session', name: '20 Over Runs IND', eventId: 2, startTime: '', sportId: 4, inPlay: true, active: true, closed: false, rids: [], line: [150, 170] },
  ];
  const held = new Map<string, WireOddsImage>();
  let wickets = 0;
  let before: Map<string, WireOddsImage> | undefined;
  for (const { n, images } of run(cricket, TICKS, 7)) {
    const why = new Set([...images.values()].filter((i) => i.st !== 'OPEN').map((i) => `${i.mid} ${i.st} ${i.sr}`));
    if ([...why].some((w) => w.includes('wicket'))) {
      t.same([...why].sort(), ['bm SUSPENDED wicket', 'mo SUSPENDED wicket', 'runs SUSPENDED wicket'], `tick ${n}: every market at once`);
      before ??= new Map(held);
    }
    if ([...why].some((w) => w.includes('ball running'))) t.same([...why], ['runs BALL_RUNNING ball running'], `tick ${n}: the ball markets alone`);
    for (const [mid, img] of images) held.set(mid, img);
    if (before && [...held.values()].every((img) => img.st === 'OPEN')) {
      wickets++;
      const batting = (mid: string) => chance(held.get(mid)!, 101) - chance(before!.get(mid)!, 101);
      t.ok(batting('mo') < -0.004 && batting('bm') < -0.004, `tick ${n}: the batting side less likely in both (${batting('mo').toFixed(3)}, ${batting('bm').toFixed(3)})`);
      t.ok(held.get('runs')!.r[0].l[0][0] < before.get('runs')!.r[0].l[0][0], 'and fewer runs expected');
      before = undefined;
    }
  }
  t.ok(wickets >= 5 && wickets <= 10, `${wickets} wickets: no more than an innings has`);
});
