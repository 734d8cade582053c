/**
 * Exchange-to-socket delay (a step of `npm run bench`; alone: `npm run bench:delay`). A
 * recorded-shape in-play market (delay/recording.ts) replays at its recorded pace through the
 * service's `/ingest` to DELAY_SOCKETS (1,000) subscribers of it, then the same through the
 * ceiling (bare uWS: parse, stamp, encode, publish). The publisher sets each image's `ts` to the
 * moment it sends it, as an exchange stamps its publish time, so a frame's delay at a subscriber
 * is its arrival less its `ts`: the whole path from the source's send to the socket, on one
 * machine's clock. Every subscriber's copy of every frame counts: p50, p99 and max, and what the
 * service adds to the ceiling's path.
 *
 * The subscribers are plain `ws` sockets in this process, which also publishes, on the load
 * core; each copy is timed as it is read, so the figures include this process reading 1,000
 * copies of each frame, for both servers alike. Before each replay it waits for other processes
 * to quiet down (up to BENCH_QUIET_MS), and it reports how much of a core they used meanwhile.
 *
 * Settings (env; a bad value stops the run naming it): DELAY_SOCKETS (1000), DELAY_SECONDS (20 of
 * replay per server), DELAY_WARMUP (2 s of replay first, not counted).
 */
import WebSocket from 'ws';
import { pinLoadGenerator } from './lib/cores.js';
import { envNumber } from './lib/env.js';
import { machine } from './lib/proc.js';
import { Noise, waitQuiet } from './lib/quiet.js';
import { fmt, mdTable, writeResults } from './lib/report.js';
import { log, runMain, sleep } from './lib/run.js';
import { type Server } from './lib/server.js';
import { Histogram } from './lib/statistics.js';
import { prepareDatabase } from './lib/data.js';
import { startUnderTest } from './fanout/rig.js';
import { Ingest } from './scale/market.js';
import { recording, shapeOf, type Recording } from './delay/recording.js';

const SETTINGS = Object.freeze({
  sockets: Math.round(envNumber('DELAY_SOCKETS', 1000)),
  seconds: envNumber('DELAY_SECONDS', 20),
  warmup: envNumber('DELAY_WARMUP', 2),
});
const IMPLS = ['service', 'ceiling'] as const;
type Impl = (typeof IMPLS)[number];

/** Sub-millisecond time on the clock the publisher stamps `ts` with. */
const now = () => performance.timeOrigin + performance.now();

/** A number written after `key` near the start of a JSON frame, read without parsing the frame. */
function numberAfter(frame: Buffer, key: string): number {
  const at = frame.indexOf(key);
  if (at < 0) return NaN;
  const from = at + key.length;
  let to = from;
  while (to < frame.length && frame[to] !== 0x2c && frame[to] !== 0x7d) to++;
  return Number(frame.toString('latin1', from, to));
}

interface Timings {
  /** Arrival less `ts`: from the source's send to the socket. */
  fromSource: Histogram;
  /** Arrival less `pt`: from the server publishing it to the socket. */
  fromPublish: Histogram;
  frames: number;
  counting: boolean;
}

/** The subscribers: every socket subscribed to the market and acked. */
async function subscribe(url: string, mid: string, t: Timings): Promise<WebSocket[]> {
  const sockets: WebSocket[] = [];
  const open = (i: number) => new Promise<WebSocket>((ok, fail) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws') + '/ws', ['odds.v1.json'], { perMessageDeflate: false });
    ws.on('error', fail);
    ws.on('open', () => ws.send(JSON.stringify({ op: 'subscribe', id: i + 1, mids: [mid] })));
    ws.on('message', (data: Buffer) => {
      const at = now();
      if (data[7] === 0x61) { // {"op":"ack
        if (numberAfter(data, '"status":') !== 1) fail(new Error(`subscribe refused: ${data.toString()}`));
        ok(ws);
        return;
      }
      if (data[7] !== 0x6f || !t.counting) return; // {"op":"odds
      t.frames++;
      t.fromSource.recordMs(at - numberAfter(data, '"ts":'));
      t.fromPublish.recordMs(at - numberAfter(data, '"pt":'));
    });
  });
  for (let i = 0; i < SETTINGS.sockets; i += 100) {
    sockets.push(...(await Promise.all(Array.from({ length: Math.min(100, SETTINGS.sockets - i) }, (_, k) => open(i + k)))));
  }
  return sockets;
}

