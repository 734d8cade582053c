/**
 * `npm run bench:scale`: one pod at many subscriber sockets (BENCH_SOCKETS), each subscribed by
 * event (one request: the event and its five markets) to an exchange-shaped market set
 * (scale/market.ts). Lean raw clients (fanout/raw-client.ts) in child processes over 16 loopback
 * source addresses, and 40 sampled sockets (fanout/sampler.ts, one per event) for latency and
 * loss. Per N: time to connect and subscribe all N; server RSS per subscribed socket; the highest
 * held rate of deliveries (rates double; a step is held when every frame arrived and the sampled
 * p99 is under 50 ms) and CPU per delivery there; p50 and p99 at half that rate; bytes per second;
 * then two reconnect storms, each ending with every socket checked against the newest images:
 * every socket cut with no close frame and resuming on the same server with `since`, and the
 * server restarted (a new process on the same database, then SIGTERM to the old one) with every
 * socket resuming on the new one. Server on core 0, load on core 1 (bench/lib/common.ts).
 *
 * Settings (env): BENCH_SOCKETS (10000,19000; a multiple of 40), SCALE_RATE (first step, updates/s
 * over all markets, 100), SCALE_STEPS (6), SCALE_SECONDS (2 per step), BENCH_DELTA (off; on adds
 * `delta: true` to every subscribe), SCALE_WORKERS (4), SCALE_PROFILE (a folder: the server writes
 * a V8 CPU profile of its run there).
 */
import {
  Histogram, cpuMicros, envFlag, envList, envNumber, fmt, log, machine, mdTable, pinLoadGenerator, rssBytes, sleep, startServer, writeResults, type Server,
} from './lib/common.js';
import { prepareDatabase } from './lib/data.js';
import { Child } from './fanout/child.js';
import { EVENTS, Feed, MARKETS, image, newestSeqs, post, publish, reference } from './scale/market.js';
import { storm, type StormResult } from './scale/storm.js';
import { Workers } from './scale/workers.js';

const SOCKETS = envList('BENCH_SOCKETS', ['10000', '19000']).map(Number);
const RATE = envNumber('SCALE_RATE', 100);
const STEPS = Math.round(envNumber('SCALE_STEPS', 6));
const SECONDS = envNumber('SCALE_SECONDS', 2);
const DELTA = envFlag('BENCH_DELTA', false);
const PROFILE = process.env.SCALE_PROFILE;
const P99_MS = 50;

const requestOf = (eid: number) => [{ mids: MARKETS.filter((m) => m.eid === eid).map((m) => m.mid), eids: [eid], ...(DELTA ? { delta: true } : {}) }];

