/**
 * HTTP requests counted in plain numbers and folded into Prometheus at the scrape: by route
 * template, method and status, with a latency histogram whose buckets are cumulative as
 * Prometheus reads them; a method nobody uses is folded into `other`, so labels stay bounded.
 */
import t from 'tap';
import { Registry } from 'prom-client';
import { HttpMetrics } from '../../src/metrics/http.js';
import { parseMetrics } from '../helpers/prometheus.js';

t.test('requests by route, method and status; durations in cumulative buckets; scrapes repeat, not add', async (t) => {
  const registry = new Registry();
  const http = new HttpMetrics(registry);
  const sports = http.route('/api/v1/sports', 'GET');
  sports.observe(200, 0.0003);
  sports.observe(200, 0.002);
  http.observe('/api/v1/sports', 'GET', 429, 0.00005);
  http.observe('/api/v1/ingest', 'BREW', 400, 3);
  const read = async () => parseMetrics(await registry.metrics());
  const m = await read();
  t.equal(m.get('odds_http_requests_total{route="/api/v1/sports",method="GET",status="200"}'), 2);
  t.equal(m.get('odds_http_requests_total{route="/api/v1/sports",method="GET",status="429"}'), 1);
  t.equal(m.get('odds_http_requests_total{route="/api/v1/ingest",method="other",status="400"}'), 1, 'an unknown method as other');
  t.equal(m.get('odds_http_request_duration_seconds_bucket{le="0.0001",route="/api/v1/sports",method="GET"}'), 1);
  t.equal(m.get('odds_http_request_duration_seconds_bucket{le="0.0005",route="/api/v1/sports",method="GET"}'), 2, 'cumulative');
  t.equal(m.get('odds_http_request_duration_seconds_bucket{le="+Inf",route="/api/v1/sports",method="GET"}'), 3);
  t.equal(m.get('odds_http_request_duration_seconds_count{route="/api/v1/sports",method="GET"}'), 3);
  t.equal(m.get('odds_http_request_duration_seconds_bucket{le="2.5",route="/api/v1/ingest",method="other"}'), 0, 'three seconds: past every bound');
  t.same(await read(), m, 'a second scrape says the same: folded, not added again');
});
