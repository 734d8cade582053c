/**
 * `npm run bench:rest`: the service's REST reads against the baseline (node:http + pg, one query
 * per request), the fastify peer (fastify + pg, the same queries) and the ceiling (a bare uWS app
 * sending the same bytes), in alternating rounds, server on core 0 and autocannon on core 1. Then
 * a CPU profile of the service per route.
 *
 * Settings (env; a bad value stops the run naming it): BENCH_SECONDS (2) per run, BENCH_ROUNDS (2),
 * BENCH_WARMUP (1 s per route and server), BENCH_ATTEMPTS (3: a run disturbed by other processes is
 * repeated), BENCH_CONNECTIONS (50), BENCH_PROFILE (on), BENCH_ROUTES (all eight: sports, events,
 * markets, results, health, events-miss, markets-miss, results-miss), BENCH_RESULTS_NAME (rest).
 * DATABASE_URL, BENCH_DB, BENCH_QUIET_MS, BENCH_PERF: see bench/README.md.
 */
import autocannon, { type Request } from 'autocannon';
import pg from 'pg';
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pinLoadGenerator, type Pinning } from './lib/cores.js';
import { envFlag, envList, envNumber } from './lib/env.js';
import { RESULTS } from './lib/paths.js';
import { coreBusyPct, coreTimes, cpuMicros, machine } from './lib/proc.js';
import { Noise, waitQuiet } from './lib/quiet.js';
import { fmt, mdTable, writeResults } from './lib/report.js';
import { log, runMain, sleep } from './lib/run.js';
import { startServer, type Server } from './lib/server.js';
import { Histogram, median } from './lib/statistics.js';
import { missPaths, prepareDatabase, restPaths, seed, SEED } from './lib/data.js';
import { Inspector, profileMarkdown, summarise, type ProfileSummary } from './lib/profile.js';
import { perfAvailable, perfRecord, perfSummary } from './lib/perf.js';

type Target = 'service' | 'baseline' | 'fastify' | 'ceiling';
const TARGETS: Target[] = ['service', 'baseline', 'fastify', 'ceiling'];
/** The servers that read Postgres per request, and the application_name their pools give it. */
const PG_APPS: Partial<Record<Target, string>> = { baseline: 'bench-baseline', fastify: 'bench-fastify' };

interface Run {
  target: Target;
  route: string;
  round: number;
  seconds: number;
  requests: number;
  reqPerSec: number;
  p50: number;
  p99: number;
  p999: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  /** Server process CPU per request, µs. */
  cpuUsPerReq: number;
  /** Postgres backends' CPU per request, µs (baseline and fastify). */
  pgUsPerReq: number;
  serverBusyPct: number;
  loadBusyPct: number;
  /** Whole-core busy (/proc/stat): above the processes' own share means something else ran there (Postgres, other jobs). */
  serverCorePct: number;
  loadCorePct: number;
  /** CPU used by other processes during the run, % of a core (a run above 15% is repeated). */
  foreignPct: number;
  attempts: number;
}

const ROUTE_NAMES = ['sports', 'events', 'markets', 'results', 'health', 'events-miss', 'markets-miss', 'results-miss'] as const;
/** Every setting (env), read once; the header lists them with their defaults. */
const SETTINGS = Object.freeze({
  seconds: envNumber('BENCH_SECONDS', 2),
  rounds: Math.round(envNumber('BENCH_ROUNDS', 2)),
  warmup: envNumber('BENCH_WARMUP', 1),
  attempts: Math.round(envNumber('BENCH_ATTEMPTS', 3)),
  connections: Math.round(envNumber('BENCH_CONNECTIONS', 50)),
  profile: envFlag('BENCH_PROFILE', true),
  routes: Object.freeze(envList('BENCH_ROUTES', ROUTE_NAMES, ROUTE_NAMES)),
  resultsName: process.env.BENCH_RESULTS_NAME || 'rest',
});
const FOREIGN_LIMIT = 15;
/** The lookup routes again, over 5,000 distinct URLs each: more than the service's answer cache holds, so every request is computed. */
const MISS_URLS = 5000;
/** The service's answer cache in this benchmark: room for the cached routes' answers, not for the misses'. */
const BENCH_CACHE_BYTES = 1024 * 1024;

