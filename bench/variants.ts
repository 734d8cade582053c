/**
 * Encode-once under any client parameters (`npm run bench:variants`): the same
 * 100 sockets taking the same 10 markets, first all asking one conflation
 * interval, then each asking a different one (100 to 991 ms). The server snaps
 * intervals to presets (src/hub/variant.ts) and caches each conflated delta
 * once per variant and base, so the second costs about what the first does.
 * Server CPU ÷ frames received, per format, as images and as deltas; the
 * service in its own process, pinned to one core and the load to the other.
 * Before the presets, each interval was a variant of its own and conflated
 * deltas were encoded per variant: 3.5 to 10 times the shared case's CPU.
 * No baseline or ceiling row: neither conflates.
 *
 * Settings (env; a bad value stops the run naming it): VARIANT_SOCKETS (100),
 * VARIANT_RATE (200 changes/s), BENCH_SECONDS (3 measured per row).
 */
import WebSocket from 'ws';
import { FORMATS, type Format } from '../src/odds/book.js';
import { conflatePreset } from '../src/hub/variant.js';
import { pinLoadGenerator } from './lib/cores.js';
import { envNumber } from './lib/env.js';
import { cpuMicros, machine } from './lib/proc.js';
import { fmt, mdTable, writeResults } from './lib/report.js';
import { log, runMain, sleep } from './lib/run.js';
import { startServer } from './lib/server.js';
import { prepareDatabase } from './lib/data.js';
import { LadderMarket, postIngest, publishChanges } from './lib/ladders.js';

const SETTINGS = Object.freeze({
  sockets: Math.round(envNumber('VARIANT_SOCKETS', 100)),
  rate: envNumber('VARIANT_RATE', 200),
  seconds: envNumber('BENCH_SECONDS', 3),
});
/**
 * Each socket's own interval (100, 109, 118, ... 991 ms: four presets), and the shared one: 500 ms,
 * whose frames a second come nearest the mix's, so the fixed cost of ingesting the changes is
 * spread over about as many frames in both rows.
 */
const SHARED_MS = 500;
const ownMs = (i: number) => 100 + i * 9;

interface Row { format: Format; delta: boolean; mix: 'shared' | 'distinct'; intervals: number; variants: number; frames: number; cpuNsPerFrame: number }

/** One row: every socket re-subscribes as `mix` says, then the server's CPU per frame received while changes are published. */
async function measure(url: string, pid: number, sockets: WebSocket[], counter: { frames: number }, markets: LadderMarket[], format: Format, delta: boolean, mix: Row['mix']): Promise<Row> {
  const mids = markets.map((m) => m.mid);
  const asked = sockets.map((_, i) => (mix === 'shared' ? SHARED_MS : ownMs(i)));
  // Protobuf sockets may send JSON requests as text; the service reads requests by frame type.
  sockets.forEach((ws, i) => ws.send(JSON.stringify({ op: 'subscribe', id: 1, mids, conflate: asked[i], delta }), { binary: false }));
  await publishChanges(url, markets, SETTINGS.rate, 1);
  const [f0, c0] = [counter.frames, cpuMicros(pid)];
  await publishChanges(url, markets, SETTINGS.rate, SETTINGS.seconds);
  const frames = counter.frames - f0;
  const row = { format, delta, mix, intervals: new Set(asked).size, variants: new Set(asked.map(conflatePreset)).size, frames, cpuNsPerFrame: ((cpuMicros(pid) - c0) * 1000) / Math.max(1, frames) };
  await sleep(500);
  return row;
}

async function rowsFor(url: string, pid: number, format: Format, markets: LadderMarket[]): Promise<Row[]> {
  const counter = { frames: 0 };
  const sockets = await Promise.all(Array.from({ length: SETTINGS.sockets }, () => new Promise<WebSocket>((ok, fail) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws') + '/ws', [`odds.v1.${format}`], { perMessageDeflate: false });
    ws.on('message', () => counter.frames++);
    ws.once('open', () => ok(ws)).once('error', fail);
  })));
  const rows: Row[] = [];
  try {
    for (const delta of [false, true]) {
      for (const mix of ['shared', 'distinct'] as const) rows.push(await measure(url, pid, sockets, counter, markets, format, delta, mix));
    }
  } finally {
    for (const ws of sockets) ws.terminate();
  }
  return rows;
}

async function main(): Promise<void> {
  const pinning = pinLoadGenerator();
  const db = await prepareDatabase();
  const server = await startServer({
    name: 'service', args: ['dist/src/main.js'], pinning,
    env: { DATABASE_URL: db.url, PORT: '0', HOST: '127.0.0.1', DEMO_DATA: 'on', SIMULATOR: 'off', LOG_LEVEL: 'warn', LOG_FORMAT: 'json', DRAIN_DELAY_MS: '0' },
  });
  const rows: Row[] = [];
  try {
    const markets = Array.from({ length: 10 }, (_, i) => new LadderMarket(`bench.v.${i}`, 10 + (i % 2) * 10, i + 1));
    await postIngest(server.url, markets.map((m) => m.market()));
    await postIngest(server.url, markets.map((m) => m.next()));
    for (const format of FORMATS) {
      log(`variants: ${format}`);
      rows.push(...(await rowsFor(server.url, server.pid, format, markets)));
    }
  } finally {
    await server.stop();
    await db.stop();
  }
  const name = { json: 'JSON', proto: 'protobuf' } as const;
  const table = mdTable(['format', 'frames', 'sockets ask', 'intervals asked', 'variants run', 'frames received', 'server CPU ns/frame', 'distinct ÷ shared'],
    rows.map((r) => {
      const shared = rows.find((x) => x.format === r.format && x.delta === r.delta && x.mix === 'shared')!;
      return [name[r.format], r.delta ? 'deltas' : 'images', r.mix === 'shared' ? `one interval (${SHARED_MS} ms)` : 'each its own', r.intervals, r.variants, fmt(r.frames), fmt(r.cpuNsPerFrame),
        r.mix === 'distinct' ? `${(r.cpuNsPerFrame / shared.cpuNsPerFrame).toFixed(2)}x` : ''];
    }));
  const md = [
    '## Conflation variants: encode-once under any client parameters',
    '',
    `${String(machine().cpu)}; ${pinning.note}. ${SETTINGS.sockets} sockets taking 10 markets (10 and 20 runners, 10 levels a side), ` +
      `${SETTINGS.rate} changes/s published, ${SETTINGS.seconds} s measured per row; conflated, as images or as deltas.`,
    '',
    table,
  ].join('\n');
  writeResults('variants', { benchmark: 'variants', at: new Date().toISOString(), machine: machine(), settings: { SOCKETS: SETTINGS.sockets, RATE: SETTINGS.rate, SECONDS: SETTINGS.seconds }, rows }, md);
  process.stdout.write('\n' + md + '\n\n');
}

runMain('bench', main);
