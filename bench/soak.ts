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
import { readCatalog } from './soak/catalog.js';
import { IngestFeed } from './soak/ingest-feed.js';
import { Http, RestLoad, RestSubscriptions, StateToggler } from './soak/rest-load.js';
import { Pool } from './soak/subscribers.js';
import { ROOT } from './lib/paths.js';
import { runMain } from './lib/run.js';
import { ServiceProcess, prepareDatabase, type Database } from './soak/service.js';
import { Lock, MB, Problems, fdCounts, fmt, label, log, openFileLimit, parseMetrics, rssBytes, sleep, slope, total, type Scrape } from './soak/util.js';

// ---- settings ----

const USAGE = `usage: npm run soak [-- --minutes N] [--sockets N] [--rps N] [--images N] [--markets N]
  --minutes   run length, default 3 (any positive number; 30+ for slow leaks)
  --sockets   subscriber sockets held open, default 500
  --rps       REST requests per second, default 300
  --images    odds images ingested per second, default 200
  --markets   markets per subscriber socket, default 5`;

function parseArgs(argv: string[]): { minutes: number; sockets: number; rps: number; images: number; markets: number } {
  const out = { minutes: 3, sockets: 500, rps: 300, images: 200, markets: 5 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') {
      process.stdout.write(USAGE + '\n');
      process.exit(0);
    }
    const m = /^--(minutes|sockets|rps|images|markets)(?:=(.*))?$/.exec(a);
    const raw = m ? (m[2] ?? argv[++i]) : undefined;
    const n = Number(raw);
    if (!m || raw === undefined || !Number.isFinite(n) || n <= 0) {
      process.stderr.write(`bad argument ${a}${raw !== undefined ? ' ' + raw : ''}\n${USAGE}\n`);
      process.exit(2);
    }
    out[m[1] as keyof typeof out] = m[1] === 'minutes' ? n : Math.round(n);
  }
  return out;
}

const ARGS = parseArgs(process.argv.slice(2));
const DURATION_S = ARGS.minutes * 60;
const SAMPLE_S = 10;
const PROBE_S = 2;
const WARMUP_S = Math.max(0, Math.min(Math.max(60, 0.3 * DURATION_S), DURATION_S - 3 * SAMPLE_S));
const CHURN_EVERY_S = 5;
const CHURN_SHARE = 0.05;
const MOVES_PER_CHURN = 20;
const REST_SUB_EVERY_S = 15;
const REST_SUB_HOLD_MS = 1000;
const TOGGLE_EVERY_S = 5;
const KEEP_FOR_SHUTDOWN = 10;
/** Memory bounds: both must be passed for a failure. */
const MEM_SLOPE_MB_PER_MIN = 2;
const MEM_GROWTH_RATIO = 1.25;
const OTHER_SOCKETS_GROWTH = 50;

const median = (xs: number[]): number => {
  const v = [...xs].sort((a, b) => a - b);
  return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
};

// ---- samples ----

interface Sample {
  t: number;
  rssMB: number;
  rssPromMB: number;
  /** Smallest heap-used seen in this sample's window (probes every 2 s and this scrape). */
  heapFloorMB: number;
  heapMB: number;
  sockets: { json: number; proto: number };
  held: { json: number; proto: number };
  subscriptions: number;
  expectedSubscriptions: number;
  /** Matched after waiting this long (NaN: never within 3 s). */
  settledMs: number;
  fds: number;
  socketFds: number;
  /** Socket fds minus WebSocket connections: keep-alive HTTP, Postgres, the publisher socket, listen socket. */
  otherSockets: number;
  requests: number;
  reqPerS: number;
  fiveXX: number;
  delivered: number;
  deliveredPerS: number;
  clientFramesPerS: number;
  imagesPerS: number;
  framesSkipped: number;
  slowCloses: number;
}

interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

async function scrape(base: string): Promise<Scrape> {
  const r = await fetch(`${base}/metrics`);
  const text = await r.text();
  if (r.status !== 200) throw new Error(`/metrics answered ${r.status}`);
  return parseMetrics(text);
}

