/**
 * `npm run soak [-- --minutes N]`: mixed load against the real service process for N minutes
 * (3 by default), sampling its memory and socket counts every 10 s, and a verdict: exit 1 when
 * memory grows without bound, the socket or subscription gauges drift from what the load holds
 * open, any 5xx is answered, the service dies or logs an error, or it does not stop cleanly.
 *
 * The service: `node dist/src/main.js` on a free loopback port with SIMULATOR=off, DEMO_DATA=on,
 * over a fresh `soak_<timestamp>` database on DATABASE_URL's server (dropped at the end), or
 * its embedded Postgres in a temporary folder (removed at the end).
 *
 * The load (defaults; see --help): 300 REST reads/s over 8 keep-alive connections across every
 * data route (3% deliberately refused: 400/404/405); 200 odds images/s for the demo's open
 * markets through one `/ingest` socket (reconnected every minute); two market state toggles
 * every 5 s through `POST /api/v1/ingest`; 500 subscriber sockets (a quarter protobuf) on 5
 * markets each, of which every 5 s 25 close (a third without a close handshake), 25 open and 20
 * swap a market or take a fresh unlisted market ID; every 15 s a REST subscribe that every socket
 * shares, held 1 s, then REST unsubscribe.
 *
 * Verdict (after a warm-up of max(60 s, 30% of the run), capped to leave 3 samples):
 *  - memory: for RSS and for the heap floor (smallest heap-used in each 10 s window, probed every
 *    2 s), fail when growth is sustained, the least-squares slope after warm-up above 2 MB/min over
 *    the whole stretch AND over each of its halves, and large, the end (median of the last 3
 *    samples) above 1.25x the post-warm-up minimum. The slope on its own fails a bounded sawtooth
 *    (RSS here steps between ~80 and ~106 MB as V8 takes and gives back pages); requiring both
 *    halves to climb does not. A short run only catches fast leaks (an injected 20 MB/min one
 *    fails a 3-minute run); run 30 minutes or more for slow ones.
 *  - sockets and subscriptions: at every sample (pool changes paused, up to 3 s to settle) and at
 *    the end, `odds_ws_connections` per format and `odds_ws_subscriptions` equal what the load
 *    holds; while a REST subscription is on, every socket carries it.
 *  - other sockets of the process (socket fds minus WebSocket connections) may not grow by more
 *    than 50 after warm-up: HTTP keep-alive, Postgres and the publisher socket are bounded.
 *  - no 5xx (server counter and client side), no load problem (unexpected status, refused ack,
 *    transport error, socket closed by the server), no error logged, the child alive until
 *    SIGTERM, which it answers with exit 0 and 1001 closes.
 * Results: bench/results/soak.json (gitignored).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus } from 'node:os';
import { join } from 'node:path';
import { RESULTS } from './lib/paths.js';
import { runMain } from './lib/run.js';
import { SoakRun } from './soak/run.js';
import { SETTINGS } from './soak/settings.js';
import { Problems, log, openFileLimit } from './soak/util.js';
import { verdict, type Check } from './soak/verdict.js';

async function main(): Promise<number> {
  const { args } = SETTINGS;
  const problems = new Problems();
  const fdLimit = openFileLimit();
  if (args.sockets + 200 > fdLimit) {
    process.stderr.write(`--sockets ${args.sockets} needs more open files than this process may have (${fdLimit}); raise ulimit -n or ask for fewer\n`);
    return 2;
  }
  log(`soak: ${args.minutes} min, ${args.sockets} sockets x ${args.markets} markets, ${args.rps} REST req/s, ${args.images} images/s; warm-up ${SETTINGS.warmupS} s`);
  const run = new SoakRun(problems);
  const onSignal = (sig: string) => {
    if (run.interrupted) return;
    run.interrupted = true;
    log(`${sig}: stopping the load and the service`);
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  const startedAt = new Date().toISOString();
  try {
    await run.run();
  } catch (err) {
    problems.note('soak', (err as Error).stack ?? String(err));
  } finally {
    await run.cleanup();
  }
  const checks = verdict(run.outcome());
  const ok = checks.every((c) => c.ok);
  const out = writeResult(run, startedAt, ok, checks, problems);
  printVerdict(run, ok, checks, out);
  return ok ? 0 : 1;
}

function writeResult(run: SoakRun, startedAt: string, ok: boolean, checks: Check[], problems: Problems): string {
  const { pool, rest, feed, toggler, restSubs } = run.load;
  const s = SETTINGS;
  const result = {
    startedAt, ok, settings: { ...s.args, sampleSeconds: s.sampleS, warmupSeconds: s.warmupS, churnEverySeconds: s.churnEveryS, churnShare: s.churnShare, movesPerChurn: s.movesPerChurn, restSubscribeEverySeconds: s.restSubEveryS, memSlopeMBPerMin: s.memSlopeMBPerMin, memGrowthRatio: s.memGrowthRatio },
    machine: { node: process.version, cores: availableParallelism(), cpu: cpus()[0]?.model },
    database: run.db?.where, catalog: run.catalogSize, checks, samples: run.samples, final: run.final, shutdown: run.shutdown,
    load: { rest: rest?.toJSON(), ingest: feed?.toJSON(), toggles: toggler?.toggles, restSubscribeWindows: restSubs?.windows, pool: pool?.toJSON() },
    problems: problems.toJSON(), serviceLogs: run.svc?.logs,
  };
  const out = join(RESULTS, 'soak.json');
  mkdirSync(RESULTS, { recursive: true });
  writeFileSync(out, JSON.stringify(result, null, 2) + '\n');
  return out;
}

function printVerdict(run: SoakRun, ok: boolean, checks: Check[], out: string): void {
  const { pool, rest, feed, toggler, restSubs } = run.load;
  const stats = pool?.stats;
  process.stdout.write(`\nverdict: ${ok ? 'PASS' : 'FAIL'}\n`);
  for (const c of checks) process.stdout.write(`  ${c.ok ? 'ok  ' : 'FAIL'} ${c.name.padEnd(14)} ${c.detail}\n`);
  if (rest && feed && stats) {
    process.stdout.write(`  load: ${rest.answered} REST answers (${rest.shed} shed), ${feed.imagesAcked} images acked, ${toggler?.toggles ?? 0} state toggles, ${restSubs?.windows ?? 0} REST subscribe windows, ${pool?.opened ?? 0} sockets opened, ${stats.frames} frames received (proto order: ${stats.seqGaps} gaps, ${stats.seqBack} backwards, ${stats.conflated} conflated)\n`);
  }
  process.stdout.write(`  results: ${out}\n`);
}

runMain('soak', main);
