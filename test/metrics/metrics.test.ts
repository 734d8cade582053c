import t from 'tap';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { http, postJson, startTestService } from '../helpers/service.js';
import { waitFor } from '../helpers/wait.js';
import { FakeClock } from '../helpers/clock.js';
import { sqlClient } from '../helpers/db.js';
import { Client, image } from '../helpers/ws.js';
import { parseMetrics, scrape, value } from '../helpers/metrics.js';

// The feed stays OK throughout (no publisher goes quiet for long here): a feed frame would be one more published frame.
const svc = await startTestService(t, { FEED_STALE_MS: '3600000' });
const TOKEN = 'scrape-token-0123456789abcdef';
const REUSE_MS = 1000;
/** A service whose /metrics needs a token, and whose renders answer scrapes for REUSE_MS. */
const clock = new FakeClock(Date.now());
const closed = await startTestService(t, { METRICS_TOKEN: TOKEN, METRICS_CACHE_MS: String(REUSE_MS) }, undefined, { clock });
const M = '1.200001001';

t.test('/metrics answers the Prometheus text format on the metrics port', async (t) => {
  t.not(svc.metricsPort, svc.port, 'a listener of its own');
  const r = await http(svc.metricsUrl, '/metrics');
  t.equal(r.status, 200);
  t.match(r.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  t.match(r.text, /^# HELP /m);
  t.match(r.text, /^process_cpu_user_seconds_total /m, 'default process metrics');
  t.match(r.text, /^odds_build_info\{version="0\.1\.0",node="v20\.[^"]+"\} 1$/m);
  t.match(r.text, /^odds_uws_build_info\{build="20\.(57|30)"\} 1$/m);
  t.equal(value(parseMetrics(r.text), 'odds_bus_connected'), 1, 'the memory bus (one process) is always connected: an alert on 0 never fires for it');
});

t.test('the public port does not serve /metrics: a 404 that names the metrics port', async (t) => {
  const r = await http<{ status: number; message: string }>(svc.url, '/metrics');
  t.equal(r.status, 404);
  t.same(r.body, { status: 0, message: `/metrics is not served on this port: scrape the metrics port (METRICS_PORT, ${svc.metricsPort})` });
});

t.test('the metrics port answers the probes too, and no data route', async (t) => {
  t.same((await http(svc.metricsUrl, '/health')).body, { message: 'Server is running' });
  t.same((await http(svc.metricsUrl, '/ready')).body, { message: 'ready' });
  const data = await http<{ status: number; message: string }>(svc.metricsUrl, '/api/v1/sports');
  t.equal(data.status, 404);
  t.same(data.body, { status: 0, message: 'no route for /api/v1/sports' });
});

t.test('a metrics port already taken fails the start, naming METRICS_PORT', async (t) => {
  await t.rejects(startTestService(t, { METRICS_PORT: String(svc.metricsPort) }), { message: new RegExp(`cannot listen on 127.0.0.1:${svc.metricsPort}.*\\(METRICS_PORT\\)`) });
});

t.test('docs/operations.md\'s metric table lists exactly the odds_ metrics a scrape shows', async (t) => {
  const doc = readFileSync(new URL('../../../docs/operations.md', import.meta.url), 'utf8');
  const section = doc.split(/^## Metrics$/m)[1]?.split(/^## /m)[0] ?? '';
  const listed = [...section.matchAll(/^\| `(odds_\w+)` \|/gm)].map((m) => m[1]!).sort();
  const { text } = await http(svc.metricsUrl, '/metrics');
  const scraped = [...text.matchAll(/^# TYPE (odds_\w+) /gm)].map((m) => m[1]!).sort();
  t.same(listed, scraped);
});

t.test('HTTP requests are counted by route template, method and status, with latency', async (t) => {
  const before = await scrape(svc.url);
  for (let i = 0; i < 3; i++) await http(svc.url, '/api/v1/sports');
  await http(svc.url, '/api/v1/sports/events?si=x');
  await http(svc.url, '/no/such/path/123');
  await http(svc.url, '/api/v1/sports', { method: 'PUT' });
  const after = await scrape(svc.url);
  const d = (name: string, ...l: string[]) => value(after, name, ...l) - value(before, name, ...l);
  t.equal(d('odds_http_requests_total', 'route="/api/v1/sports"', 'method="GET"', 'status="200"'), 3);
  t.equal(d('odds_http_requests_total', 'route="/api/v1/sports/events"', 'status="400"'), 1);
  t.equal(d('odds_http_requests_total', 'route="unmatched"', 'status="404"'), 1, 'unknown URLs share one label');
  t.equal(d('odds_http_requests_total', 'route="/api/v1/sports"', 'method="PUT"', 'status="405"'), 1);
  t.equal(d('odds_http_request_duration_seconds_count', 'route="/api/v1/sports"', 'method="GET"'), 3);
  t.notMatch([...after.keys()].join('\n'), /no\/such\/path/, 'no raw URL becomes a label');
});

t.test('sockets, subscriptions, ingest and frames are counted', async (t) => {
  const before = await scrape(svc.url);
  const a = await Client.connect(svc.url, { format: 'json' });
  const b = await Client.connect(svc.url, { format: 'json' });
  const p = await Client.connect(svc.url, { format: 'proto' });
  t.teardown(() => [a, b, p].forEach((c) => c.close()));
  for (const c of [a, b, p]) await c.request({ op: 'subscribe', mids: [M] });
  await postJson(svc.url, '/api/v1/ingest', { data: Array.from({ length: 5 }, (_, i) => image(M, 2 + i / 100)) });
  await postJson(svc.url, '/api/v1/ingest', { data: [{ kind: 'market', mid: 'no such market' }] });
  for (const c of [a, b, p]) await c.settled();
  const after = await scrape(svc.url);
  const d = (name: string, ...l: string[]) => value(after, name, ...l) - value(before, name, ...l);
  t.equal(value(after, 'odds_ws_connections', 'format="json"'), 2);
  t.equal(value(after, 'odds_ws_connections', 'format="proto"'), 1);
  t.equal(value(after, 'odds_ws_subscriptions'), 3);
  t.equal(d('odds_updates_ingested_total'), 5);
  t.equal(d('odds_ingest_items_total', 'kind="odds"'), 5);
  t.equal(d('odds_ingest_batches_total', 'outcome="ok"'), 1);
  t.equal(d('odds_ingest_batches_total', 'outcome="rejected"'), 1);
  t.equal(d('odds_frames_published_total', 'format="json"'), 5, 'one publish per update and format');
  t.equal(d('odds_frames_published_total', 'format="proto"'), 5);
  t.ok(d('odds_frames_delivered_total', 'format="json"') >= 10, 'each json frame to two sockets');
  t.equal(d('odds_ingest_to_publish_seconds_count'), 1);
  a.close();
  await a.closed;
  await waitFor(async () => value(await scrape(svc.url), 'odds_ws_connections', 'format="json"') === 1, 'the closed socket leaving odds_ws_connections');
  const closed = await scrape(svc.url);
  t.equal(value(closed, 'odds_ws_connections', 'format="json"'), 1);
  t.equal(value(closed, 'odds_ws_subscriptions'), 2, 'a closed socket\'s subscriptions are gone');
});

t.test('delays from the source time, to ingest and to publish, are histograms by sport and never by market', async (t) => {
  const before = await scrape(svc.url);
  // One image whose source time is 20 s old (a late feed), then one sent now: they land apart. A
  // market this file has not fed, so the old one is not out of order with an earlier test's images.
  const M2 = '1.200001002';
  const r = await postJson(svc.url, '/api/v1/ingest', { data: [{ ...image(M2, 2.2), ts: Date.now() - 20_000 }, image(M2, 2.1)] });
  t.equal(r.status, 200);
  const after = await scrape(svc.url);
  const d = (name: string, ...l: string[]) => value(after, name, ...l) - value(before, name, ...l);
  const cricket = 'sport="Cricket"';
  t.equal(d('odds_source_to_ingest_seconds_count', cricket), 2, 'per image');
  t.equal(d('odds_source_to_publish_seconds_count', cricket), 2, 'per image');
  t.equal(d('odds_ingest_to_publish_seconds_count', cricket), 1, 'once per batch and sport');
  for (const name of ['odds_source_to_ingest_seconds_bucket', 'odds_source_to_publish_seconds_bucket']) {
    t.equal(d(name, cricket, 'le="10"'), 1, `${name}: the fresh image within 10 s`);
    t.equal(d(name, cricket, 'le="30"'), 2, `${name}: the late one between 10 and 30 s`);
  }
  t.ok(d('odds_source_to_publish_seconds_sum', cricket) >= 20, 'the sum counts the late image\'s 20 s');
  t.notMatch([...after.keys()].join('\n'), new RegExp(M.replace('.', '\\.')), 'no market ID in any label');
});

t.test('read model size, refresh lag and the Postgres pool', async (t) => {
  const before = await scrape(svc.url);
  t.equal(value(before, 'odds_read_model_items', 'kind="markets"'), svc.model.size.markets);
  t.ok(value(before, 'odds_pg_pool_connections', 'state="total"') >= 1);
  const c = await sqlClient(t, svc.databaseUrl);
  await c.query(`UPDATE sports SET na = 'Tennis (metrics)' WHERE si = 2`);
  await waitFor(async () => (await http(svc.url, '/api/v1/sports')).text.includes('metrics)'), 'the renamed sport served');
  const after = await scrape(svc.url);
  t.ok(value(after, 'odds_read_model_refresh_lag_seconds_count') > value(before, 'odds_read_model_refresh_lag_seconds_count'));
});

t.test('the metrics port binds loopback by default, whatever HOST is', async (t) => {
  t.equal(new URL(svc.metricsUrl).hostname, '127.0.0.1');
});

const scrapeWith = (headers: Record<string, string>) => http<string>(closed.metricsUrl, '/metrics', { headers });
const bearer = { authorization: `Bearer ${TOKEN}` };
const renders = (text: string) => value(parseMetrics(text), 'odds_metrics_renders_total');

t.test('with METRICS_TOKEN, /metrics answers only a scrape that shows it; the probes need none', async (t) => {
  for (const headers of [{}, { authorization: 'Bearer wrong-token-0123456789' }, { authorization: TOKEN }, { authorization: `Basic ${TOKEN}` }] as Record<string, string>[]) {
    const r = await scrapeWith(headers);
    t.same([r.status, r.headers.get('www-authenticate'), r.body], [401, 'Bearer', { status: 0, message: 'the metrics port needs its bearer token (METRICS_TOKEN): send Authorization: Bearer <token>' }], JSON.stringify(headers));
  }
  const ok = await scrapeWith(bearer);
  t.equal(ok.status, 200);
  t.match(ok.text, /^odds_build_info\{/m);
  t.equal((await scrapeWith({ authorization: `bearer ${TOKEN}` })).status, 200, 'the scheme in any case');
  t.equal((await http(closed.metricsUrl, '/health')).status, 200);
  t.equal((await http(closed.metricsUrl, '/ready')).status, 200);
});

t.test('a scrape flood costs one render per METRICS_CACHE_MS, and the odds keep flowing to another socket meanwhile', async (t) => {
  const sub = await Client.connect(closed.url);
  t.teardown(() => sub.close());
  await sub.request({ op: 'subscribe', mids: [M] });
  const first = renders((await scrapeWith(bearer)).text);
  let scrapes = 0;
  let published = 0;
  let refused = 0;
  // 20 rounds of 16 scrapes at once, half without the token, while a publisher sends an image a round, 250 ms apart on the service's clock.
  for (let round = 0; round < 20; round++) {
    if (round) clock.advance(REUSE_MS / 4);
    const wave = Array.from({ length: 16 }, (_, i) => scrapeWith(i % 2 ? {} : bearer));
    const ack = postJson(closed.url, '/api/v1/ingest', { data: [image(M, 2 + round / 100)] });
    for (const r of await Promise.all(wave)) {
      if (r.status === 200) scrapes++;
      else if (r.status === 401) refused++;
      else t.fail(`a scrape answered ${r.status}`);
    }
    if ((await ack).status === 200) published++;
  }
  t.equal(published, 20, 'every image was accepted');
  // Once the last render has aged past REUSE_MS, the next scrape renders afresh and counts those made during the flood.
  clock.advance(REUSE_MS);
  const during = renders((await scrapeWith(bearer)).text) - first - 1;
  t.equal(during, 4, `${scrapes} scrapes over 4.75 s: one render at each ${REUSE_MS} ms`);
  t.same([scrapes, refused], [160, 160], 'scrapes with the token answered; without it refused, rendering nothing');
  await sub.settled();
  t.equal(sub.oddsOf(M).length, 20, 'the subscriber got every image published during the flood');
});

const hasPromtool = spawnSync('promtool', ['--version']).status === 0;
t.test('promtool parses the exposition and finds nothing wrong with it', { skip: hasPromtool ? false : 'promtool is not installed here (.ci/run installs Debian\'s prometheus package)' }, async (t) => {
  const r = await http(svc.metricsUrl, '/metrics');
  const check = spawnSync('promtool', ['check', 'metrics'], { input: r.text, encoding: 'utf8' });
  const findings = `${check.stdout}${check.stderr}`.split('\n').filter(Boolean);
  t.notMatch(findings.join('\n'), /error|pars/i, 'the text parses');
  t.same(findings, [], 'no lint finding');
});
