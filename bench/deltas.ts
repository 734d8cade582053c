/**
 * Deltas against images on real-shaped markets (a step of `npm run bench`; alone:
 * `node dist/bench/deltas.js` after a build). Markets of 10 and 20 runners with 10-level ladders
 * on both sides, each change moving one or two levels of one runner, as exchange markets move.
 *
 * 1. Bytes per change, through the server's own book (src/odds/book.ts): for every change, the
 *    frame a delta subscriber is sent (a delta, or the image where a delta would not be smaller)
 *    and the image frame, per format and depth (10 and 3).
 * 2. CPU per delivery: the service in its own process, pinned like every server under test,
 *    DELTA_SOCKETS sockets each taking every market, a publisher ingesting DELTA_RATE changes a
 *    second; the same sockets take images, then deltas (a later subscribe replaces the first), at
 *    the same rate: server CPU ÷ frames received, both times, in each format.
 *
 * Settings (env; a bad value stops the run naming it): DELTA_CHANGES (2000 per market shape),
 * DELTA_SOCKETS (100), DELTA_RATE (200 changes/s), BENCH_SECONDS (3 measured per row).
 */
import WebSocket from 'ws';
import { Book, FORMATS, type Format, type Frame } from '../src/odds/book.js';
import { validateOdds } from '../src/ingest/validate-odds.js';
import type { OddsImage } from '../src/odds/image.js';
import { pinLoadGenerator } from './lib/cores.js';
import { envNumber } from './lib/env.js';
import { cpuMicros, machine } from './lib/proc.js';
import { fmt, mdTable, writeResults } from './lib/report.js';
import { log, runMain, sleep } from './lib/run.js';
import { startServer } from './lib/server.js';
import { prepareDatabase } from './lib/data.js';
import { LadderMarket, postIngest, publishChanges } from './lib/ladders.js';

/** Every setting (env), read once; the header lists them with their defaults. */
const SETTINGS = Object.freeze({
  changes: Math.round(envNumber('DELTA_CHANGES', 2000)),
  sockets: Math.round(envNumber('DELTA_SOCKETS', 100)),
  rate: envNumber('DELTA_RATE', 200),
  seconds: envNumber('BENCH_SECONDS', 3),
});
const SHAPES = [10, 20];
const DEPTHS = [10, 3];

const size = (f: Frame) => (typeof f === 'string' ? Buffer.byteLength(f) : f.byteLength);

interface BytesRow { runners: number; format: Format; depth: number; image: number; delta: number; ratio: number; keyframes: number }

/** The market's next change as the service reads it (ingest's check of its item). */
function nextImage(market: LadderMarket): OddsImage {
  const read = validateOdds(market.next());
  if ('error' in read) throw new Error(read.error);
  return read.image;
}

/** Mean bytes per change of what a delta subscriber and an image subscriber are sent. */
function bytesPerChange(runners: number): BytesRow[] {
  const market = new LadderMarket(`b.${runners}`, runners, runners);
  const book = new Book();
  const totals = new Map<string, { image: number; delta: number; keyframes: number }>();
  for (let i = 0; i <= SETTINGS.changes; i++) {
    const entry = book.put({ epoch: 'bench', seq: i + 1, publishTime: Date.now(), image: nextImage(market) })!;
    if (i === 0) continue;
    for (const format of FORMATS) {
      for (const depth of DEPTHS) {
        const t = totals.get(`${format}/${depth}`) ?? { image: 0, delta: 0, keyframes: 0 };
        const image = entry.frame(format, 'none', depth);
        const sent = entry.deltaFrame(format, depth);
        t.image += size(image);
        t.delta += size(sent);
        if (sent === image) t.keyframes++;
        totals.set(`${format}/${depth}`, t);
      }
    }
    entry.prev = undefined;
  }
  return [...totals].map(([key, t]) => {
    const [format, depth] = key.split('/');
    return { runners, format: format as Format, depth: Number(depth), image: t.image / SETTINGS.changes, delta: t.delta / SETTINGS.changes, ratio: t.delta / t.image, keyframes: t.keyframes };
  });
}

interface CpuRow { format: Format; delta: boolean; delivered: number; deliveriesPerSec: number; bytesPerDelivery: number; cpuNsPerDelivery: number }