/** CPU of the Postgres backends serving one application, read from /proc (0 when not local). */
class PgCpu {
  constructor(private readonly admin: pg.Client, private readonly app: string) {}
  private async pids(): Promise<number[]> {
    const { rows } = await this.admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [this.app]);
    return rows.map((r) => r.pid);
  }
  async snapshot(): Promise<Map<number, number>> {
    const out = new Map<number, number>();
    for (const pid of await this.pids()) {
      try {
        out.set(pid, cpuMicros(pid));
      } catch {
        // not on this machine, or gone
      }
    }
    return out;
  }
  static delta(before: Map<number, number>, after: Map<number, number>): number {
    let sum = 0;
    for (const [pid, us] of after) sum += us - (before.get(pid) ?? 0);
    return sum;
  }
}

let next = 0;

async function load(server: Server, paths: string[], seconds: number, hist?: Histogram) {
  const inst = autocannon({
    url: server.url,
    connections: SETTINGS.connections,
    pipelining: 1,
    duration: seconds,
    timeout: 10,
    requests: paths.length <= 10
      ? paths.map((path) => ({ method: 'GET', path }))
      // Many URLs: every request, whichever connection sends it, takes the next one, so no two
      // requests close together ask for the same thing (each connection would otherwise walk the
      // list in step with the others and all but the first would find the answer cached).
      : [{ method: 'GET', path: paths[0], setupRequest: (req: Request) => ({ ...req, path: paths[next++ % paths.length] }) }],
  });
  if (hist) inst.on('response', (_c: unknown, _s: number, _b: number, ms: number) => hist.recordMs(ms));
  return inst;
}

async function measureOnce(server: Server, target: Target, route: string, paths: string[], round: number, pgCpu: PgCpu | undefined, pids: number[]): Promise<Run> {
  const hist = new Histogram();
  const pg0 = pgCpu ? await pgCpu.snapshot() : undefined;
  const pgPids = pg0 ? [...pg0.keys()] : [];
  const noise = new Noise(() => [...pids, ...pgPids]);
  const cpu0 = cpuMicros(server.pid);
  const self0 = process.cpuUsage();
  const cores0 = coreTimes();
  const t0 = performance.now();
  const result = await load(server, paths, SETTINGS.seconds, hist);
  const cores = coreBusyPct(cores0, coreTimes());
  const wall = (performance.now() - t0) / 1000;
  const cpu = cpuMicros(server.pid) - cpu0;
  const self = process.cpuUsage(self0);
  const foreignPct = noise.foreignPct();
  const pgUs = pgCpu && pg0 ? PgCpu.delta(pg0, await pgCpu.snapshot()) : 0;
  const requests = result.requests.total;
  return {
    target, route, round, seconds: wall, requests, reqPerSec: requests / wall,
    p50: hist.pMs(50), p99: hist.pMs(99), p999: hist.pMs(99.9),
    errors: result.errors, timeouts: result.timeouts, non2xx: result.non2xx,
    cpuUsPerReq: cpu / requests, pgUsPerReq: pgCpu ? pgUs / requests : 0,
    serverBusyPct: (100 * cpu) / (wall * 1e6), loadBusyPct: (100 * (self.user + self.system)) / (wall * 1e6),
    serverCorePct: cores[0] ?? NaN, loadCorePct: cores[1] ?? NaN, foreignPct, attempts: 1,
  };
}

/** One measurement on a quiet machine; repeated (up to BENCH_ATTEMPTS, 3, times) when other processes disturbed it. */
async function measure(server: Server, target: Target, route: string, paths: string[], round: number, pgCpu: PgCpu | undefined, pids: number[]): Promise<Run> {
  let best: Run | undefined;
  for (let attempt = 1; attempt <= SETTINGS.attempts; attempt++) {
    await waitQuiet(() => pids);
    const run = await measureOnce(server, target, route, paths, round, pgCpu, pids);
    run.attempts = attempt;
    if (!best || run.foreignPct < best.foreignPct) best = run;
    if (run.foreignPct < FOREIGN_LIMIT) break;
    log(`${route} ${target}: other processes used ${run.foreignPct.toFixed(0)}% of a core during the run; repeating it`);
  }
  return best!;
}

