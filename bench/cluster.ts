/**
 * `npm run bench:cluster`: odds fan-out across two pods sharing NATS against
 * one pod, in the same run. The same sockets (half on each pod, or all on the
 * one) subscribe to the same markets; a publisher feeds pod A through /ingest
 * at rising rates. A step holds when every frame arrived and the sampled
 * publish-to-receive p99 is under 50 ms.
 *
 * With the two pods it also measures how long a write acked by one pod takes to show on the other
 * (cluster-lag.ts).
 *
 * Settings (env; a bad value stops the run naming it): BENCH_SOCKETS (2000), BENCH_SECONDS (3 per
 * step), BENCH_RATES (50000,100000,200000,400000 deliveries/s), BENCH_CLUSTER (lag,fanout: the
 * parts to run), BENCH_LAG_SAMPLES (200 writes of each kind). DATABASE_URL: see bench/README.md.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import WebSocket from 'ws';
import { startEmbedded } from '../src/db/embedded.js';
import { createLogger } from '../src/log.js';
import { envList, envNumber, envNumbers } from './lib/env.js';
import { startNats } from './lib/nats.js';
import { crossPodLag, type LagRow } from './cluster-lag.js';

/** Every setting (env), read once; the header lists them with their defaults. */
const SETTINGS = Object.freeze({
  sockets: Math.round(envNumber('BENCH_SOCKETS', 2000)),
  seconds: envNumber('BENCH_SECONDS', 3),
  rates: Object.freeze(envNumbers('BENCH_RATES', [50_000, 100_000, 200_000, 400_000])),
  parts: Object.freeze(envList('BENCH_CLUSTER', ['lag', 'fanout'], ['lag', 'fanout'])),
  lagSamples: Math.round(envNumber('BENCH_LAG_SAMPLES', 200)),
});
const PER_SOCKET = 10;
const MARKETS = 50;

async function pod(env: Record<string, string>): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['dist/src/main.js'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((ok, fail) => {
    let out = '';
    child.stdout!.on('data', (d) => { out += d; const m = /listening on (http:\/\/\S+)/.exec(out); if (m) ok(m[1]); });
    child.once('exit', () => fail(new Error('a pod exited during start')));
  });
  return { url, child };
}

interface Run { rate: number; delivered: number; expected: number; p99: number; held: boolean }