const connections = (s: Scrape, format: 'json' | 'proto'): number => total(s, 'odds_ws_connections', label('format', format));
const notMetrics = (l: string): boolean => !l.includes('route="/metrics"');
const fiveXXOf = (s: Scrape): number => total(s, 'odds_http_requests_total', (l) => /status="5\d\d"/.test(l));

async function main(): Promise<number> {
  const problems = new Problems();
  const fdLimit = openFileLimit();
  if (ARGS.sockets + 200 > fdLimit) {
    process.stderr.write(`--sockets ${ARGS.sockets} needs more open files than this process may have (${fdLimit}); raise ulimit -n or ask for fewer\n`);
    return 2;
  }
  log(`soak: ${ARGS.minutes} min, ${ARGS.sockets} sockets x ${ARGS.markets} markets, ${ARGS.rps} REST req/s, ${ARGS.images} images/s; warm-up ${WARMUP_S} s`);
  let db: Database | undefined;
  let svc: ServiceProcess | undefined;
  let http: Http | undefined;
  let pool: Pool | undefined;
  let interrupted = false;
  const onSignal = (sig: string) => {
    if (interrupted) return;
    interrupted = true;
    log(`${sig}: stopping the load and the service`);
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));

  const samples: Sample[] = [];
  const checks: Check[] = [];
  const startedAt = new Date().toISOString();
  let shutdown: Record<string, unknown> = {};
  let catalogSize: Record<string, number> = {};
  let restLoad: RestLoad | undefined;
  let feed: IngestFeed | undefined;
  let toggler: StateToggler | undefined;
  let restSubs: RestSubscriptions | undefined;
  let final: Record<string, unknown> = {};
  let diedAt: number | undefined;
  const subscriptionChecks = { windows: 0, failed: 0 };

  try {
    db = await prepareDatabase();
    log(`database: ${db.where}`);
    svc = await ServiceProcess.start(db.env);
    const service = svc;
    log(`service pid ${service.pid} ready on ${service.url}`);
    const cat = await readCatalog(service.url);
    // Two markets with runners are kept for REST subscribe, which reaches every socket; no socket subscribes them itself.
    const reserved = cat.open.filter((m) => m.topLevel && m.rids.length > 1).slice(0, 2).map((m) => m.mid);
    const choices = cat.open.map((m) => m.mid).filter((m) => !reserved.includes(m));
    catalogSize = { sports: cat.sis.length, leagues: cat.lis.length, events: cat.eids.length, markets: cat.mids.length, open: cat.open.length };
    log(`demo data: ${cat.sis.length} sports, ${cat.eids.length} events, ${cat.mids.length} markets (${cat.open.length} open)`);

    http = new Http(service.port);
    const wsUrl = service.url.replace(/^http/, 'ws') + '/ws';
    pool = new Pool(wsUrl, choices, Math.min(ARGS.markets, choices.length), problems);
    const thePool = pool;
    restLoad = new RestLoad(http, cat, ARGS.rps, problems);
    feed = new IngestFeed(service.url, cat.open, ARGS.images, problems);
    toggler = new StateToggler(http, cat.open.filter((m) => m.topLevel && !reserved.includes(m.mid)), problems);
    restSubs = new RestSubscriptions(http, reserved, problems);
    const lock = new Lock();

    /** Scrapes until the gauges match what the pool holds (plus `extraPerSocket` shared markets), up to 3 s. */
    const settled = async (extraPerSocket = 0): Promise<{ s: Scrape; ok: boolean; waitedMs: number }> => {
      const t0 = Date.now();
      for (;;) {
        const s = await scrape(service.metricsUrl);
        const held = thePool.held();
        const ok = connections(s, 'json') === held.json && connections(s, 'proto') === held.proto
          && total(s, 'odds_ws_subscriptions') === thePool.expectedSubscriptions() + extraPerSocket * held.total;
        if (ok || Date.now() - t0 > 3000) return { s, ok, waitedMs: Date.now() - t0 };
        await sleep(250);
      }
    };

    log(`opening ${ARGS.sockets} subscriber sockets`);
    await pool.open(ARGS.sockets);
    await feed.connect();
    feed.start();
    restLoad.start();
    toggler.start(TOGGLE_EVERY_S * 1000);
    const t0 = Date.now();
    const elapsed = () => (Date.now() - t0) / 1000;

    // Memory probes: RSS from /proc, heap from /metrics, every 2 s; a sample keeps its window's floor.
    let window: number[] = [];
    let probing = false;
    const probe = setInterval(() => {
      if (probing) return;
      probing = true;
      scrape(service.metricsUrl).then((s) => window.push(total(s, 'nodejs_heap_size_used_bytes') / MB), () => undefined).finally(() => (probing = false));
    }, PROBE_S * 1000);

    let busy = false;
    const churn = setInterval(() => {
      if (busy) return;
      busy = true;
      const n = Math.max(1, Math.round(ARGS.sockets * CHURN_SHARE));
      void lock.run(async () => {
        await thePool.close(n);
        await thePool.open(n);
        await thePool.move(Math.min(MOVES_PER_CHURN, thePool.subs.size));
      }).finally(() => (busy = false));
    }, CHURN_EVERY_S * 1000);

    let subBusy = false;
    const restSubTimer = setInterval(() => {
      if (subBusy) return;
      subBusy = true;
      void lock.run(() => restSubs!.window(REST_SUB_HOLD_MS, async (added) => {
        subscriptionChecks.windows++;
        const r = await settled(added);
        if (!r.ok) {
          subscriptionChecks.failed++;
          problems.note('REST subscribe reach', `with ${added} REST markets on ${thePool.held().total} sockets: subscriptions ${total(r.s, 'odds_ws_subscriptions')}, expected ${thePool.expectedSubscriptions() + added * thePool.held().total}`);
        }
      })).finally(() => (subBusy = false));
    }, REST_SUB_EVERY_S * 1000);

    process.stdout.write(`${'t s'.padStart(5)} ${'rss MB'.padStart(7)} ${'heap MB'.padStart(7)} ${'sockets'.padStart(7)} ${'(held)'.padStart(7)} ${'subs'.padStart(6)} ${'(exp)'.padStart(7)} ${'req/s'.padStart(6)} ${'5xx'.padStart(4)} ${'deliv/s'.padStart(8)} ${'images/s'.padStart(8)} ${'other fds'.padStart(9)}\n`);
    let prev: { at: number; requests: number; delivered: number; frames: number; images: number } | undefined;
    const sample = async (): Promise<Sample> => lock.run(async () => {
      const r = await settled();
      const at = elapsed();
      const s = r.s;
      const held = thePool.held();
      const requests = total(s, 'odds_http_requests_total', notMetrics);
      const delivered = total(s, 'odds_frames_delivered_total');
      const images = total(s, 'odds_updates_ingested_total');
      const frames = thePool.stats.frames;
      const heapMB = total(s, 'nodejs_heap_size_used_bytes') / MB;
      window.push(heapMB);
      const dt = prev ? at - prev.at : at;
      const fd = fdCounts(service.pid);
      const ws = connections(s, 'json') + connections(s, 'proto');
      const x: Sample = {
        t: Math.round(at),
        rssMB: rssBytes(service.pid) / MB,
        rssPromMB: total(s, 'process_resident_memory_bytes') / MB,
        heapFloorMB: Math.min(...window),
        heapMB,
        sockets: { json: connections(s, 'json'), proto: connections(s, 'proto') },
        held: { json: held.json, proto: held.proto },
        subscriptions: total(s, 'odds_ws_subscriptions'),
        expectedSubscriptions: thePool.expectedSubscriptions(),
        settledMs: r.ok ? r.waitedMs : NaN,
        fds: fd.fds,
        socketFds: fd.sockets,
        otherSockets: fd.sockets - ws,
        requests,
        reqPerS: (requests - (prev?.requests ?? 0)) / dt,
        fiveXX: fiveXXOf(s),
        delivered,
        deliveredPerS: (delivered - (prev?.delivered ?? 0)) / dt,
        clientFramesPerS: (frames - (prev?.frames ?? 0)) / dt,
        imagesPerS: (images - (prev?.images ?? 0)) / dt,
        framesSkipped: total(s, 'odds_frames_skipped_total'),
        slowCloses: total(s, 'odds_slow_consumer_closes_total'),
      };
      window = [];
      prev = { at, requests, delivered, frames, images };
      const mark = r.ok ? ' ' : '!';
      process.stdout.write(`${String(x.t).padStart(5)} ${fmt(x.rssMB, 1).padStart(7)} ${fmt(x.heapFloorMB, 1).padStart(7)} ${String(ws).padStart(7)} ${`(${held.total})`.padStart(7)}${mark}${String(x.subscriptions).padStart(5)} ${`(${x.expectedSubscriptions})`.padStart(7)} ${fmt(x.reqPerS).padStart(6)} ${String(x.fiveXX).padStart(4)} ${fmt(x.deliveredPerS).padStart(8)} ${fmt(x.imagesPerS).padStart(8)} ${String(x.otherSockets).padStart(9)}\n`);
      return x;
    });

    // The run: a sample every 10 s until the time is up, the service dies or we are interrupted.
    for (let next = SAMPLE_S; ; next += SAMPLE_S) {
      while (elapsed() < Math.min(next, DURATION_S) && !service.exit && !interrupted) await sleep(200);
      if (service.exit) {
        diedAt = elapsed();
        log(`the service exited during the run (${service.exit.code ?? service.exit.signal}); last log line: ${service.lastLogLine}`);
        break;
      }
      if (interrupted) break;
      samples.push(await sample());
      if (next >= DURATION_S) break;
    }

    // Stop the load; the pool stays for the final checks.
    clearInterval(probe);
    clearInterval(churn);
    clearInterval(restSubTimer);
    await Promise.all([restLoad.stop(), feed.stop(), toggler.stop()]);
    await lock.run(async () => undefined);

    if (!service.exit) {
      // Final count: everything but a few sockets closed by us; the gauges must follow exactly.
      await lock.run(async () => {
        await thePool.close(Math.max(0, thePool.subs.size - KEEP_FOR_SHUTDOWN));
        const r = await settled();
        final = {
          held: thePool.held().total, sockets: connections(r.s, 'json') + connections(r.s, 'proto'),
          subscriptions: total(r.s, 'odds_ws_subscriptions'), expectedSubscriptions: thePool.expectedSubscriptions(),
          matched: r.ok, waitedMs: r.waitedMs, rssMB: rssBytes(service.pid) / MB, heapMB: total(r.s, 'nodejs_heap_size_used_bytes') / MB,
          fiveXX: fiveXXOf(r.s),
        };
      });
      http.close();
      // Shutdown: SIGTERM; the remaining sockets must get 1001 and the process exit 0.
      thePool.expectServerClose = true;
      const remaining = [...thePool.subs];
      const stop = await service.stop();
      const codes = await Promise.race([Promise.all(remaining.map((s) => s.closed)), sleep(5000).then(() => undefined)]);
      shutdown = { ...stop, sockets: remaining.length, closeCodes: codes ?? 'not all closed within 5 s after exit' };
      log(`service stopped: exit ${stop.code ?? stop.signal} after ${stop.ms} ms`);
    }
  } catch (err) {
    problems.note('soak', (err as Error).stack ?? String(err));
  } finally {
    pool?.terminateAll();
    http?.close();
    if (svc && !svc.exit) {
      const stop = await svc.stop();
      if (!Object.keys(shutdown).length) shutdown = { ...stop, note: 'stopped after a failure' };
    }
    await db?.cleanup().catch((err: Error) => problems.note('cleanup', err.message));
  }

  // ---- verdict ----
  const post = samples.filter((s) => s.t >= WARMUP_S);
  const memory = (name: string, pick: (s: Sample) => number): Check => {
    if (post.length < 4) return { name, ok: true, detail: `not judged: ${post.length} samples after the ${WARMUP_S} s warm-up (need 4)` };
    const ts = post.map((s) => s.t / 60);
    const ys = post.map(pick);
    const h = Math.floor(ys.length / 2);
    const k = slope(ts, ys);
    const k1 = slope(ts.slice(0, h), ys.slice(0, h));
    const k2 = slope(ts.slice(h), ys.slice(h));
    const min = Math.min(...ys);
    const end = median(ys.slice(-3));
    const sustained = k > MEM_SLOPE_MB_PER_MIN && k1 > MEM_SLOPE_MB_PER_MIN && k2 > MEM_SLOPE_MB_PER_MIN;
    return {
      name, ok: !(sustained && end > MEM_GROWTH_RATIO * min),
      detail: `slope ${fmt(k, 2)} MB/min (halves ${fmt(k1, 1)}, ${fmt(k2, 1)}; bound ${MEM_SLOPE_MB_PER_MIN} on all three); end ${fmt(end, 1)} MB = ${fmt(end / min, 2)}x the post-warm-up minimum ${fmt(min, 1)} MB (bound ${MEM_GROWTH_RATIO}x); ${post.length} samples from ${post[0].t} s`,
    };
  };
  checks.push(memory('RSS', (s) => s.rssMB));
  checks.push(memory('heap', (s) => s.heapFloorMB));
  const socketMiss = samples.filter((s) => s.sockets.json !== s.held.json || s.sockets.proto !== s.held.proto);
  const subMiss = samples.filter((s) => s.subscriptions !== s.expectedSubscriptions);
  const maxDiff = (xs: Sample[], f: (s: Sample) => number) => xs.reduce((m, s) => Math.max(m, Math.abs(f(s))), 0);
  checks.push({
    name: 'sockets', ok: samples.length > 0 && socketMiss.length === 0 && (!('held' in final) || final.sockets === final.held),
    detail: `gauge = held at ${samples.length - socketMiss.length}/${samples.length} samples (max diff ${maxDiff(socketMiss, (s) => s.sockets.json + s.sockets.proto - s.held.json - s.held.proto)}); at the end ${final.sockets ?? '-'} open for ${final.held ?? '-'} held; ${pool?.opened ?? 0} opened, ${(pool?.closedByUs ?? 0) + (pool?.terminatedByUs ?? 0)} closed by the load (${pool?.terminatedByUs ?? 0} without handshake)`,
  });
  checks.push({
    name: 'subscriptions', ok: samples.length > 0 && subMiss.length === 0 && final.subscriptions === final.expectedSubscriptions && subscriptionChecks.failed === 0,
    detail: `gauge = expected at ${samples.length - subMiss.length}/${samples.length} samples (max diff ${maxDiff(subMiss, (s) => s.subscriptions - s.expectedSubscriptions)}); at the end ${final.subscriptions ?? '-'} for ${final.expectedSubscriptions ?? '-'}; REST subscribe reached every socket in ${subscriptionChecks.windows - subscriptionChecks.failed}/${subscriptionChecks.windows} windows`,
  });
  if (post.length >= 2) {
    const others = post.map((s) => s.otherSockets);
    const grew = others[others.length - 1] - Math.min(...others);
    checks.push({ name: 'other sockets', ok: grew <= OTHER_SOCKETS_GROWTH, detail: `socket fds beside WebSockets ${Math.min(...others)} to ${Math.max(...others)}, last ${others[others.length - 1]} (bound: +${OTHER_SOCKETS_GROWTH} over the minimum)` });
  }
  const server5xx = Math.max(samples.at(-1)?.fiveXX ?? 0, Number(final.fiveXX ?? 0));
  checks.push({ name: '5xx', ok: server5xx === 0 && (restLoad?.fiveXX ?? 0) === 0, detail: `${server5xx} in odds_http_requests_total, ${restLoad?.fiveXX ?? 0} seen by the load` });
  checks.push({
    name: 'service alive', ok: diedAt === undefined && !interrupted,
    detail: diedAt !== undefined ? `exited at ${fmt(diedAt)} s: ${JSON.stringify(svc?.exit)}` : interrupted ? 'run interrupted' : 'ran until the end',
  });
  const codes = shutdown.closeCodes;
  checks.push({
    name: 'shutdown', ok: shutdown.code === 0 && shutdown.killed === false && Array.isArray(codes) && codes.every((c) => c === 1001),
    detail: !('closeCodes' in shutdown)
      ? `not reached (${svc?.exit ? `the service was already gone: ${svc.exit.code ?? svc.exit.signal}` : 'the run failed first'})`
      : `SIGTERM: exit ${shutdown.code ?? shutdown.signal} after ${shutdown.ms} ms${shutdown.killed ? ' (SIGKILLed)' : ''}; ${shutdown.sockets} sockets closed with ${Array.isArray(codes) ? [...new Set(codes)].join(',') || '-' : codes}`,
  });
  checks.push({ name: 'error logs', ok: (svc?.logs.error ?? 0) === 0, detail: `${svc?.logs.error ?? 0} errors, ${svc?.logs.warn ?? 0} warnings logged by the service` });
  checks.push({ name: 'load problems', ok: problems.total === 0, detail: problems.total === 0 ? 'none' : [...problems.counts].map(([k, v]) => `${k}: ${v}`).join('; ') });
  const stats = pool?.stats;
  if (stats) {
    checks.push({
      name: 'frame order', ok: stats.seqGaps === 0 && stats.seqBack === 0,
      detail: `protobuf sockets: ${stats.seqGaps} odds frames missing without con:true, ${stats.seqBack} older than their predecessor (${stats.conflated} conflated, ${stats.dupImages} repeated images)`,
    });
  }
  const ok = checks.every((c) => c.ok);

  const result = {
    startedAt, ok, settings: { ...ARGS, sampleSeconds: SAMPLE_S, warmupSeconds: WARMUP_S, churnEverySeconds: CHURN_EVERY_S, churnShare: CHURN_SHARE, movesPerChurn: MOVES_PER_CHURN, restSubscribeEverySeconds: REST_SUB_EVERY_S, memSlopeMBPerMin: MEM_SLOPE_MB_PER_MIN, memGrowthRatio: MEM_GROWTH_RATIO },
    machine: { node: process.version, cores: availableParallelism(), cpu: cpus()[0]?.model },
    database: db?.where, catalog: catalogSize, checks, samples, final, shutdown,
    load: { rest: restLoad?.toJSON(), ingest: feed?.toJSON(), toggles: toggler?.toggles, restSubscribeWindows: restSubs?.windows, pool: pool?.toJSON() },
    problems: problems.toJSON(), serviceLogs: svc?.logs,
  };
  const out = join(ROOT, 'bench', 'results', 'soak.json');
  mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
  writeFileSync(out, JSON.stringify(result, null, 2) + '\n');

  process.stdout.write(`\nverdict: ${ok ? 'PASS' : 'FAIL'}\n`);
  for (const c of checks) process.stdout.write(`  ${c.ok ? 'ok  ' : 'FAIL'} ${c.name.padEnd(14)} ${c.detail}\n`);
  if (restLoad && feed && stats) {
    process.stdout.write(`  load: ${restLoad.answered} REST answers (${restLoad.shed} shed), ${feed.imagesAcked} images acked, ${toggler?.toggles ?? 0} state toggles, ${restSubs?.windows ?? 0} REST subscribe windows, ${pool?.opened ?? 0} sockets opened, ${stats.frames} frames received (proto order: ${stats.seqGaps} gaps, ${stats.seqBack} backwards, ${stats.conflated} conflated)\n`);
  }
  process.stdout.write(`  results: ${out}\n`);
  return ok ? 0 : 1;
}

runMain('soak', main);
