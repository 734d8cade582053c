/**
 * One soak run from start to stop: the service and its database, the load against it, a sample
 * of its gauges and memory every 10 s until the time is up, the service dies or the run is
 * interrupted, then a final count and the shutdown. What it saw is handed to the verdict.
 */
import { readCatalog } from './catalog.js';
import { IngestFeed } from './ingest-feed.js';
import { Http, RestLoad, RestSubscriptions, StateToggler } from './rest-load.js';
import { ServiceProcess, prepareDatabase, type Database } from './service.js';
import { SETTINGS } from './settings.js';
import { Pool } from './subscribers.js';
import { Lock, MB, fdCounts, fmt, label, log, parseMetrics, rssBytes, sleep, total, type Problems, type Scrape } from './util.js';
import type { Outcome, Sample } from './verdict.js';

async function scrape(base: string): Promise<Scrape> {
  const r = await fetch(`${base}/metrics`);
  const text = await r.text();
  if (r.status !== 200) throw new Error(`/metrics answered ${r.status}`);
  return parseMetrics(text);
}

const connections = (s: Scrape, format: 'json' | 'proto'): number => total(s, 'odds_ws_connections', label('format', format));
const notMetrics = (l: string): boolean => !l.includes('route="/metrics"');
const fiveXXOf = (s: Scrape): number => total(s, 'odds_http_requests_total', (l) => /status="5\d\d"/.test(l));

/** The load against one service: each part started and stopped together. */
interface Load {
  pool: Pool;
  rest: RestLoad;
  feed: IngestFeed;
  toggler: StateToggler;
  restSubs: RestSubscriptions;
}

const HEADER = `${'t s'.padStart(5)} ${'rss MB'.padStart(7)} ${'heap MB'.padStart(7)} ${'sockets'.padStart(7)} ${'(held)'.padStart(7)} ${'subs'.padStart(6)} ${'(exp)'.padStart(7)} ${'req/s'.padStart(6)} ${'5xx'.padStart(4)} ${'deliv/s'.padStart(8)} ${'images/s'.padStart(8)} ${'other fds'.padStart(9)}\n`;

export class SoakRun {
  db: Database | undefined;
  svc: ServiceProcess | undefined;
  http: Http | undefined;
  load: Partial<Load> = {};
  interrupted = false;
  readonly samples: Sample[] = [];
  shutdown: Record<string, unknown> = {};
  catalogSize: Record<string, number> = {};
  final: Record<string, unknown> = {};
  diedAt: number | undefined;
  readonly subscriptionChecks = { windows: 0, failed: 0 };
  private readonly lock = new Lock();
  private readonly timers: NodeJS.Timeout[] = [];
  /** Heap-used readings since the last sample. */
  private window: number[] = [];
  private prev: { at: number; requests: number; delivered: number; frames: number; images: number } | undefined;
  private t0 = 0;

  constructor(private readonly problems: Problems) {}

  /** Starts the database, the service and the load, and runs until the time is up; throws on a failure to start. */
  async run(): Promise<void> {
    this.db = await prepareDatabase();
    log(`database: ${this.db.where}`);
    this.svc = await ServiceProcess.start(this.db.env);
    log(`service pid ${this.svc.pid} ready on ${this.svc.url}`);
    const load = await this.prepareLoad(this.svc);
    log(`opening ${SETTINGS.args.sockets} subscriber sockets`);
    await load.pool.open(SETTINGS.args.sockets);
    await load.feed.connect();
    load.feed.start();
    load.rest.start();
    load.toggler.start(SETTINGS.toggleEveryS * 1000);
    this.t0 = Date.now();
    this.startTimers(this.svc, load);
    process.stdout.write(HEADER);
    await this.sampleUntilDone(this.svc, load.pool);
    await this.stopLoad(load);
    if (!this.svc.exit) await this.finish(this.svc, load.pool);
  }

  /** Closes what is left after a run, whether it ended or failed. */
  async cleanup(): Promise<void> {
    this.load.pool?.terminateAll();
    this.http?.close();
    if (this.svc && !this.svc.exit) {
      const stop = await this.svc.stop();
      if (!Object.keys(this.shutdown).length) this.shutdown = { ...stop, note: 'stopped after a failure' };
    }
    await this.db?.cleanup().catch((err: Error) => this.problems.note('cleanup', err.message));
  }

