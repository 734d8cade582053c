/**
 * `npm run bench:scrape`: how long a Prometheus scrape takes, and how much it
 * stalls the event loop, with thousands of subscribed sockets open. The
 * baseline in the same run is /health: the cost of any request at that load.
 * Every scrape renders (METRICS_CACHE_MS=0): the render is what is measured,
 * not the reuse of one.
 *
 * Settings (env; a bad value stops the run naming it): BENCH_SOCKETS (5000), BENCH_SCRAPES (50),
 * BENCH_SIM_MS (250: the simulator's interval). DATABASE_URL unset: an embedded Postgres.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, chmod, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { envNumber } from './lib/env.js';

/** Every setting (env), read once; the header lists them with their defaults. */
const SETTINGS = Object.freeze({
  sockets: Math.round(envNumber('BENCH_SOCKETS', 5000)),
  scrapes: Math.round(envNumber('BENCH_SCRAPES', 50)),
  simulatorMs: envNumber('BENCH_SIM_MS', 250),
});

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function timed(url: string): Promise<{ ms: number; text: string }> {
  const t0 = performance.now();
  const r = await fetch(url);
  const text = await r.text();
  return { ms: performance.now() - t0, text };
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'odds-scrape-'));
  await chmod(dir, 0o755);
  const env: Record<string, string | undefined> = { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_FORMAT: 'json', LOG_LEVEL: 'warn', SIMULATOR: 'on', SIMULATOR_INTERVAL_MS: String(SETTINGS.simulatorMs), DEMO_DATA: 'on', EMBEDDED_PG_DIR: join(dir, 'pg'), WS_MAX_SOCKETS: String(SETTINGS.sockets * 2), WS_HANDSHAKES_PER_SOURCE: '0', WS_HANDSHAKES_PER_SECOND: '0', METRICS_CACHE_MS: '0' };
  if (!process.env.DATABASE_URL) delete env.DATABASE_URL;
  const child = spawn(process.execPath, ['dist/src/main.js'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const [url, metricsUrl] = await new Promise<[string, string]>((ok, fail) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)[^\n]*\nmetrics and probes on (http:\/\/\S+)/.exec(out);
      if (m) ok([m[1], m[2]]);
    });
    child.once('exit', () => fail(new Error('service exited')));
  });
  const mids = ['1.200001001', '1.200001002', '1.200001004', '1.200001005', '1.200001006', '1.200011001', '1.200014001', '1.200021001', '1.200024001', '1.200031001'];
  const sockets: WebSocket[] = [];
  for (let i = 0; i < SETTINGS.sockets; i++) {
    const ws = new WebSocket(url.replace('http', 'ws') + '/ws', [i % 2 ? 'odds.v1.proto' : 'odds.v1.json']);
    await new Promise((ok, fail) => { ws.once('open', ok); ws.once('error', fail); });
    ws.send(JSON.stringify({ op: 'subscribe', id: 1, mids }));
    ws.on('message', () => undefined);
    sockets.push(ws);
  }
  await new Promise((r) => setTimeout(r, 2000));
  const scrape: number[] = [];
  const health: number[] = [];
  let lagMax = 0;
  let size = 0;
  for (let i = 0; i < SETTINGS.scrapes; i++) {
    health.push((await timed(url + '/health')).ms);
    const s = await timed(metricsUrl + '/metrics');
    scrape.push(s.ms);
    size = s.text.length;
    // The first scrape's window covers the connection storm, not scraping.
    if (i > 0) lagMax = Math.max(lagMax, Number(/^nodejs_eventloop_lag_max_seconds (\S+)/m.exec(s.text)?.[1] ?? 0));
    await new Promise((r) => setTimeout(r, 100));
  }
  scrape.sort((a, b) => a - b);
  health.sort((a, b) => a - b);
  const open = /^odds_ws_connections\{format="json"\} (\d+)/m.exec((await timed(metricsUrl + '/metrics')).text)?.[1];
  const result = {
    sockets: SETTINGS.sockets, scrapes: SETTINGS.scrapes, exposition_bytes: size, json_sockets_seen_by_server: Number(open),
    scrape_ms: { p50: percentile(scrape, 50), p99: percentile(scrape, 99), max: scrape.at(-1) },
    health_ms: { p50: percentile(health, 50), p99: percentile(health, 99), max: health.at(-1) },
    scrape_vs_health_p50: percentile(scrape, 50) / percentile(health, 50),
    event_loop_lag_max_ms: lagMax * 1000,
  };
  const md = `| sockets | scrape p50 / p99 / max ms | /health p50 / p99 ms | scrape / health (p50) | event-loop lag max ms | exposition |\n| ---: | ---: | ---: | ---: | ---: | ---: |\n`
    + `| ${SETTINGS.sockets} | ${result.scrape_ms.p50.toFixed(2)} / ${result.scrape_ms.p99.toFixed(2)} / ${result.scrape_ms.max!.toFixed(2)} | ${result.health_ms.p50.toFixed(2)} / ${result.health_ms.p99.toFixed(2)} | ${result.scrape_vs_health_p50.toFixed(1)}x | ${result.event_loop_lag_max_ms.toFixed(1)} | ${size} B |\n`;
  process.stdout.write(md);
  await mkdir('bench/results', { recursive: true });
  await writeFile('bench/results/scrape.json', JSON.stringify(result, null, 2));
  await writeFile('bench/results/scrape.md', md);
  for (const ws of sockets) ws.terminate();
  child.kill('SIGTERM');
  await new Promise((ok) => child.once('exit', ok));
  await rm(dir, { recursive: true, force: true });
}

await main();
