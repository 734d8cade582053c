/**
 * The benchmark database and data set. A fresh database `bench` (or BENCH_DB) on the server of
 * DATABASE_URL, never any other; with no DATABASE_URL, an embedded Postgres in bench/.pg.
 * The service seeds its demo data (5 sports, 23 events) itself; on top of that the benchmark
 * feeds a larger set through the service's own ingest route, so lookups of 10 sports, 10 events
 * and 50 markets return realistically sized answers.
 */
import pg from 'pg';
import { join } from 'node:path';
import { startEmbedded } from '../../src/db/embedded.js';
import { createLogger } from '../../src/log.js';
import { ROOT } from './paths.js';
import { log } from './run.js';
import { SHARED } from './settings.js';

export interface Database {
  /** The benchmark database, for the service and the baseline. */
  url: string;
  /** Where it runs, for the report. */
  where: string;
  stop(): Promise<void>;
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = '/' + name;
  return u.toString();
}

async function recreate(adminUrl: string, name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
}

/** Drops and creates the benchmark database, so every run starts from the same data. */
export async function prepareDatabase(): Promise<Database> {
  const name = SHARED.database;
  const external = process.env.DATABASE_URL;
  if (external) {
    const u = new URL(external);
    if (u.pathname.slice(1) === name) u.pathname = '/postgres';
    await recreate(u.toString(), name);
    const url = withDatabase(external, name);
    return { url, where: `database ${name} on ${u.host} (DATABASE_URL)`, stop: async () => undefined };
  }
  log('DATABASE_URL is unset: starting an embedded Postgres in bench/.pg');
  const server = await startEmbedded(join(ROOT, 'bench', '.pg'), 0, createLogger('warn', true, (l) => process.stderr.write(l)));
  await recreate(server.url, name);
  return { url: withDatabase(server.url, name), where: `database ${name} on an embedded Postgres (bench/.pg)`, stop: () => server.stop() };
}

// ---- the seeded set ----

export const SEED = {
  sports: 20,
  leaguesPerSport: 3,
  eventsPerSport: 6,
} as const;

const FIRST_SI = 101;
const sis = Array.from({ length: SEED.sports }, (_, i) => FIRST_SI + i);
const eidOf = (si: number, e: number) => 80_000_000 + si * 100 + e;
const midOf = (eid: number, n: number) => `9.${eid}.${n}`;

/** Per event: match odds and bookmaker with runners, two sessions, a ball-by-ball, a player race with two nested markets. */
function marketsOf(si: number, eid: number): Record<string, unknown>[] {
  const team = (k: number) => ({ rid: si * 1000 + k, na: `Team ${si}-${k}` });
  const yes = { rid: 9001, na: 'Yes' };
  const no = { rid: 9002, na: 'No' };
  const draw = { rid: 9000, na: 'The Draw' };
  return [
    { kind: 'market', mid: midOf(eid, 1), eid, na: 'Match Odds', ty: 'match-odd', s: true, go: false, rt: false, if: null, r: [team(1), team(2), draw] },
    { kind: 'market', mid: midOf(eid, 2), eid, na: 'Bookmaker', ty: 'bookmaker', s: true, go: false, rt: false, r: [team(1), team(2), draw] },
    { kind: 'market', mid: midOf(eid, 3), eid, na: '6 Over Runs', ty: 'session', s: true, go: false, rt: false, di: 1 },
    { kind: 'market', mid: midOf(eid, 4), eid, na: '10 Over Runs', ty: 'session', s: true, go: false, rt: false, di: 2 },
    { kind: 'market', mid: midOf(eid, 5), eid, na: 'Ball 5.1 Runs', ty: 'ball-by-ball', s: true, go: false, rt: false, di: 3, bl: 5.1 },
    {
      kind: 'market', mid: midOf(eid, 6), eid, na: 'Player Race', ty: 'player-race', s: true, go: false, rt: false,
      m: [
        { mid: midOf(eid, 6) + '.1', s: true, go: false, r: [yes, no], if: null },
        { mid: midOf(eid, 6) + '.2', s: true, go: false, r: [yes, no], if: null },
      ],
    },
  ];
}

/** One ingest batch per sport: the sport, its leagues, events, markets and some results. */
export function seedBatches(now = Date.now()): Record<string, unknown>[][] {
  const hour = 3_600_000;
  return sis.map((si) => {
    const items: Record<string, unknown>[] = [{ kind: 'sport', si, na: `Bench Sport ${si}`, a: true }];
    for (let l = 1; l <= SEED.leaguesPerSport; l++) items.push({ kind: 'league', li: 500_000 + si * 10 + l, si, na: `Bench League ${si}-${l}` });
    for (let e = 1; e <= SEED.eventsPerSport; e++) {
      const eid = eidOf(si, e);
      items.push({
        kind: 'event', eid, na: `Home ${si}-${e} v Away ${si}-${e}`, si, li: 500_000 + si * 10 + ((e % SEED.leaguesPerSport) + 1),
        st: new Date(Math.floor(now / hour) * hour + (e - 3) * hour).toISOString(), go: false, ip: e <= 2,
        tv: e % 3 === 0 ? `<iframe src="https://tv.example/${eid}"></iframe>` : null,
      });
    }
    for (let e = 1; e <= SEED.eventsPerSport; e++) items.push(...marketsOf(si, eidOf(si, e)));
    for (let e = 1; e <= SEED.eventsPerSport; e++) {
      const eid = eidOf(si, e);
      if (e % 2 === 0) items.push({ kind: 'result', mid: midOf(eid, 1), res: String(si * 1000 + 1), rt: false, ia: false });
      if (e % 3 === 0) items.push({ kind: 'result', mid: midOf(eid, 3), res: '47', rt: false, ia: false });
      if (e === 5) items.push({ kind: 'result', mid: midOf(eid, 2), res: 'Abandoned', rt: false, ia: true });
    }
    return items;
  });
}

