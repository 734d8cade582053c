/**
 * `npm run bench:exchange`: the Betfair adapters on their own, each run as a user runs it (a
 * process of its own), publishing into a sink that speaks the service's /ingest protocol and acks
 * every batch at once, so what is measured is the adapter:
 *
 * - burst: the local stream server (test/exchange/esa-burst.ts) plays BENCH_SECONDS (10) of
 *   changes over BENCH_MARKETS (500) full-depth markets at each rate of BENCH_RATES
 *   (25000,50000,100000 a second) to `npm run betfair`. Reported: the changes made, those sent to
 *   the adapter (fewer when it fell behind and the server conflated), how often it fell behind
 *   (the server found its socket full), the adapter's CPU per change sent, and its peak memory
 *   (from its summary). The highest rate with no fall-behind is the sustained rate.
 * - day: a generated day of BENCH_DAY_MARKETS (200) markets, one .gz file each (football match
 *   odds of BENCH_DAY_STEPS (1000) changes, full depth), replayed by `npm run replay --speed max`
 *   merged by publish time. Reported: messages a second, CPU and peak memory.
 *
 * Results go to bench/results/exchange.{json,md}; bench/README.md quotes them with the command.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebSocketServer } from 'ws';
import { Burst } from '../test/exchange/esa-burst.js';
import { announceLimits } from '../test/exchange/fake-ingest.js';
import { APP_KEY, EsaServer, SESSION, TEST_CA_FILE } from '../test/exchange/esa-server.js';
import { matchOdds, writeRecording } from '../test/exchange/fixtures.js';
import { envNumber, envNumbers } from './lib/env.js';
import { DIST } from './lib/paths.js';
import { cpuMicros, machine } from './lib/proc.js';
import { fmt, mdTable, writeResults } from './lib/report.js';
import { log, runMain } from './lib/run.js';

const SETTINGS = Object.freeze({
  rates: Object.freeze(envNumbers('BENCH_RATES', [25_000, 50_000, 100_000])),
  seconds: envNumber('BENCH_SECONDS', 10),
  markets: envNumber('BENCH_MARKETS', 500),
  dayMarkets: envNumber('BENCH_DAY_MARKETS', 200),
  daySteps: envNumber('BENCH_DAY_STEPS', 1000),
});

/** An /ingest that acks every batch at once, announcing the service's default bounds as the service does. */
async function sink(): Promise<{ url: string; close: () => Promise<void> }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise((ok) => wss.once('listening', ok));
  announceLimits(wss);
  wss.on('connection', (ws) => ws.on('message', (data: Buffer) => {
    const id = /^\{"id":(\d+)/.exec(data.toString('latin1', 0, 24))?.[1];
    ws.send(`{"op":"ack","id":${id},"status":1,"message":"ok"}`);
  }));
  return {
    url: `ws://127.0.0.1:${(wss.address() as { port: number }).port}/ingest`,
    close: () => new Promise((ok) => { for (const c of wss.clients) c.terminate(); wss.close(() => ok()); }),
  };
}

interface Run { code: number | null; stdout: string; stderr: string; cpuS: number; wallS: number }