/** Replays the recording at its pace for warm-up plus the measured seconds; `ts` is each batch's moment of sending. */
async function replay(to: Ingest, rec: Recording, impl: Impl, t: Timings): Promise<number> {
  const start = now();
  const end = start + (SETTINGS.warmup + SETTINGS.seconds) * 1000;
  let due = start;
  let sent = 0;
  const acks: Promise<void>[] = [];
  for (const change of rec.changes) {
    due += change.gapMs;
    if (due > end) break;
    const wait = due - now();
    if (wait > 0) await sleep(wait);
    t.counting = now() - start >= SETTINGS.warmup * 1000;
    const ts = now();
    // The ceiling publishes odds only: reference data is the service's work alone.
    const items = change.items.filter((x) => impl === 'service' || x.kind === 'odds').map((x) => (x.kind === 'odds' ? { ...x, ts } : x));
    if (!items.length) continue;
    acks.push(to.send(items));
    sent++;
  }
  await Promise.all(acks);
  return sent;
}

interface Row {
  impl: Impl;
  changes: number;
  frames: number;
  fromSource: { p50: number; p99: number; max: number };
  fromPublish: { p50: number; p99: number; max: number };
  /** CPU other processes on the machine used during the replay, % of one core. */
  othersPct: number;
}

const summary = (h: Histogram) => ({ p50: h.pMs(50), p99: h.pMs(99), max: h.max / 1000 });

async function run(impl: Impl, rec: Recording, dbUrl: string, pinning: ReturnType<typeof pinLoadGenerator>): Promise<Row> {
  const server: Server = await startUnderTest(impl, 'json', dbUrl, pinning);
  const t: Timings = { fromSource: new Histogram(), fromPublish: new Histogram(), frames: 0, counting: false };
  let sockets: WebSocket[] = [];
  try {
    const ingest = await Ingest.open(server.url);
    if (impl === 'service') await ingest.send(rec.reference);
    sockets = await subscribe(server.url, rec.mid, t);
    await waitQuiet(() => [server.pid]);
    log(`${impl}: ${sockets.length} subscribers; replaying ${SETTINGS.warmup} + ${SETTINGS.seconds} s`);
    const noise = new Noise(() => [server.pid]);
    const changes = await replay(ingest, rec, impl, t);
    // The last frames' copies still on their way.
    await sleep(500);
    const othersPct = noise.foreignPct();
    ingest.close();
    return { impl, changes, frames: t.frames, fromSource: summary(t.fromSource), fromPublish: summary(t.fromPublish), othersPct };
  } finally {
    for (const ws of sockets) ws.terminate();
    await server.stop();
  }
}

async function main(): Promise<void> {
  const pinning = pinLoadGenerator();
  const db = await prepareDatabase();
  const rec = recording();
  const shape = shapeOf(rec);
  const rows: Row[] = [];
  try {
    for (const impl of IMPLS) rows.push(await run(impl, rec, db.url, pinning));
  } finally {
    await db.stop();
  }
  const [service, ceiling] = rows;
  const adds = { p50: service.fromSource.p50 - ceiling.fromSource.p50, p99: service.fromSource.p99 - ceiling.fromSource.p99, max: service.fromSource.max - ceiling.fromSource.max };
  const ms = (v: number) => (Number.isFinite(v) ? v.toFixed(v < 10 ? 2 : 1) : '–');
  const table = mdTable(
    ['server', 'changes replayed', 'frames timed', 'source to socket p50 · p99 · max (ms)', 'publish to socket p50 · p99 · max (ms)', 'other processes (% of a core)'],
    rows.map((r) => [r.impl, fmt(r.changes), fmt(r.frames), `${ms(r.fromSource.p50)} · ${ms(r.fromSource.p99)} · ${ms(r.fromSource.max)}`,
      `${ms(r.fromPublish.p50)} · ${ms(r.fromPublish.p99)} · ${ms(r.fromPublish.max)}`, fmt(r.othersPct)]),
  );
  const md = [
    '## Exchange-to-socket delay (npm run bench:delay)',
    '',
    `${fmt(SETTINGS.sockets)} subscribers of one recorded-shape in-play market (${shape.runners} runners, ${shape.levelsPerImage} levels an image, ` +
      `${shape.changesPerSecond} changes a second at its recorded pace), ${SETTINGS.seconds} s measured after ${SETTINGS.warmup} s of warm-up, per server; ` +
      `${pinning.note}. The service adds ${ms(adds.p50)} ms at p50 and ${ms(adds.p99)} ms at p99 to the ceiling's path.`,
    '',
    table,
  ].join('\n');
  writeResults('delay', { benchmark: 'delay', at: new Date().toISOString(), machine: machine(), settings: SETTINGS, shape, pinning: pinning.note, rows, adds }, md);
  process.stdout.write('\n' + md + '\n\n');
}

runMain('bench:delay', main);