async function postJson(url: string, body: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, text: await res.text() };
}

/** Feeds the seeded set through `POST /api/v1/ingest`, then waits until the read model shows it. */
export async function seed(serviceUrl: string): Promise<number> {
  let items = 0;
  for (const batch of seedBatches()) {
    const r = await postJson(`${serviceUrl}/api/v1/ingest`, { data: batch });
    if (r.status !== 200) throw new Error(`seeding failed: ${r.status} ${r.text}`);
    items += batch.length;
  }
  // NOTIFY reaches the read model asynchronously: wait for the last sport's last event's markets.
  const last = eidOf(sis[sis.length - 1], SEED.eventsPerSport);
  for (let i = 0; i < 200; i++) {
    const body = await (await fetch(`${serviceUrl}/api/v1/events/markets?eid=${last}`)).text();
    const res = await (await fetch(`${serviceUrl}/api/v1/markets/result?mid=${midOf(eidOf(sis[sis.length - 1], 6), 1)}`)).text();
    if (body.includes(midOf(last, 6) + '.2') && res.includes('"res":"')) return items;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('seeded data did not show up in the read model within 10 s');
}

// ---- what the benchmarks ask for ----

/** `count` request paths per route, each asking for 10 sports, 10 events or 50 markets. */
export function restPaths(count = 10): Record<string, string[]> {
  const allEids = sis.flatMap((si) => Array.from({ length: SEED.eventsPerSport }, (_, e) => eidOf(si, e + 1)));
  const allMids = allEids.flatMap((eid) => [1, 2, 3, 4, 5, 6].map((n) => midOf(eid, n)).concat([midOf(eid, 6) + '.1']));
  const pick = <T>(xs: T[], n: number, start: number): T[] => Array.from({ length: n }, (_, i) => xs[(start + i * 7) % xs.length]);
  const uniq = <T>(xs: T[]) => [...new Set(xs)];
  const paths: Record<string, string[]> = { sports: [], events: [], markets: [], results: [], health: [] };
  for (let i = 0; i < count; i++) {
    paths.sports.push('/api/v1/sports');
    paths.events.push('/api/v1/sports/events?si=' + uniq(pick(sis, 10, i * 3)).join(','));
    paths.markets.push('/api/v1/events/markets?eid=' + uniq(pick(allEids, 10, i * 11)).join(','));
    paths.results.push('/api/v1/markets/result?mid=' + uniq(pick(allMids, 50, i * 13)).join(','));
    paths.health.push('/health');
  }
  return paths;
}

/**
 * `count` distinct URLs per lookup route (deterministic random ID sets), for the cache-miss
 * variants: cycling through more distinct URLs than the service's answer cache holds means
 * every request is computed.
 */
export function missPaths(count = 5000): Record<string, string[]> {
  const allEids = sis.flatMap((si) => Array.from({ length: SEED.eventsPerSport }, (_, e) => eidOf(si, e + 1)));
  const allMids = allEids.flatMap((eid) => [1, 2, 3, 4, 5, 6].map((n) => midOf(eid, n)).concat([midOf(eid, 6) + '.1']));
  let state = 42;
  const rand = () => ((state = (Math.imul(state, 1664525) + 1013904223) >>> 0) / 2 ** 32);
  const sample = <T>(xs: T[], n: number): T[] => {
    const a = [...xs];
    for (let i = 0; i < n; i++) {
      const j = i + Math.floor(rand() * (a.length - i));
      [a[i], a[j]] = [a[j], a[i]];
    }
    return a.slice(0, n);
  };
  const out: Record<string, string[]> = { 'events-miss': [], 'markets-miss': [], 'results-miss': [] };
  const seen = new Set<string>();
  const add = (route: string, url: string) => {
    if (!seen.has(url)) {
      seen.add(url);
      out[route].push(url);
    }
  };
  while (out['events-miss'].length < count) add('events-miss', '/api/v1/sports/events?si=' + sample(sis, 10).join(','));
  while (out['markets-miss'].length < count) add('markets-miss', '/api/v1/events/markets?eid=' + sample(allEids, 10).join(','));
  while (out['results-miss'].length < count) add('results-miss', '/api/v1/markets/result?mid=' + sample(allMids, 50).join(','));
  return out;
}

/** Markets for the fan-out benchmark: seeded match-odds and bookmaker markets, with their runners. */
export function fanoutMarkets(count: number): { mid: string; rids: number[] }[] {
  const out: { mid: string; rids: number[] }[] = [];
  for (const n of [1, 2]) {
    for (const si of sis) {
      for (let e = 1; e <= SEED.eventsPerSport; e++) out.push({ mid: midOf(eidOf(si, e), n), rids: [si * 1000 + 1, si * 1000 + 2, 9000] });
    }
  }
  if (count > out.length) throw new Error(`at most ${out.length} seeded markets can be published; FANOUT_MARKETS=${count}`);
  return out.slice(0, count);
}