/** Runs a tool to its end (or until `stop` resolves, then SIGINT), sampling its CPU while it runs. */
function run(script: string, args: string[], stop?: Promise<unknown>): Promise<Run> {
  const started = performance.now();
  const child = spawn(process.execPath, [join(DIST, 'src', 'cli', script), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let cpu = 0;
  child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const sample = setInterval(() => { try { cpu = cpuMicros(child.pid!); } catch { /* exited */ } }, 100);
  void stop?.then(() => setTimeout(() => { try { cpu = cpuMicros(child.pid!); } catch { /* exited */ } child.kill('SIGINT'); }, 200));
  return new Promise((ok) => child.on('close', (code) => {
    clearInterval(sample);
    ok({ code, stdout, stderr, cpuS: cpu / 1e6, wallS: (performance.now() - started) / 1000 });
  }));
}

const peakOf = (stdout: string) => Number(/peak memory (\d+) MiB/.exec(stdout)?.[1] ?? NaN);
const noTeardown = { teardown: () => undefined } as never;

async function burst(rate: number, url: string): Promise<Record<string, number>> {
  const b = new Burst({ markets: SETTINGS.markets, rate, seconds: SETTINGS.seconds });
  const esa = await EsaServer.start(noTeardown, [{ play: (conn) => b.play(conn) }]);
  const args = ['--app-key', APP_KEY, '--session', SESSION, '--event-types', '1', '--host', '127.0.0.1', '--port', String(esa.port), '--ca', TEST_CA_FILE, '--url', url];
  const r = await run('betfair.js', args, b.done);
  await esa.close();
  if (r.code !== 0) throw new Error(`betfair exited ${r.code}: ${r.stderr.slice(-2000)}`);
  const pauses = Number(/(\d+) pauses/.exec(r.stdout)?.[1] ?? NaN);
  return { rate, made: b.stats.made, madeRate: b.stats.rate, written: b.stats.written, backedUp: b.stats.backedUp, conflated: b.stats.conflated, pauses, cpuS: r.cpuS, peakMiB: peakOf(r.stdout) };
}

async function day(url: string): Promise<Record<string, number>> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-day-'));
  try {
    let messages = 0;
    for (let i = 0; i < SETTINGS.dayMarkets; i++) {
      const recording = matchOdds(SETTINGS.daySteps, 1000 + i, `1.28${String(i).padStart(7, '0')}`);
      messages += recording.length;
      await writeRecording(dir, `${String(i).padStart(4, '0')}.json.gz`, recording);
    }
    const r = await run('replay.js', [dir, '--speed', 'max', '--open', String(SETTINGS.dayMarkets), '--url', url]);
    if (r.code !== 0) throw new Error(`replay exited ${r.code}: ${r.stderr.slice(-2000)}`);
    const seconds = Number(/, (\d+\.\d\d) s$/m.exec(r.stdout)?.[1] ?? NaN);
    return { markets: SETTINGS.dayMarkets, messages, seconds, perSecond: Math.round(messages / seconds), cpuS: r.cpuS, peakMiB: peakOf(r.stdout) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

runMain('exchange', async () => {
  const out = await sink();
  try {
    const bursts: Record<string, number>[] = [];
    for (const rate of SETTINGS.rates) {
      log(`burst at ${rate} changes a second for ${SETTINGS.seconds} s over ${SETTINGS.markets} markets`);
      bursts.push(await burst(rate, out.url));
    }
    log(`a day of ${SETTINGS.dayMarkets} markets`);
    const replayed = await day(out.url);
    const md = [
      `Adapter through a burst (${SETTINGS.markets} markets, ${SETTINGS.seconds} s, into a sink that acks at once):`, '',
      mdTable(['changes/s asked', 'made', 'made/s', 'sent to the adapter', 'fell behind', 'adapter CPU s', 'CPU per change sent µs', 'peak MiB'],
        bursts.map((b) => [fmt(b.rate), fmt(b.made), fmt(b.madeRate), fmt(b.written), fmt(b.backedUp), fmt(b.cpuS, 2), fmt((b.cpuS * 1e6) / b.written, 1), fmt(b.peakMiB)])),
      '', `Replay of a generated day (${replayed.markets} files merged by publish time, .gz, --speed max):`, '',
      mdTable(['messages', 'seconds', 'messages/s', 'replay CPU s', 'peak MiB'], [[fmt(replayed.messages), fmt(replayed.seconds, 2), fmt(replayed.perSecond), fmt(replayed.cpuS, 2), fmt(replayed.peakMiB)]]),
    ].join('\n');
    const files = writeResults('exchange', { machine: machine(), settings: SETTINGS, bursts, day: replayed }, md);
    process.stdout.write(`${md}\n\n${files.md}\n`);
  } finally {
    await out.close();
  }
});