  outcome(): Outcome {
    return {
      samples: this.samples, final: this.final, shutdown: this.shutdown, subscriptionChecks: this.subscriptionChecks,
      pool: this.load.pool, svc: this.svc, clientFiveXX: this.load.rest?.fiveXX ?? 0, diedAt: this.diedAt,
      interrupted: this.interrupted, problems: this.problems,
    };
  }

  private async prepareLoad(service: ServiceProcess): Promise<Load> {
    const cat = await readCatalog(service.url);
    // Two markets with runners are kept for REST subscribe, which reaches every socket; no socket subscribes them itself.
    const reserved = cat.open.filter((m) => m.topLevel && m.rids.length > 1).slice(0, 2).map((m) => m.mid);
    const choices = cat.open.map((m) => m.mid).filter((m) => !reserved.includes(m));
    this.catalogSize = { sports: cat.sis.length, leagues: cat.lis.length, events: cat.eids.length, markets: cat.mids.length, open: cat.open.length };
    log(`demo data: ${cat.sis.length} sports, ${cat.eids.length} events, ${cat.mids.length} markets (${cat.open.length} open)`);
    const http = (this.http = new Http(service.port));
    const wsUrl = service.url.replace(/^http/, 'ws') + '/ws';
    const { args } = SETTINGS;
    this.load.pool = new Pool(wsUrl, choices, Math.min(args.markets, choices.length), this.problems);
    this.load.rest = new RestLoad(http, cat, args.rps, this.problems);
    this.load.feed = new IngestFeed(service.url, cat.open, args.images, this.problems);
    this.load.toggler = new StateToggler(http, cat.open.filter((m) => m.topLevel && !reserved.includes(m.mid)), this.problems);
    this.load.restSubs = new RestSubscriptions(http, reserved, this.problems);
    return this.load as Load;
  }

  private elapsed(): number {
    return (Date.now() - this.t0) / 1000;
  }

  /** Scrapes until the gauges match what the pool holds (plus `extraPerSocket` shared markets), up to 3 s. */
  private async settled(service: ServiceProcess, pool: Pool, extraPerSocket = 0): Promise<{ s: Scrape; ok: boolean; waitedMs: number }> {
    const t0 = Date.now();
    for (;;) {
      const s = await scrape(service.metricsUrl);
      const held = pool.held();
      const ok = connections(s, 'json') === held.json && connections(s, 'proto') === held.proto
        && total(s, 'odds_ws_subscriptions') === pool.expectedSubscriptions() + extraPerSocket * held.total;
      if (ok || Date.now() - t0 > 3000) return { s, ok, waitedMs: Date.now() - t0 };
      await sleep(250);
    }
  }

  /** Every `period` seconds, `task` unless the previous one is still running. */
  private every(period: number, task: () => Promise<unknown>): void {
    let busy = false;
    this.timers.push(setInterval(() => {
      if (busy) return;
      busy = true;
      void task().finally(() => (busy = false));
    }, period * 1000));
  }

  /** Memory probes, socket churn and REST subscribe windows, until stopLoad. */
  private startTimers(service: ServiceProcess, load: Load): void {
    const { pool, restSubs } = load;
    // Memory probes: RSS from /proc, heap from /metrics, every 2 s; a sample keeps its window's floor.
    this.every(SETTINGS.probeS, () => scrape(service.metricsUrl).then((s) => this.window.push(total(s, 'nodejs_heap_size_used_bytes') / MB), () => undefined));
    this.every(SETTINGS.churnEveryS, () => {
      const n = Math.max(1, Math.round(SETTINGS.args.sockets * SETTINGS.churnShare));
      return this.lock.run(async () => {
        await pool.close(n);
        await pool.open(n);
        await pool.move(Math.min(SETTINGS.movesPerChurn, pool.subs.size));
      });
    });
    this.every(SETTINGS.restSubEveryS, () => this.lock.run(() => restSubs.window(SETTINGS.restSubHoldMs, async (added) => {
      this.subscriptionChecks.windows++;
      const r = await this.settled(service, pool, added);
      if (!r.ok) {
        this.subscriptionChecks.failed++;
        this.problems.note('REST subscribe reach', `with ${added} REST markets on ${pool.held().total} sockets: subscriptions ${total(r.s, 'odds_ws_subscriptions')}, expected ${pool.expectedSubscriptions() + added * pool.held().total}`);
      }
    })));
  }

