import t from 'tap';
import { spawnSync } from 'node:child_process';
import { http, postJson, startTestService } from '../helpers/service.js';
import { sqlClient } from '../helpers/db.js';
import { Client, image } from '../helpers/ws.js';
import { scrape, value } from '../helpers/metrics.js';

const svc = await startTestService(t);
const M = '1.200001001';

t.test('/metrics answers the Prometheus text format on the metrics port', async (t) => {
  t.not(svc.metricsPort, svc.port, 'a listener of its own');
  const r = await http(svc.metricsUrl, '/metrics');
  t.equal(r.status, 200);
  t.match(r.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  t.match(r.text, /^# HELP /m);
  t.match(r.text, /^process_cpu_user_seconds_total /m, 'default process metrics');
  t.match(r.text, /^odds_build_info\{version="0\.1\.0",node="v20\.[^"]+"\} 1$/m);
  t.match(r.text, /^odds_uws_native 1$/m);
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
  await new Promise((r) => setTimeout(r, 50));
  const closed = await scrape(svc.url);
  t.equal(value(closed, 'odds_ws_connections', 'format="json"'), 1);
  t.equal(value(closed, 'odds_ws_subscriptions'), 2, 'a closed socket\'s subscriptions are gone');
});

t.test('read model size, refresh lag and the Postgres pool', async (t) => {
  const before = await scrape(svc.url);
  t.equal(value(before, 'odds_read_model_items', 'kind="markets"'), svc.model.size.markets);
  t.ok(value(before, 'odds_pg_pool_connections', 'state="total"') >= 1);
  const c = await sqlClient(t, svc.databaseUrl);
  await c.query(`UPDATE sports SET na = 'Tennis (metrics)' WHERE si = 2`);
  for (let i = 0; i < 100 && !(await http(svc.url, '/api/v1/sports')).text.includes('metrics)'); i++) await new Promise((r) => setTimeout(r, 20));
  const after = await scrape(svc.url);
  t.ok(value(after, 'odds_read_model_refresh_lag_seconds_count') > value(before, 'odds_read_model_refresh_lag_seconds_count'));
});

const hasPromtool = spawnSync('promtool', ['--version']).status === 0;
t.test('promtool parses the exposition and finds nothing wrong with it', { skip: hasPromtool ? false : 'promtool is not installed here (.ci/run installs Debian\'s prometheus package)' }, async (t) => {
  const r = await http(svc.metricsUrl, '/metrics');
  const check = spawnSync('promtool', ['check', 'metrics'], { input: r.text, encoding: 'utf8' });
  const findings = `${check.stdout}${check.stderr}`.split('\n').filter(Boolean);
  t.notMatch(findings.join('\n'), /error|pars/i, 'the text parses');
  t.same(findings, [], 'no lint finding');
});