function serviceEnv(url: string): Record<string, string> {
  return {
    DATABASE_URL: url, PORT: '0', HOST: '127.0.0.1', DEMO_DATA: 'on', SIMULATOR: 'off', LOG_LEVEL: 'warn', LOG_FORMAT: 'json',
    // Nothing here measures shutdown: no drain delay before the sockets close.
    FEED_STALE_MS: '3600000', DRAIN_DELAY_MS: '0',
    // A cache that holds a cached route's 10 answers but not a miss route's 5,000, which it
    // evicts oldest first as they cycle: every miss request is parsed, checked and joined.
    ANSWER_CACHE_BYTES: String(BENCH_CACHE_BYTES),
  };
}

async function profileRoutes(dbUrl: string, pinning: Pinning, paths: Record<string, string[]>): Promise<Record<string, ProfileSummary>> {
  const svc = await startServer({ name: 'service (profiled)', args: ['dist/src/main.js'], env: serviceEnv(dbUrl), pinning, inspect: true });
  const out: Record<string, ProfileSummary> = {};
  const insp = new Inspector(svc.inspector!);
  try {
    const seconds = Math.min(SETTINGS.seconds, 5);
    for (const route of SETTINGS.routes) {
      await load(svc, paths[route], 1); // warm-up
      await waitQuiet(() => [svc.pid]);
      await insp.start();
      const cpu0 = cpuMicros(svc.pid);
      const perf = perfAvailable() ? perfRecord(svc.pid, Math.max(1, seconds - 0.5), `rest-${route}`) : undefined;
      const result = await load(svc, paths[route], seconds);
      const cpu = cpuMicros(svc.pid) - cpu0;
      const profile = await insp.stop();
      const perfFile = await perf;
      const rps = result.requests.total / seconds;
      out[route] = summarise(profile, `rest-${route}`, `${fmt(rps)} req/s for ${seconds} s, ${(cpu / result.requests.total).toFixed(1)} µs CPU/req (profilers on)`, cpu);
      if (perfFile) out[route].perf = perfSummary(perfFile);
      log(`profiled ${route}`);
    }
  } finally {
    insp.close();
    await svc.stop();
  }
  return out;
}

/** The four servers, each on the server core; the service seeded, the ceiling answering the service's bodies. */
interface Servers {
  byTarget: Record<Target, Server>;
  /** The checked URLs' bodies as the service answered them. */
  bodies: Record<string, string>;
}

/** First 10 URLs per route: the byte-for-byte check, the sizes and the ceiling's answers. */
const checked = (paths: Record<string, string[]>, route: string) => paths[route].slice(0, 10);

/**
 * The service's bodies of the checked URLs, written for the ceiling to answer (a miss route's
 * other URLs get its median-sized body, under the bare path).
 */
async function readBodies(service: Server, paths: Record<string, string[]>): Promise<{ bodies: Record<string, string>; file: string }> {
  const bodies: Record<string, string> = {};
  for (const route of SETTINGS.routes) {
    for (const p of checked(paths, route)) {
      const r = await fetch(service.url + p);
      if (r.status !== 200) throw new Error(`service answered ${r.status} to ${p}`);
      bodies[p] = await r.text();
    }
    if (route.endsWith('-miss')) {
      const sorted = checked(paths, route).map((p) => bodies[p]).sort((a, b) => a.length - b.length);
      bodies[checked(paths, route)[0].split('?')[0]] = sorted[Math.floor(sorted.length / 2)];
    }
  }
  mkdirSync(RESULTS, { recursive: true });
  const file = join(RESULTS, 'ceiling-bodies.json');
  writeFileSync(file, JSON.stringify(bodies));
  return { bodies, file };
}