async function measure(urls: string[], mids: string[], publishTo: string): Promise<Run[]> {
  let received = 0;
  const lat: number[] = [];
  const sockets: WebSocket[] = [];
  for (let i = 0; i < SETTINGS.sockets; i++) {
    const ws = new WebSocket(urls[i % urls.length].replace('http', 'ws') + '/ws', ['odds.v1.json']);
    await new Promise((ok, fail) => { ws.once('open', ok); ws.once('error', fail); });
    const sampled = i % 20 === 0;
    ws.on('message', (d: Buffer) => {
      if (d[7] !== 0x6f) return; // '{"op":"odds"...': count odds frames only (the 8th byte is the o of odds)
      received++;
      if (sampled) lat.push(Date.now() - JSON.parse(String(d)).ts);
    });
    const mine = Array.from({ length: PER_SOCKET }, (_, k) => mids[(i * PER_SOCKET + k) % mids.length]);
    ws.send(JSON.stringify({ op: 'subscribe', id: 1, mids: mine }));
    sockets.push(ws);
  }
  await new Promise((r) => setTimeout(r, 1000));
  const pub = new WebSocket(publishTo.replace('http', 'ws') + '/ingest');
  await new Promise((ok) => pub.once('open', ok));
  const subscribersPerMarket = (SETTINGS.sockets * PER_SOCKET) / mids.length;
  const runs: Run[] = [];
  for (const rate of SETTINGS.rates) {
    const updatesPerTick = Math.max(1, Math.round((rate / subscribersPerMarket) / 200));
    received = 0;
    lat.length = 0;
    let sent = 0;
    const end = Date.now() + SETTINGS.seconds * 1000;
    let n = 0;
    while (Date.now() < end) {
      const data = Array.from({ length: updatesPerTick }, () => ({ kind: 'odds', mid: mids[n++ % mids.length], ts: Date.now(), st: 'OPEN', ip: true,
        r: [1, 2, 3].map((rid) => ({ rid, st: 'ACTIVE', b: [[2, 10], [1.99, 20], [1.98, 30]], l: [[2.02, 10], [2.04, 20], [2.06, 30]] })) }));
      pub.send(JSON.stringify({ data }));
      sent += updatesPerTick;
      await new Promise((r) => setTimeout(r, 5));
    }
    await new Promise((r) => setTimeout(r, 2000));
    lat.sort((a, b) => a - b);
    const expected = sent * subscribersPerMarket;
    const p99 = lat[Math.floor(lat.length * 0.99)] ?? 0;
    runs.push({ rate: Math.round(expected / SETTINGS.seconds), delivered: Math.round(received / SETTINGS.seconds), expected, p99, held: received >= expected && p99 < 50 });
    if (received < expected * 0.5) break;
  }
  pub.close();
  for (const ws of sockets) ws.terminate();
  return runs;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'odds-cluster-'));
  await chmod(dir, 0o755);
  const nats = await startNats();
  const log = createLogger('warn', true);
  let dbUrl: string;
  let stopDb = async () => undefined as unknown;
  if (process.env.DATABASE_URL) {
    const name = `cluster_${Date.now()}`;
    const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    const u = new URL(process.env.DATABASE_URL);
    u.pathname = '/' + name;
    dbUrl = u.toString();
    stopDb = async () => {
      const a = new pg.Client({ connectionString: process.env.DATABASE_URL });
      await a.connect();
      await a.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await a.end();
    };
  } else {
    const db = await startEmbedded(join(dir, 'pg'), 0, log);
    dbUrl = db.url;
    stopDb = () => db.stop();
  }
  const base = { HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'warn', LOG_FORMAT: 'json', SIMULATOR: 'off', DEMO_DATA: 'on', DATABASE_URL: dbUrl, DRAIN_DELAY_MS: '0', WS_MAX_SOCKETS: '100000', FEED_STALE_MS: '3600000', WS_HANDSHAKES_PER_SOURCE: '0', WS_HANDSHAKES_PER_SECOND: '0' };
  const results: Record<string, Run[]> = {};
  let lag: LagRow[] = [];
  const fanout = SETTINGS.parts.includes('fanout');
  for (const [name, pods, bus] of [['one pod', 1, 'memory'], ['two pods over NATS', 2, 'nats']] as const) {
    if (pods === 1 && !fanout) continue;
    const started = [];
    const prefix = `b${Date.now()}`;
    for (let i = 0; i < pods; i++) started.push(await pod({ ...base, BUS: bus, NATS_URL: nats.url, NATS_PREFIX: prefix }));
    const mids = ((await (await fetch(started[0].url + '/api/v1/events/markets?eid=30000001,30000011,30000021,30000031')).json()) as { data: Record<string, { mid: string; r?: unknown[] }[]> });
    // Markets with runners only: the runner ladders published here are no prices a line market can have.
    const list = Object.values(mids.data).flat().filter((m) => m.r).map((m) => m.mid).slice(0, MARKETS);
    if (pods === 2 && SETTINGS.parts.includes('lag')) lag = await crossPodLag(started[0].url, started[1].url, dbUrl, list, SETTINGS.lagSamples);
    if (fanout) results[name] = await measure(started.map((p) => p.url), list, started[0].url);
    for (const p of started) { p.child.kill('SIGTERM'); await new Promise((ok) => p.child.once('exit', ok)); }
  }
  await nats.stop();
  await stopDb();
  await rm(dir, { recursive: true, force: true });
  const best = (runs: Run[]) => Math.max(0, ...runs.filter((r) => r.held).map((r) => r.delivered));
  let md = '';
  if (fanout) {
    md += `| setup | sockets | target deliveries/s | delivered/s | p99 ms | held |\n| --- | ---: | ---: | ---: | ---: | --- |\n`;
    for (const [name, runs] of Object.entries(results)) for (const r of runs) md += `| ${name} | ${SETTINGS.sockets} | ${r.rate} | ${r.delivered} | ${r.p99} | ${r.held ? 'yes' : 'no'} |\n`;
    md += `\nHighest rate held: one pod ${best(results['one pod'])}/s, two pods ${best(results['two pods over NATS'])}/s (${(best(results['two pods over NATS']) / Math.max(1, best(results['one pod']))).toFixed(2)}x).\n`;
  }
  if (lag.length) {
    md += `${md ? '\n' : ''}| write acked on pod A, shown on pod B | writes | p50 ms | p99 ms | max ms |\n| --- | ---: | ---: | ---: | ---: |\n`;
    for (const r of lag) md += `| ${r.what} | ${r.samples} | ${r.p50} | ${r.p99} | ${r.max} |\n`;
  }
  process.stdout.write(md);
  await mkdir('bench/results', { recursive: true });
  await writeFile('bench/results/cluster.json', JSON.stringify({ sockets: SETTINGS.sockets, results, lag }, null, 2));
  await writeFile('bench/results/cluster.md', md);
}

await main();