/** Server CPU per frame received, images then deltas, in one format. */
async function cpuPerDelivery(url: string, pid: number, format: Format, markets: LadderMarket[]): Promise<CpuRow[]> {
  const mids = markets.map((m) => m.mid);
  let frames = 0;
  let bytes = 0;
  const sockets = await Promise.all(Array.from({ length: SETTINGS.sockets }, () => new Promise<WebSocket>((ok, fail) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws') + '/ws', [`odds.v1.${format}`], { perMessageDeflate: false });
    ws.on('message', (data: Buffer) => {
      frames++;
      bytes += data.length;
    });
    ws.once('open', () => ok(ws)).once('error', fail);
  })));
  const rows: CpuRow[] = [];
  try {
    for (const delta of [false, true]) {
      const request = JSON.stringify({ op: 'subscribe', id: 1, mids, ...(delta ? { delta: true } : {}) });
      // Protobuf sockets may send JSON requests only as text; the service reads requests by frame type.
      for (const ws of sockets) ws.send(request, { binary: false });
      const publish = (seconds: number) => publishChanges(url, markets, SETTINGS.rate, seconds);
      await publish(1);
      const [f0, b0, c0, w0] = [frames, bytes, cpuMicros(pid), performance.now()];
      await publish(SETTINGS.seconds);
      const wall = (performance.now() - w0) / 1000;
      const delivered = frames - f0;
      rows.push({ format, delta, delivered, deliveriesPerSec: delivered / wall, bytesPerDelivery: (bytes - b0) / Math.max(1, delivered), cpuNsPerDelivery: ((cpuMicros(pid) - c0) * 1000) / Math.max(1, delivered) });
      await sleep(500);
    }
  } finally {
    for (const ws of sockets) ws.terminate();
  }
  return rows;
}

async function main(): Promise<void> {
  const bytes = SHAPES.flatMap(bytesPerChange);
  const pinning = pinLoadGenerator();
  const db = await prepareDatabase();
  const server = await startServer({
    name: 'service', args: ['dist/src/main.js'], pinning,
    env: { DATABASE_URL: db.url, PORT: '0', HOST: '127.0.0.1', DEMO_DATA: 'on', SIMULATOR: 'off', LOG_LEVEL: 'warn', LOG_FORMAT: 'json', DRAIN_DELAY_MS: '0' },
  });
  const cpu: CpuRow[] = [];
  try {
    const markets = Array.from({ length: 10 }, (_, i) => new LadderMarket(`bench.d.${i}`, SHAPES[i % 2], i + 1));
    await postIngest(server.url, markets.map((m) => m.market()));
    await postIngest(server.url, markets.map((m) => m.next()));
    for (const format of FORMATS) {
      log(`deltas: CPU per delivery, ${format}`);
      cpu.push(...(await cpuPerDelivery(server.url, server.pid, format, markets)));
    }
  } finally {
    await server.stop();
    await db.stop();
  }
  const name = { json: 'JSON', proto: 'protobuf' } as const;
  const bytesTable = mdTable(['market', 'format', 'depth', 'image B/change', 'delta B/change', 'delta ÷ image', 'sent as image'],
    bytes.map((b) => [`${b.runners} runners`, name[b.format], String(b.depth), fmt(b.image), fmt(b.delta), `${b.ratio.toFixed(3)}x`, `${b.keyframes} of ${SETTINGS.changes}`]));
  const cpuTable = mdTable(['format', 'subscription', 'deliveries/s', 'bytes/delivery', 'server CPU ns/delivery', 'deltas ÷ images'],
    cpu.map((c) => {
      const images = cpu.find((x) => x.format === c.format && !x.delta)!;
      return [name[c.format], c.delta ? 'deltas' : 'images', fmt(c.deliveriesPerSec), fmt(c.bytesPerDelivery), fmt(c.cpuNsPerDelivery), c.delta ? `${(c.cpuNsPerDelivery / images.cpuNsPerDelivery).toFixed(2)}x` : ''];
    }));
  const md = [
    '## Deltas against images',
    '',
    `${String(machine().cpu)}; ${pinning.note}. Bytes: ${SETTINGS.changes} changes per market shape through the server's book, each moving one or two ladder levels of one runner. ` +
      `CPU: ${SETTINGS.sockets} sockets taking 10 markets (10 and 20 runners), ${SETTINGS.rate} changes/s published, ${SETTINGS.seconds} s measured per row.`,
    '',
    bytesTable,
    '',
    cpuTable,
  ].join('\n');
  writeResults('deltas', { benchmark: 'deltas', at: new Date().toISOString(), machine: machine(), settings: { CHANGES: SETTINGS.changes, SOCKETS: SETTINGS.sockets, RATE: SETTINGS.rate, SECONDS: SETTINGS.seconds }, bytes, cpu }, md);
  process.stdout.write('\n' + md + '\n\n');
}

runMain('bench', main);