/** Starts the four servers into `servers` (so the caller stops whatever started). */
async function startServers(dbUrl: string, pinning: Pinning, paths: Record<string, string[]>, servers: Server[]): Promise<Servers> {
  const service = await startServer({ name: 'service', args: ['dist/src/main.js'], env: serviceEnv(dbUrl), pinning });
  servers.push(service);
  const seeded = await seed(service.url);
  log(`service at ${service.url}; seeded ${seeded} items through POST /api/v1/ingest`);
  const { bodies, file } = await readBodies(service, paths);
  const baseline = await startServer({ name: 'baseline', args: ['dist/bench/baseline/server.js'], env: { DATABASE_URL: dbUrl, PORT: '0' }, pinning });
  servers.push(baseline);
  const fastify = await startServer({ name: 'fastify', args: ['dist/bench/peers/fastify.js'], env: { DATABASE_URL: dbUrl, PORT: '0' }, pinning });
  servers.push(fastify);
  const ceiling = await startServer({ name: 'ceiling', args: ['dist/bench/ceiling/server.js'], env: { BODIES_FILE: file, PORT: '0' }, pinning });
  servers.push(ceiling);
  return { byTarget: { service, baseline, fastify, ceiling }, bodies };
}

/** Same answers? Byte for byte, per URL, for both servers that compute them. */
async function compareBodies({ byTarget, bodies }: Servers, paths: Record<string, string[]>): Promise<Identical> {
  const identical: Identical = {};
  for (const route of SETTINGS.routes) {
    identical[route] = { baseline: '', fastify: '' };
    for (const target of ['baseline', 'fastify'] as const) {
      let same = 0;
      let firstDiff = '';
      for (const p of checked(paths, route)) {
        const b = await (await fetch(byTarget[target].url + p)).text();
        if (b === bodies[p]) same++;
        else if (!firstDiff) {
          let i = 0;
          while (i < b.length && b[i] === bodies[p][i]) i++;
          firstDiff = ` (first difference at byte ${i} of ${p}: service …${bodies[p].slice(Math.max(0, i - 40), i + 40)}… ${target} …${b.slice(Math.max(0, i - 40), i + 40)}…)`;
        }
      }
      identical[route][target] = `${same}/${checked(paths, route).length}${firstDiff}`;
      if (firstDiff) log(`${target} differs on ${route}${firstDiff}`);
    }
  }
  return identical;
}