  /** A sample every 10 s until the time is up, the service dies or the run is interrupted. */
  private async sampleUntilDone(service: ServiceProcess, pool: Pool): Promise<void> {
    const { sampleS, durationS } = SETTINGS;
    for (let next = sampleS; ; next += sampleS) {
      while (this.elapsed() < Math.min(next, durationS) && !service.exit && !this.interrupted) await sleep(200);
      if (service.exit) {
        this.diedAt = this.elapsed();
        log(`the service exited during the run (${service.exit.code ?? service.exit.signal}); last log line: ${service.lastLogLine}`);
        break;
      }
      if (this.interrupted) break;
      this.samples.push(await this.lock.run(() => this.sample(service, pool)));
      if (next >= durationS) break;
    }
  }

  private async sample(service: ServiceProcess, pool: Pool): Promise<Sample> {
    const r = await this.settled(service, pool);
    const at = this.elapsed();
    const s = r.s;
    const held = pool.held();
    const requests = total(s, 'odds_http_requests_total', notMetrics);
    const delivered = total(s, 'odds_frames_delivered_total');
    const images = total(s, 'odds_updates_ingested_total');
    const frames = pool.stats.frames;
    const heapMB = total(s, 'nodejs_heap_size_used_bytes') / MB;
    this.window.push(heapMB);
    const prev = this.prev;
    const dt = prev ? at - prev.at : at;
    const fd = fdCounts(service.pid);
    const ws = connections(s, 'json') + connections(s, 'proto');
    const x: Sample = {
      t: Math.round(at),
      rssMB: rssBytes(service.pid) / MB,
      rssPromMB: total(s, 'process_resident_memory_bytes') / MB,
      heapFloorMB: Math.min(...this.window),
      heapMB,
      sockets: { json: connections(s, 'json'), proto: connections(s, 'proto') },
      held: { json: held.json, proto: held.proto },
      subscriptions: total(s, 'odds_ws_subscriptions'),
      expectedSubscriptions: pool.expectedSubscriptions(),
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
    this.window = [];
    this.prev = { at, requests, delivered, frames, images };
    const mark = r.ok ? ' ' : '!';
    process.stdout.write(`${String(x.t).padStart(5)} ${fmt(x.rssMB, 1).padStart(7)} ${fmt(x.heapFloorMB, 1).padStart(7)} ${String(ws).padStart(7)} ${`(${held.total})`.padStart(7)}${mark}${String(x.subscriptions).padStart(5)} ${`(${x.expectedSubscriptions})`.padStart(7)} ${fmt(x.reqPerS).padStart(6)} ${String(x.fiveXX).padStart(4)} ${fmt(x.deliveredPerS).padStart(8)} ${fmt(x.imagesPerS).padStart(8)} ${String(x.otherSockets).padStart(9)}\n`);
    return x;
  }

  /** Stops the load; the pool stays for the final checks. */
  private async stopLoad(load: Load): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    await Promise.all([load.rest.stop(), load.feed.stop(), load.toggler.stop()]);
    await this.lock.run(async () => undefined);
  }

  /** The final count, then SIGTERM: the remaining sockets must get 1001 and the process exit 0. */
  private async finish(service: ServiceProcess, pool: Pool): Promise<void> {
    // Everything but a few sockets closed by us; the gauges must follow exactly.
    await this.lock.run(async () => {
      await pool.close(Math.max(0, pool.subs.size - SETTINGS.keepForShutdown));
      const r = await this.settled(service, pool);
      this.final = {
        held: pool.held().total, sockets: connections(r.s, 'json') + connections(r.s, 'proto'),
        subscriptions: total(r.s, 'odds_ws_subscriptions'), expectedSubscriptions: pool.expectedSubscriptions(),
        matched: r.ok, waitedMs: r.waitedMs, rssMB: rssBytes(service.pid) / MB, heapMB: total(r.s, 'nodejs_heap_size_used_bytes') / MB,
        fiveXX: fiveXXOf(r.s),
      };
    });
    this.http?.close();
    pool.expectServerClose = true;
    const remaining = [...pool.subs];
    const stop = await service.stop();
    const codes = await Promise.race([Promise.all(remaining.map((s) => s.closed)), sleep(5000).then(() => undefined)]);
    this.shutdown = { ...stop, sockets: remaining.length, closeCodes: codes ?? 'not all closed within 5 s after exit' };
    log(`service stopped: exit ${stop.code ?? stop.signal} after ${stop.ms} ms`);
  }
}
