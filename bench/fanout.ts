/**
 * `npm run bench:fanout`: odds fan-out of the service against the baseline (ws + Map of sockets),
 * the Socket.IO peer (one room per market) and the ceiling (bare uWS pub/sub).
 * For each server, format (odds.v1.json, odds.v1.proto, JSON with permessage-deflate) and socket
 * count (100, 1,000, 10,000): N sockets each subscribe to K markets; a publisher sends odds
 * through the ingest socket (`/ingest`, acked per message) at rising rates, or at one fixed rate
 * (FANOUT_RATE); every socket's frames and bytes are counted and a few sampled sockets decode
 * every frame for latency and sequence checks. After each ramp at 1,000 and 10,000 sockets, the
 * firehose (fanout/firehose.ts): the publisher pipelines batches as fast as acks come back, and
 * what is delivered is compared with the best held rate. Then mixed subscriptions (fanout/mixed.ts):
 * the service's CPU per frame with depths and conflation mixed against plain subscriptions. The
 * server runs on core 0, the publisher, the counting clients and the sampler on core 1.
 *
 * Settings: fanout/settings.ts (every one, with its default) and bench/README.md. One run's
 * phases: fanout/run.ts; the report: fanout/report.ts.
 */
import { spawnSync } from 'node:child_process';
import { pinLoadGenerator, type Pinning } from './lib/cores.js';
import { machine } from './lib/proc.js';
import { fmt, writeResults } from './lib/report.js';
import { log, runMain } from './lib/run.js';
import { startServer } from './lib/server.js';
import { fanoutMarkets, prepareDatabase, seed, type Database } from './lib/data.js';
import type { Market } from './fanout/publisher.js';
import { commonHeld, report } from './fanout/report.js';
import { SERVICE_ENV } from './fanout/rig.js';
import { runOne, type RunResult } from './fanout/run.js';
import { runs, settings } from './fanout/settings.js';

function fdLimit(): number {
  const r = spawnSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' });
  const v = r.stdout.trim();
  return v === 'unlimited' ? Infinity : Number(v) || 1024;
}

/** Seeds once through a service, so the baseline sees the same markets. */
async function seedMarkets(db: Database, pinning: Pinning): Promise<Market[]> {
  const seeder = await startServer({ name: 'service (seeding)', args: ['dist/src/main.js'], pinning, env: { ...SERVICE_ENV, DATABASE_URL: db.url } });
  await seed(seeder.url).finally(() => seeder.stop());
  return fanoutMarkets(settings.markets);
}

/** Every server, format and socket count: its ramp (or one step), and the firehose after the ramps that take it. */
async function ramps(counts: number[], db: Database, pinning: Pinning, markets: Market[]): Promise<RunResult[]> {
  const { formats, servers, rampFormats, start, fixedRate, firehose } = settings;
  const results: RunResult[] = [];
  for (const n of counts) {
    for (const format of formats) {
      // Alternate which server goes first, so neither always gets the fresher machine.
      const order = (counts.indexOf(n) + formats.indexOf(format)) % 2 ? [...servers].reverse() : servers;
      const fixedAt = rampFormats.includes(format) ? undefined : commonHeld(results.filter((r) => r.sockets === n && r.ramped)) ?? start;
      for (const impl of order.filter((i) => runs(i, format))) {
        // The firehose follows a ramp, whose best held rate it is compared with.
        const withFirehose = firehose.on && fixedAt === undefined && fixedRate === undefined && firehose.sockets.includes(n) && firehose.servers.includes(impl) && firehose.formats.includes(format);
        results.push(await runOne(impl, format, n, db.url, pinning, markets, { fixedAt, firehose: withFirehose }));
      }
    }
  }
  return results;
}

/** Mixed subscriptions against plain on the service, at half its highest held JSON rate at that socket count (or FANOUT_MIXED_RATE). */
async function mixedSubscriptions(results: RunResult[], limit: number, notes: string[], db: Database, pinning: Pinning, markets: Market[]): Promise<RunResult[]> {
  const { sockets, rate } = settings.mixed;
  if (sockets + 512 > limit) {
    notes.push(`skipped mixed subscriptions at ${fmt(sockets)} sockets: the open-file limit is ${limit}`);
    return [];
  }
  const held = results.find((r) => r.impl === 'service' && r.format === 'json' && r.sockets === sockets)?.maxHeld;
  const target = rate ?? (held ? held.targetPerSec / 2 : settings.start);
  log(`mixed subscriptions: the service, ${fmt(sockets)} sockets, plain then mixed, at ${fmt(target)} deliveries/s of plain subscriptions`);
  return [await runOne('service', 'json', sockets, db.url, pinning, markets, { mixedAt: target })];
}

/** Where the service's time goes at a moderate and at the largest socket count, half JSON and half protobuf. */
async function profiles(counts: number[], results: RunResult[], db: Database, pinning: Pinning, markets: Market[]): Promise<RunResult[]> {
  const at = settings.profile.sockets.length ? settings.profile.sockets : [...new Set([counts.includes(1000) ? 1000 : counts[0], Math.max(...counts)])];
  const profiled: RunResult[] = [];
  for (const n of at) {
    const held = results.filter((r) => r.impl === 'service' && r.format !== 'deflate' && r.sockets === n && r.maxHeld).map((r) => r.maxHeld!.targetPerSec);
    const rate = settings.profile.rate ?? (held.length ? Math.min(...held) / 2 : settings.start);
    log(`profiling the service: ${fmt(n)} sockets (half JSON, half protobuf) at ${fmt(rate)} deliveries/s`);
    profiled.push(await runOne('service', 'mixed', n, db.url, pinning, markets, { profileAt: rate }));
  }
  return profiled;
}

async function main(): Promise<void> {
  const started = Date.now();
  const host = machine();
  const pinning = pinLoadGenerator();
  log(pinning.note);
  const limit = fdLimit();
  const notes: string[] = [];
  const counts = settings.sockets.filter((n) => {
    if (n + 512 <= limit) return true;
    notes.push(`skipped ${n} sockets: the open-file limit is ${limit} (raise it with ulimit -n)`);
    return false;
  });
  const db = await prepareDatabase();
  try {
    const markets = await seedMarkets(db, pinning);
    const service = settings.servers.includes('service');
    const only = settings.profile.only;
    const results = only ? [] : await ramps(counts, db, pinning, markets);
    const mixedRuns = settings.mixed.on && service && !only ? await mixedSubscriptions(results, limit, notes, db, pinning, markets) : [];
    const profiled = settings.profile.on && service && counts.length ? await profiles(counts, results, db, pinning, markets) : [];
    const { md, json } = report({ started, host, pinning, db, notes, counts, results, mixedRuns, profiles: profiled });
    const files = writeResults(settings.resultsName, json, md);
    process.stdout.write('\n' + md + '\n\n');
    log(`wrote ${files.md} and ${files.json} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  } finally {
    await db.stop();
  }
}

runMain('bench:fanout', main);
