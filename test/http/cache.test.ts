/**
 * The REST answer cache over real HTTP: bounded memory whatever URLs clients
 * send, the same bytes for equivalent requests, no stale answer after a
 * change, intact answers under eviction, and every request counted.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { http, postJson, startTestService } from '../helpers/service.js';
import { freshDatabase } from '../helpers/db.js';
import { scrape, value } from '../helpers/metrics.js';
import { waitFor } from '../helpers/wait.js';
import { loadConfig } from '../../src/config.js';

const MAIN = new URL('../../src/main.js', import.meta.url).pathname;
const MIB = 1024 * 1024;
const BIG_SPORT = 77;
const BIG_EVENTS = 1100;
/** The memory test's ANSWER_CACHE_BYTES. */
const BUDGET = 8 * MIB;

const svc = await startTestService(t);

async function bytes(base: string, path: string): Promise<Buffer> {
  const r = await fetch(base + path);
  if (r.status !== 200) throw new Error(`${path} answered ${r.status}: ${await r.text()}`);
  return Buffer.from(await r.arrayBuffer());
}

/** Runs `task` for 0..n-1, `width` at a time. */
async function inPool(n: number, width: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < n) await task(next++);
  }));
}

/** One sport with enough events (long names) that its event list is about 300 KiB, through the ingest route. */
async function seedBigSport(base: string): Promise<void> {
  const pad = 'x'.repeat(135);
  const items: Record<string, unknown>[] = [
    { kind: 'sport', si: BIG_SPORT, na: 'Big Sport', a: true },
    { kind: 'league', li: 7701, si: BIG_SPORT, na: 'Big League' },
  ];
  for (let i = 1; i <= BIG_EVENTS; i++) {
    items.push({ kind: 'event', eid: 77_000_000 + i, na: `Home ${i} v Away ${i} ${pad}`, st: '2031-01-01T12:00:00.000Z', si: BIG_SPORT, li: 7701 });
  }
  const r = await postJson(base, '/api/v1/ingest', { data: items });
  if (r.status !== 200) throw new Error(`seeding answered ${r.status}: ${r.text}`);
  await waitFor(async () => (await bytes(base, `/api/v1/sports/events?si=${BIG_SPORT}`)).includes(`"eid":${77_000_000 + BIG_EVENTS},`), 'the seeded events reaching the read model', 30000, 50);
}

function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

t.test('memory stays flat while a thousand distinct URLs ask for a 300 KiB answer', { skip: process.platform === 'linux' ? false : 'reads RSS from /proc' }, async (t) => {
  // Its own process, so the test's own allocations do not count. A budget of 8 MiB: what is
  // proved is that the cache keeps to its budget, and a small one is outgrown by fewer answers.
  const env = { ...process.env, DATABASE_URL: await freshDatabase(t), HOST: '127.0.0.1', PORT: '0', DEMO_DATA: 'off', SIMULATOR: 'off', LOG_LEVEL: 'info', LOG_FORMAT: 'json', ANSWER_CACHE_BYTES: String(BUDGET) };
  const child = spawn(process.execPath, [MAIN], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((ok) => child.on('exit', ok));
  t.teardown(async () => {
    child.kill('SIGTERM');
    await exited;
  });
  const url = await new Promise<string>((ok, fail) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const ready = out.split('\n').map((l) => /^\{.*"msg":"ready"/.test(l) && (JSON.parse(l) as { url: string }).url).find(Boolean);
      if (ready) ok(ready);
    });
    void exited.then(() => fail(new Error(`the service exited before it was ready:\n${out}`)));
  });
  await seedBigSport(url);
  const full = await bytes(url, `/api/v1/sports/events?si=${BIG_SPORT}`);
  t.ok(full.length > 280 * 1024, `the answer is ${(full.length / 1024).toFixed(0)} KiB`);

  // Distinct raw queries with ignored parameters, and distinct valid ID sets (the big sport and one unknown sport each).
  const ignored = (i: number) => `/api/v1/sports/events?si=${BIG_SPORT}&q=${i}`;
  const distinct = (i: number) => `/api/v1/sports/events?si=${BIG_SPORT},${900_000 + i}`;
  const ask = async (path: string) => {
    const body = await bytes(url, path);
    if (path.includes('&q=') ? !body.equals(full) : body.length < full.length) t.fail(`${path} answered ${body.length} bytes`);
  };
  await inPool(100, 8, (i) => ask(i % 2 ? ignored(i) : distinct(i)));
  const warm = rssBytes(child.pid!);
  const N = 500;
  await inPool(2 * N, 8, (i) => ask(i % 2 ? ignored(1000 + i) : distinct(1000 + i)));
  const after = rssBytes(child.pid!);
  t.comment(`RSS ${(warm / MIB).toFixed(1)} MiB after warm-up, ${(after / MIB).toFixed(1)} MiB after ${2 * N} more distinct URLs (${((2 * N * full.length) / MIB).toFixed(0)} MiB of answers)`);
  // The warm-up alone asks for more than the cache's whole budget (50 distinct answers, 15 MiB),
  // so the cache is full before `warm`: growth after it is allocator and collector slack. A cache
  // that kept every answer would grow by the 150 MiB of distinct answers asked; 32 MiB is four
  // times the whole budget, far under that and far over the slack.
  t.ok(after - warm < 32 * MIB, `RSS grew ${((after - warm) / MIB).toFixed(1)} MiB (limit 32)`);
});

