/**
 * The service's own counters and gauges over the parts they read, without a server: stale
 * markets by reason as the freshness tracker counts them at the scrape (never by market), and
 * refusals counted by the scope or reason they name.
 */
import t from 'tap';
import { Registry } from 'prom-client';
import { AuthMetrics } from '../../src/metrics/auth.js';
import { FreshnessMetrics } from '../../src/metrics/freshness.js';
import { Freshness } from '../../src/relay/freshness.js';
import { FakeClock } from '../helpers/clock.js';
import { parseMetrics } from '../helpers/prometheus.js';

const read = async (registry: Registry) => parseMetrics(await registry.metrics());

t.test('stale markets by reason, read from the tracker at each scrape, zeros too, never by market', async (t) => {
  const registry = new Registry();
  const metrics = new FreshnessMetrics(registry);
  const clock = new FakeClock();
  const fresh = new Freshness({ listener: { publishState() {} }, bus: { shareFreshness() {} }, markets: { known: () => true, held: () => [] }, clock });
  metrics.watch(fresh);
  const a = fresh.connect(1000);
  fresh.fed(a, '1.1', false);
  fresh.fed(a, '1.2', true);
  const before = await read(registry);
  t.equal(before.get('odds_markets_stale{reason="late"}'), 1);
  t.equal(before.get('odds_markets_stale{reason="publisher"}'), 0, 'a reason with none is there, at zero');
  a.close();
  const after = await read(registry);
  t.equal(after.get('odds_markets_stale{reason="publisher"}'), 2, 'its publisher gone: both, at the next scrape');
  t.notOk([...after.keys()].some((k) => k.includes('1.1')), 'no market in a label');
});

t.test('refusals counted by what refused them', async (t) => {
  const registry = new Registry();
  const auth = new AuthMetrics(registry);
  auth.socketRefused('per_key');
  auth.socketRefused('per_key');
  auth.admissionRefused('subscribe_total');
  const m = await read(registry);
  t.equal(m.get('odds_ws_refused_total{reason="per_key"}'), 2);
  t.equal(m.get('odds_rate_limited_total{scope="subscribe_total"}'), 1);
});