/** The warm-up, then the rounds: every route on every server, the order of the servers alternating by round. */
async function runRounds(byTarget: Record<Target, Server>, paths: Record<string, string[]>, dbUrl: string): Promise<Run[]> {
  const admin = new pg.Client({ connectionString: dbUrl, application_name: 'bench-admin' });
  await admin.connect();
  try {
    const pgCpu: Partial<Record<Target, PgCpu>> = {};
    for (const [t, app] of Object.entries(PG_APPS)) pgCpu[t as Target] = new PgCpu(admin, app);
    log(`warm-up: ${SETTINGS.routes.length} routes x ${TARGETS.length} servers x ${SETTINGS.warmup} s`);
    for (const route of SETTINGS.routes) for (const t of TARGETS) await load(byTarget[t], paths[route].slice(0, 500), SETTINGS.warmup);
    const pids = Object.values(byTarget).map((s) => s.pid);
    const runs: Run[] = [];
    for (let round = 1; round <= SETTINGS.rounds; round++) {
      for (const route of SETTINGS.routes) {
        const order: Target[] = round % 2 ? TARGETS : [...TARGETS].reverse();
        for (const target of order) {
          const run = await measure(byTarget[target], target, route, paths[route], round, pgCpu[target], pids);
          runs.push(run);
          log(`round ${round} ${route.padEnd(7)} ${target.padEnd(8)} ${fmt(run.reqPerSec).padStart(7)} req/s  p50 ${run.p50.toFixed(2)} p99 ${run.p99.toFixed(2)} ms  cpu ${run.cpuUsPerReq.toFixed(1)} µs/req  server ${run.serverBusyPct.toFixed(0)}%/${run.serverCorePct.toFixed(0)}% load ${run.loadBusyPct.toFixed(0)}%/${run.loadCorePct.toFixed(0)}%  err ${run.errors} non2xx ${run.non2xx} others ${run.foreignPct.toFixed(0)}%`);
          await sleep(200);
        }
      }
    }
    return runs;
  } finally {
    await admin.end().catch(() => undefined);
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const host = machine();
  const pinning = pinLoadGenerator();
  log(pinning.note);
  const db = await prepareDatabase();
  const servers: Server[] = [];
  try {
    const paths: Record<string, string[]> = { ...restPaths(10), ...missPaths(MISS_URLS) };
    const up = await startServers(db.url, pinning, paths, servers);
    const identical = await compareBodies(up, paths);
    const sizes = Object.fromEntries(SETTINGS.routes.map((r) => [r, Math.round(median(checked(paths, r).map((p) => Buffer.byteLength(up.bodies[p]))))]));
    const runs = await runRounds(up.byTarget, paths, db.url);
    const warnings = Object.fromEntries(servers.map((s) => [s.name, s.warnings()]).filter(([, w]) => w.length));
    for (const s of servers.splice(0)) await s.stop();

    const profiles = SETTINGS.profile ? await profileRoutes(db.url, pinning, paths) : {};
    const summary = summarize(runs, sizes, identical);
    const { targets, met } = judge(summary, runs);
    const md = markdown({ host, pinning, database: db.where, summary, targets, met, warnings, profiles });
    const json = {
      benchmark: 'rest', at: new Date().toISOString(), machine: host, pinning: pinning.note, database: db.where,
      settings: { seconds: SETTINGS.seconds, rounds: SETTINGS.rounds, warmupSeconds: SETTINGS.warmup, connections: SETTINGS.connections, routes: SETTINGS.routes },
      paths: Object.fromEntries(Object.entries(paths).map(([r, ps]) => [r, ps.length > 10 ? { distinct: ps.length, first: ps.slice(0, 3) } : ps])), summary, targets, met, runs, profiles, warnings,
      elapsedSeconds: (Date.now() - started) / 1000,
    };
    const files = writeResults(SETTINGS.resultsName, json, md);
    process.stdout.write('\n' + md + '\n\n');
    log(`wrote ${files.md} and ${files.json} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  } finally {
    for (const s of servers) await s.stop();
    await db.stop();
  }
}

// ---- report ----

type Identical = Record<string, Record<'baseline' | 'fastify', string>>;
type Summary = ReturnType<typeof summarize>;

/** Medians over the rounds of one route on one server (errors summed). */
function aggregate(runs: Run[], route: string, target: Target) {
  const rs = runs.filter((r) => r.route === route && r.target === target);
  const m = (k: keyof Run) => median(rs.map((r) => r[k] as number));
  const sum = (k: keyof Run) => rs.reduce((a, r) => a + (r[k] as number), 0);
  return {
    reqPerSec: m('reqPerSec'), p50: m('p50'), p99: m('p99'), p999: m('p999'), errors: sum('errors') + sum('timeouts'), non2xx: sum('non2xx'),
    cpuUsPerReq: m('cpuUsPerReq'), pgUsPerReq: m('pgUsPerReq'), serverBusyPct: m('serverBusyPct'), loadBusyPct: m('loadBusyPct'),
    serverCorePct: m('serverCorePct'), loadCorePct: m('loadCorePct'),
  };
}

function summarize(runs: Run[], sizes: Record<string, number>, identical: Identical) {
  return Object.fromEntries(SETTINGS.routes.map((route) => {
    const s = aggregate(runs, route, 'service');
    const b = aggregate(runs, route, 'baseline');
    const f = aggregate(runs, route, 'fastify');
    const c = aggregate(runs, route, 'ceiling');
    return [route, {
      bodyBytes: sizes[route], identical: identical[route], service: s, baseline: b, fastify: f, ceiling: c,
      xBaseline: s.reqPerSec / b.reqPerSec, xFastify: s.reqPerSec / f.reqPerSec, ofCeiling: s.reqPerSec / c.reqPerSec,
      // Theirs over ours: above 1, the service is cheaper. The peers' Postgres work counts, the service reads memory.
      cpuXBaseline: (b.cpuUsPerReq + b.pgUsPerReq) / s.cpuUsPerReq, cpuXFastify: (f.cpuUsPerReq + f.pgUsPerReq) / s.cpuUsPerReq,
      cpuOfCeiling: c.cpuUsPerReq / s.cpuUsPerReq,
    }];
  }));
}

/** Each target as the report words it, and whether it was met. */
function judge(summary: Summary, runs: Run[]) {
  const dataRoutes = SETTINGS.routes.filter((r) => r !== 'health');
  const targets = {
    '2x baseline req/s on every data route': dataRoutes.map((r) => `${r} ${summary[r].xBaseline.toFixed(2)}x`).join(', '),
    'vs fastify (req/s)': dataRoutes.map((r) => `${r} ${summary[r].xFastify.toFixed(2)}x`).join(', '),
    'within 15% of the ceiling (req/s)': SETTINGS.routes.map((r) => `${r} ${(100 * summary[r].ofCeiling).toFixed(0)}%`).join(', '),
    'within 15% of the ceiling (CPU/req)': SETTINGS.routes.map((r) => `${r} ${(100 * summary[r].cpuOfCeiling).toFixed(0)}%`).join(', '),
    'p99 no worse than baseline': SETTINGS.routes.map((r) => `${r} ${summary[r].service.p99.toFixed(2)} vs ${summary[r].baseline.p99.toFixed(2)} ms`).join(', '),
    'zero errors and non-2xx': runs.every((r) => r.errors + r.timeouts + r.non2xx === 0) ? 'yes' : 'NO',
  };
  const met = {
    x2: dataRoutes.every((r) => summary[r].xBaseline >= 2),
    ceiling: SETTINGS.routes.every((r) => summary[r].ofCeiling >= 0.85),
    ceilingCpu: SETTINGS.routes.every((r) => summary[r].cpuOfCeiling >= 0.85),
    p99: SETTINGS.routes.every((r) => summary[r].service.p99 <= summary[r].baseline.p99),
    errors: targets['zero errors and non-2xx'] === 'yes',
  };
  return { targets, met };
}

/** The ratios per route: req/s and CPU per request against each other server, and whether the bytes matched. */
function ratioTable(summary: Summary): string {
  return mdTable(
    ['route', 'body B', 'service req/s', 'baseline req/s', 'vs baseline', 'fastify req/s', 'vs fastify', 'ceiling req/s', 'of ceiling (req/s)',
      'CPU µs/req service / baseline (+Postgres) / fastify (+Postgres) / ceiling', 'CPU/req: baseline ÷ service', 'fastify ÷ service', 'of ceiling (CPU/req)', 'same bytes (baseline, fastify)'],
    SETTINGS.routes.map((r) => {
      const x = summary[r];
      return [r, fmt(x.bodyBytes), fmt(x.service.reqPerSec), fmt(x.baseline.reqPerSec), `${x.xBaseline.toFixed(2)}x`, fmt(x.fastify.reqPerSec), `${x.xFastify.toFixed(2)}x`,
        fmt(x.ceiling.reqPerSec), `${(100 * x.ofCeiling).toFixed(0)}%`,
        `${x.service.cpuUsPerReq.toFixed(1)} / ${x.baseline.cpuUsPerReq.toFixed(1)} (+${x.baseline.pgUsPerReq.toFixed(1)}) / ` +
          `${x.fastify.cpuUsPerReq.toFixed(1)} (+${x.fastify.pgUsPerReq.toFixed(1)}) / ${x.ceiling.cpuUsPerReq.toFixed(1)}`,
        `${x.cpuXBaseline.toFixed(1)}x`, `${x.cpuXFastify.toFixed(1)}x`, `${(100 * x.cpuOfCeiling).toFixed(0)}%`,
        `${x.identical.baseline.split(' ')[0]}, ${x.identical.fastify.split(' ')[0]}`];
    }),
  );
}

/** Latency, errors and how busy each core was, per route and server. */
function latencyTable(summary: Summary): string {
  return mdTable(
    ['route', 'server', 'req/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'errors', 'non-2xx', 'server process / core 0 busy', 'autocannon / core 1 busy'],
    SETTINGS.routes.flatMap((r) => TARGETS.map((t) => {
      const x = summary[r][t];
      return [r, t, fmt(x.reqPerSec), x.p50.toFixed(2), x.p99.toFixed(2), x.p999.toFixed(2), x.errors, x.non2xx, `${x.serverBusyPct.toFixed(0)}% / ${x.serverCorePct.toFixed(0)}%`, `${x.loadBusyPct.toFixed(0)}% / ${x.loadCorePct.toFixed(0)}%`];
    })),
  );
}

interface ReportInput {
  host: Record<string, unknown>;
  pinning: Pinning;
  database: string;
  summary: Summary;
  targets: ReturnType<typeof judge>['targets'];
  met: ReturnType<typeof judge>['met'];
  warnings: Record<string, unknown>;
  profiles: Record<string, ProfileSummary>;
}

function markdown({ host, pinning, database, summary, targets, met, warnings, profiles }: ReportInput): string {
  const missNote = SETTINGS.routes.some((r) => r.endsWith('-miss'))
    ? `The \`-miss\` rows repeat the lookup routes over ${fmt(MISS_URLS)} distinct URLs each, more than the service's answer cache ` +
      `holds (ANSWER_CACHE_BYTES=${fmt(BENCH_CACHE_BYTES)} here: room for 10 answers of a route, evicted oldest first), so every request is parsed and joined; the other rows ` +
      `cycle 10 URLs per route and are answered from that cache. The ceiling answers a miss route with its median-sized body.`
    : '';
  return [
    `## REST reads: service vs baseline (node:http), fastify and ceiling`,
    '',
    `${host.cpu}, ${host.cores} cores, Node ${process.version}; ${pinning.note}. autocannon, ${SETTINGS.connections} connections, no pipelining, ` +
      `${SETTINGS.rounds} alternating rounds of ${SETTINGS.seconds} s per server and route (medians shown). Data: the demo set plus ${SEED.sports} sports, ` +
      `${SEED.sports * SEED.eventsPerSport} events and ${SEED.sports * SEED.eventsPerSport * 6} markets seeded through \`POST /api/v1/ingest\`; ` +
      `each request asks for 10 sport IDs, 10 event IDs or 50 market IDs. ${database}. ${missNote}`,
    '',
    ratioTable(summary),
    '',
    'Where the load-generator core is ~100% busy, req/s is capped by autocannon, not by the server: compare CPU µs per request there. ' +
      'The baseline\'s and fastify\'s Postgres CPU is that of their pools\' backends (pg_stat_activity + /proc); the service reads from memory.',
    '',
    latencyTable(summary),
    '',
    `Targets: ${met.x2 ? 'MET' : 'MISSED'} 2x baseline (${targets['2x baseline req/s on every data route']}); against fastify: ${targets['vs fastify (req/s)']}; ` +
      `${met.ceiling ? 'MET' : 'MISSED'} within 15% of the ceiling by req/s (${targets['within 15% of the ceiling (req/s)']}), ` +
      `${met.ceilingCpu ? 'MET' : 'MISSED'} by CPU per request (${targets['within 15% of the ceiling (CPU/req)']}); ` +
      `${met.p99 ? 'MET' : 'MISSED'} p99 ≤ baseline (${targets['p99 no worse than baseline']}); errors/non-2xx all zero: ${targets['zero errors and non-2xx']}.`,
    ...Object.entries(warnings).map(([name, w]) => `Note: the ${name} logged: ${(w as string[]).slice(0, 3).join(' | ')}`),
    '',
    ...(SETTINGS.profile ? ['CPU profiles of the service, one route at a time (V8 sampling profiler through the inspector, plus Linux perf when available):', '', ...SETTINGS.routes.map((r) => profileMarkdown(r, profiles[r]))] : []),
  ].join('\n');
}

runMain('bench:rest', main);