t.test('ignored, reordered or repeated parameters get the same bytes', async (t) => {
  const same = async (canonical: string, ...variants: string[]) => {
    // A variant first, so it is not just served what the canonical request left.
    const first = await bytes(svc.url, variants[0]);
    const expected = await bytes(svc.url, canonical);
    t.ok(first.equals(expected), `${variants[0]} = ${canonical}`);
    for (const v of variants.slice(1)) t.ok((await bytes(svc.url, v)).equals(expected), `${v} = ${canonical}`);
  };
  const events = '/api/v1/sports/events';
  await same(`${events}?si=4,1`, `${events}?si=4,1&q=1`, `${events}?q=2&si=4,1`, `${events}?si=4%2C1`, `${events}?si=4,1,4`, `${events}?&si=4,1&&`, `${events}?si=4,1&key=x&format=json`);
  const all = JSON.parse((await bytes(svc.url, `${events}?si=4`)).toString()).data['4'] as { li: number }[];
  const [a, b] = [...new Set(all.map((e) => e.li))];
  t.ok(a && b, 'sport 4 has two leagues');
  await same(`${events}?si=4&li=${a},${b}`, `${events}?li=${b},${a}&si=4`, `${events}?si=4&li=${b},${a},${b}&x=y`);
  await same('/api/v1/events/markets?eid=30000001,30000011', '/api/v1/events/markets?eid=30000001,30000011&z=1', '/api/v1/events/markets?eid=30000001,30000011,30000001');
  await same('/api/v1/markets/result?mid=1.200005001,1.200003001', '/api/v1/markets/result?foo=bar&mid=1.200005001,1.200003001', '/api/v1/markets/result?mid=1.200005001,1.200003001,1.200005001');
});

