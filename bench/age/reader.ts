/**
 * bench:age's screens of one kind, in a process of their own (age.ts forks one per kind, so a
 * paced reader's pace is its own): `count` raw readers or TypeScript clients, each taking `mids`,
 * at full speed or at `rate` bytes a second (bench/lib/reader.ts). Each screen holds a market
 * live unless told otherwise: a raw reader by the server's `freshness` frames alone, the client
 * as `client.freshness` says (the server's word and its own clock rule).
 *
 * Every odds frame read is timed against its `pt` (the age of that price on the screen when the
 * screen reads it) and counted in the phase of the feed it was published in (steady or burst),
 * apart for frames read while live and while not. Every time a market turns not live on a screen
 * (a notice) it keeps when, since when the server or client says it was behind, and which image
 * the screen held; the first screen keeps when each image it read was published (its `pt`), from
 * which age.ts finds when the screen's price was superseded.
 *
 * IPC: `start` (answered `ready` once every screen's subscribe is answered), `measure` (the
 * phases), `report` (answered with the figures), `close`.
 */
import type { Socket } from 'node:net';
import type { OddsClient } from '../../src/client/index.js';
import { pacedClient, rawReader, type Rate, type Read } from '../lib/reader.js';
import { Histogram } from '../lib/statistics.js';
import type { Notice, Phase, PhaseFigures, ReaderReport, Screens } from './settings.js';

/** A market on one screen: shown live or not, and the image it holds. */
interface Held {
  live: boolean;
  seq: number;
}

/** The figures of one phase kind as they are gathered. */
class Tally {
  readonly live = new Histogram();
  readonly notLive = new Histogram();
  pastBound = 0;

  figures(): PhaseFigures {
    return { live: this.live.toJSON(), notLive: this.notLive.toJSON(), pastBound: this.pastBound };
  }
}

const now = () => performance.timeOrigin + performance.now();

let maxAgeMs = 2000;
let phases: Phase[] = [];
const tallies = new Map<string, Tally>();
const notices: Notice[] = [];
/** When each image (by seq) of each market was published, as the first screen read it. */
const published = new Map<string, number[]>();
const closes: string[] = [];
let lives = 0;

/** The tally of the phase a frame published at `pt` belongs to; none before the first (the warm-up) or after the last. */
function tallyOf(pt: number): Tally | undefined {
  const p = phases.find((x) => pt >= x.from && pt < x.to);
  if (!p) return undefined;
  let t = tallies.get(p.kind);
  if (!t) tallies.set(p.kind, (t = new Tally()));
  return t;
}

/** An odds frame read on a screen: its age counted where it belongs. */
function readOdds(screen: number, mid: string, held: Held, seq: number, pt: number): void {
  const at = now();
  held.seq = seq;
  if (screen === 0) {
    if (!published.has(mid)) published.set(mid, []);
    published.get(mid)![seq] = pt;
  }
  const t = tallyOf(pt);
  if (!t) return;
  const age = at - pt;
  if (!held.live) return t.notLive.recordMs(age);
  t.live.recordMs(age);
  if (age > maxAgeMs) t.pastBound++;
}

/** A market's freshness changed on a screen. */
function turned(screen: number, mid: string, held: Held, live: boolean, since: number | undefined, why: string | undefined): void {
  if (held.live === live) return;
  held.live = live;
  // Before the feed starts (the screens wait for a quiet machine) nothing is counted.
  if (!phases.length) return;
  if (live) lives++;
  else notices.push({ screen, mid, readAt: now(), since: since ?? NaN, heldSeq: held.seq, why: why ?? '' });
}

function screenOf(mids: string[]): Map<string, Held> {
  return new Map(mids.map((m) => [m, { live: true, seq: NaN }]));
}

/** A raw reader: live as the server's `freshness` frames say. */
function raw(screen: number, s: Screens, port: number, rate: Rate | undefined, subscribed: () => void): Socket {
  const held = screenOf(s.mids);
  return rawReader({
    port, mids: s.mids, rate,
    read: (msg: Read) => {
      if (msg.op === 'ack' && msg.status === 1) return subscribed();
      if (msg.op === 'ack') return void closes.push(`subscribe refused: ${JSON.stringify(msg)}`);
      const h = msg.mid === undefined ? undefined : held.get(msg.mid);
      if (!h) return;
      if (msg.op === 'odds') readOdds(screen, msg.mid!, h, msg.seq!, msg.pt!);
      else if (msg.op === 'freshness') turned(screen, msg.mid!, h, msg.live!, msg.at, msg.why);
    },
    closed: (why) => void closes.push(why),
  });
}

/** The TypeScript client: live as `client.freshness` says. */
function client(screen: number, s: Screens, port: number, rate: Rate, subscribed: () => void): Promise<OddsClient> {
  const held = screenOf(s.mids);
  return pacedClient({
    port, mids: s.mids, rate, maxAgeMs, subscribed,
    odds: (msg, f) => {
      const h = held.get(msg.mid);
      if (!h) return;
      turned(screen, msg.mid, h, f.live, f.live ? undefined : f.since, f.live ? undefined : f.why);
      readOdds(screen, msg.mid, h, msg.seq, msg.pt);
    },
    freshness: (f) => {
      const h = held.get(f.mid);
      if (h) turned(screen, f.mid, h, f.live, f.live ? undefined : f.since, f.live ? undefined : f.why);
    },
  });
}

/** Opens the screens; resolves once every one's subscribe is answered. */
async function start(port: number, s: Screens): Promise<void> {
  maxAgeMs = s.maxAgeMs;
  const rate: Rate | undefined = s.rate > 0 ? () => s.rate : undefined;
  let left = s.count;
  let done!: () => void;
  const all = new Promise<void>((ok) => (done = ok));
  const subscribed = () => --left === 0 && done();
  for (let i = 0; i < s.count; i++) {
    if (s.kind === 'raw') raw(i, s, port, rate, subscribed);
    else await client(i, s, port, rate ?? (() => 0), subscribed);
  }
  await all;
}

function report(): ReaderReport {
  const byKind = Object.fromEntries([...tallies].map(([k, t]) => [k, t.figures()]));
  return { phases: byKind, notices, lives, closes, published: Object.fromEntries(published) };
}

process.on('message', (m: { type: string; port?: number; screens?: Screens; phases?: Phase[] }) => {
  if (m.type === 'start') void start(m.port!, m.screens!).then(() => process.send!({ type: 'ready' }));
  else if (m.type === 'measure') {
    phases = m.phases!;
    process.send!({ type: 'measuring' });
  } else if (m.type === 'report') process.send!({ type: 'report', report: report() });
  else if (m.type === 'close') {
    process.send!({ type: 'closed' });
    process.exit(0);
  }
});