export function startService(dbUrl: string, pinning: ReturnType<typeof pinLoadGenerator>): Promise<Server> {
  return startServer({
    name: 'service', args: ['dist/src/main.js'], pinning, nodeFlags: PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE}`] : [],
    env: {
      DATABASE_URL: dbUrl, PORT: '0', HOST: '127.0.0.1', DEMO_DATA: 'off', SIMULATOR: 'off', LOG_LEVEL: 'warn', LOG_FORMAT: 'json',
      FEED_STALE_MS: '3600000', DRAIN_DELAY_MS: '0', WS_MAX_SOCKETS: '100000', MAX_BODY_BYTES: String(16 * 1024 * 1024),
    },
  });
}

interface Step {
  rate: number;
  deliveriesPerS: number;
  cpuNsPerDelivery: number;
  bytesPerS: number;
  complete: number;
  p50: number;
  p99: number;
  lost: number;
}

/** One rate for SECONDS: deliveries counted against what the feed sent, CPU, bytes and the sampled latency. */
async function step(server: Server, w: Workers, sampler: Child, rate: number, perEvent: number, tick: { n: number }): Promise<Step> {
  await sampler.ask({ type: 'reset' }, 'reset');
  const c0 = await w.counts();
  const cpu0 = cpuMicros(server.pid);
  const t0 = Date.now();
  const sent = await publish(server.url, rate, SECONDS, tick);
  const wall = (Date.now() - t0) / 1000;
  const cpu = cpuMicros(server.pid) - cpu0;
  await sleep(500);
  const c1 = await w.counts();
  const s = await sampler.ask({ type: 'stats' }, 'stats');
  const h = Histogram.from(s.fromTs);
  const delivered = c1.odds - c0.odds;
  return {
    rate: sent / wall, deliveriesPerS: delivered / wall, cpuNsPerDelivery: (cpu * 1000) / Math.max(1, delivered), bytesPerS: (c1.bytes - c0.bytes) / wall,
    complete: delivered / Math.max(1, sent * perEvent), p50: h.pMs(50), p99: h.pMs(99), lost: s.lost,
  };
}

interface Row {
  sockets: number;
  connectMs: number;
  connected: number;
  kibPerSocket: number;
  held: Step | undefined;
  half: Step | undefined;
  steps: Step[];
  vanish: StormResult;
  restart: StormResult;
}

async function runOne(n: number, dbUrl: string): Promise<Row> {
  const pinning = pinLoadGenerator();
  let server = await startService(dbUrl, pinning);
  const w = new Workers(n - EVENTS.length);
  const sampler = Child.start('sampler.js', 0);
  try {
    await post(server.url, reference());
    await sleep(1500);
    const tick = { n: 0 };
    await post(server.url, MARKETS.map((m) => image(m, tick.n++)));
    const rss0 = rssBytes(server.pid);
    const t0 = Date.now();
    const [{ ok }] = await Promise.all([
      w.connect(server.port, (i) => requestOf(EVENTS[i % EVENTS.length])),
      sampler.ask({ type: 'connect', url: server.url.replace(/^http/, 'ws') + '/ws', protocol: 'odds.v1.json', sockets: EVENTS.map(requestOf) }, 'connected', 120_000),
    ]);
    const connectMs = Date.now() - t0;
    log(`${n}: ${ok + EVENTS.length} connected and subscribed in ${connectMs} ms`);
    await sleep(1000);
    const kibPerSocket = (rssBytes(server.pid) - rss0) / 1024 / n;
    const perEvent = (n - EVENTS.length) / EVENTS.length;
    const steps: Step[] = [];
    for (let k = 0, rate = RATE; k < STEPS; k++, rate *= 2) {
      const s = await step(server, w, sampler, rate, perEvent, tick);
      steps.push(s);
      log(`${n}: ${fmt(s.rate)} updates/s: ${fmt(s.deliveriesPerS)} deliveries/s (${fmt(100 * s.complete, 1)}%), p99 ${fmt(s.p99, 1)} ms, ${fmt(s.cpuNsPerDelivery)} ns CPU each`);
      if (s.complete < 0.999 || s.lost > 0 || s.p99 > P99_MS) break;
    }
    const held = steps.filter((s) => s.complete >= 0.999 && s.lost === 0 && s.p99 <= P99_MS).at(-1);
    const half = held ? await step(server, w, sampler, held.rate / 2, perEvent, tick) : undefined;

    await w.track(true);
    await post(server.url, MARKETS.map((m) => image(m, tick.n++)));
    await sleep(1000);
    const feed = new Feed(server.url, tick);
    const vanish = await storm('vanish', { w, feed, rate: RATE, server, next: server, epoch: (await newestSeqs(server.url)).epoch });
    const next = await startService(dbUrl, pinning);
    feed.url = next.url;
    await post(next.url, MARKETS.map((m) => image(m, tick.n++)));
    const old = server;
    server = next;
    const restart = await storm('restart', { w, feed, rate: RATE, server: old, next, epoch: (await newestSeqs(old.url)).epoch });
    return { sockets: n, connectMs, connected: ok + EVENTS.length, kibPerSocket, held, half, steps, vanish, restart };
  } finally {
    await Promise.all([w.close(), sampler.close()]);
    await server.stop();
  }
}

const db = await prepareDatabase();
const rows: Row[] = [];
try {
  for (const n of SOCKETS) rows.push(await runOne(n, db.url));
} finally {
  await db.stop();
}
const stormCell = (s: StormResult) =>
  `${fmt(s.ms)} ms · ${fmt(s.cpuPct)}% CPU · ${fmt(s.peakRssMiB)} MiB · ${s.newest.stale === 0 ? `newest everywhere (${fmt(s.newest.checked)})` : `${fmt(s.newest.stale)} stale of ${fmt(s.newest.checked)}`}`;
const md = [
  `# bench:scale (${DELTA ? 'delta' : 'images'}), ${new Date().toISOString()}`, '',
  mdTable(
    ['sockets', 'connect + subscribe all', 'KiB RSS / socket', 'max held deliveries/s', 'CPU ns / delivery', 'p50 · p99 at half', 'MB/s at max', 'storm, cut: all back', 'storm, restart: all back', 'refused (retried)'],
    rows.map((r) => [fmt(r.sockets), `${fmt(r.connectMs)} ms`, fmt(r.kibPerSocket, 2), fmt(r.held?.deliveriesPerS ?? NaN), fmt(r.held?.cpuNsPerDelivery ?? NaN),
      r.half ? `${fmt(r.half.p50, 1)} · ${fmt(r.half.p99, 1)} ms` : '–', fmt((r.held?.bytesPerS ?? NaN) / 1e6, 1), stormCell(r.vanish), stormCell(r.restart),
      Object.entries({ ...r.vanish.refused, ...r.restart.refused }).map(([line, k]) => `${fmt(k)} × ${line.replace('HTTP/1.1 ', '')}`).join(', ') || '0']),
  ),
].join('\n');
const out = writeResults('scale', { machine: machine(), delta: DELTA, rows }, md);
console.log(md);
log(`results: ${out.md}`);