t.test('the order of the IDs is kept: a reordered list is another answer', async (t) => {
  // JSON.parse orders integer keys by value, so the order is read from the text.
  const order = async (path: string) => [...(await bytes(svc.url, path)).toString().matchAll(/"(\d+)":\[/g)].map((m) => m[1]);
  t.same(await order('/api/v1/sports/events?si=4,1'), ['4', '1']);
  t.same(await order('/api/v1/sports/events?si=1,4'), ['1', '4']);
  const r = JSON.parse((await bytes(svc.url, '/api/v1/markets/result?mid=1.200003001,1.200005001')).toString()) as { mid: string }[];
  t.same(r.map((x) => x.mid), ['1.200003001', '1.200005001']);
});

t.test('a change of the read model is served on the next request, whichever URL asks', async (t) => {
  const urls = ['/api/v1/sports/events?si=4', '/api/v1/sports/events?si=4&q=1', '/api/v1/sports/events?si=4,4', '/api/v1/sports/events?si=4%2C4'];
  for (const u of urls) await bytes(svc.url, u);
  for (const u of urls) await bytes(svc.url, u);
  const eid = 40_999_001;
  const version = svc.model.version;
  const league = (JSON.parse((await bytes(svc.url, urls[0])).toString()).data['4'] as { li: number }[])[0].li;
  const r = await postJson(svc.url, '/api/v1/ingest', { data: [{ kind: 'event', eid, na: 'Late Arrival', st: '2031-01-01T12:00:00.000Z', si: 4, li: league }] });
  t.equal(r.status, 200);
  await waitFor(() => svc.model.version !== version && svc.model.event(eid) !== undefined, 'the read model has the new event', 10000, 10);
  t.ok(svc.model.event(eid), 'the read model has the new event');
  for (const u of urls) t.match((await bytes(svc.url, u)).toString(), `"eid":${eid},`, `${u} shows it at once`);
});

t.test('under constant eviction every answer stays byte for byte what it was', async (t) => {
  // The smallest budget (answers over 12 KiB are not kept at all), and one where every answer is kept for a while.
  for (const budget of [64 * 1024, 256 * 1024]) {
    const small = await startTestService(t, { ANSWER_CACHE_BYTES: String(budget) });
    const events = JSON.parse((await bytes(small.url, '/api/v1/sports/events?si=1,2,4,7')).toString()).data as Record<string, { eid: number }[]>;
    const eids = Object.values(events).flat().map((e) => e.eid);
    const paths = [
      ...[1, 2, 4, 7].map((si) => `/api/v1/sports/events?si=${si}`),
      '/api/v1/sports/events?si=1,2,4,7',
      ...eids.map((eid) => `/api/v1/events/markets?eid=${eid}`),
      // Several events' markets: answers big enough that room in the block, not the count of keys, decides what goes.
      ...eids.map((_, i) => `/api/v1/events/markets?eid=${[0, 3, 5, 7, 11].map((k) => eids[(i + k) % eids.length]).join(',')}`),
      '/api/v1/markets/result?mid=1.200005001,1.200003001',
    ];
    const expected = new Map<string, Buffer>();
    for (const p of paths) expected.set(p, await bytes(small.url, p));
    let seed = 7;
    const rand = () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32);
    let wrong = 0;
    await inPool(600, 4, async () => {
      const p = paths[Math.floor(rand() * paths.length)];
      const q = rand() < 0.5 ? p : `${p}&n=${Math.floor(rand() * 5)}`;
      if (!(await bytes(small.url, q)).equals(expected.get(p)!)) wrong++;
    });
    t.equal(wrong, 0, `${budget / 1024} KiB: no answer differed from the first one for its URL`);
  }
});

t.test('every request is counted by route, method and status, with its latency', async (t) => {
  const route = 'route="/api/v1/sports/events"';
  const before = await scrape(svc.url);
  for (let i = 0; i < 30; i++) await http(svc.url, '/api/v1/sports/events?si=4');
  for (let i = 0; i < 20; i++) await http(svc.url, `/api/v1/sports/events?si=${i + 1},4`);
  for (let i = 0; i < 5; i++) await http(svc.url, `/api/v1/sports/events?si=x${i}`);
  const after = await scrape(svc.url);
  const d = (name: string, ...l: string[]) => value(after, name, ...l) - value(before, name, ...l);
  t.equal(d('odds_http_requests_total', route, 'method="GET"', 'status="200"'), 50, 'hits and misses');
  t.equal(d('odds_http_requests_total', route, 'method="GET"', 'status="400"'), 5, 'refusals');
  t.equal(d('odds_http_request_duration_seconds_count', route, 'method="GET"'), 55);
  const buckets = [...after.keys()].filter((k) => k.startsWith('odds_http_request_duration_seconds_bucket{') && k.includes(route) && k.includes('method="GET"'));
  const bounds = buckets.map((k) => /le="([^"]+)"/.exec(k)![1]);
  t.same(bounds, ['0.0001', '0.00025', '0.0005', '0.001', '0.0025', '0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '0.5', '1', '2.5', '+Inf'], 'the same buckets as before');
  const counts = buckets.map((k) => after.get(k)!);
  t.ok(counts.every((c, i) => i === 0 || c >= counts[i - 1]), 'cumulative');
  t.equal(counts[counts.length - 1], value(after, 'odds_http_request_duration_seconds_count', route, 'method="GET"'), '+Inf is the count');
  t.ok(value(after, 'odds_http_request_duration_seconds_sum', route, 'method="GET"') > 0);
});

t.test('ANSWER_CACHE_BYTES: 32 MiB by default, and a bad value fails naming it', async (t) => {
  t.equal(loadConfig({}).answerCacheBytes, 32 * MIB);
  t.equal(loadConfig({ ANSWER_CACHE_BYTES: '1048576' }).answerCacheBytes, MIB);
  t.throws(() => loadConfig({ ANSWER_CACHE_BYTES: '1000' }), /^ANSWER_CACHE_BYTES: must be between/);
  t.throws(() => loadConfig({ ANSWER_CACHE_BYTES: 'lots' }), /^ANSWER_CACHE_BYTES: must be a whole number/);
});
