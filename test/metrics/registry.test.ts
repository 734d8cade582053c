/**
 * The service's registry over fakes of what it gauges and a clock the test moves: one render of
 * the exposition answers every scrape for METRICS_CACHE_MS and every scrape made while it is
 * rendered, so a scrape flood costs one render an interval; the gauges read their sources when
 * scraped; an idle Postgres client lost is counted.
 */
import t from 'tap';
import { EventEmitter } from 'node:events';
import type pg from 'pg';
import { ServiceMetrics } from '../../src/metrics/registry.js';
import { FakeClock } from '../helpers/clock.js';
import { parseMetrics } from '../helpers/prometheus.js';

function setup(reuseMs = 1000) {
  const clock = new FakeClock();
  const pool = Object.assign(new EventEmitter(), { totalCount: 3, idleCount: 2, waitingCount: 0 });
  const size = { sports: 5, events: 23, markets: 100, results: 7 };
  const metrics = new ServiceMetrics({ pool: pool as unknown as pg.Pool, model: { size }, uws: '20.57', version: '9.9.9', reuseMs, clock });
  const read = async () => parseMetrics((await metrics.exposition()).toString());
  return { clock, pool, size, metrics, read };
}

t.test('one render answers every scrape within the interval, and the next after it renders afresh', async (t) => {
  const { clock, metrics, read } = setup();
  const first = await metrics.exposition();
  t.equal(await metrics.exposition(), first, 'the same bytes, not rendered again');
  clock.advance(999);
  t.equal(await metrics.exposition(), first, 'still within the interval');
  clock.advance(1);
  const second = await metrics.exposition();
  t.not(second, first, 'rendered afresh once it aged past the interval');
  t.equal((await read()).get('odds_metrics_renders_total'), 2, 'two renders for five scrapes');
});

t.test('scrapes made while a render is under way wait for that one', async (t) => {
  const { metrics, read } = setup(0);
  const all = await Promise.all(Array.from({ length: 20 }, () => metrics.exposition()));
  t.ok(all.every((b) => b === all[0]), 'twenty scrapes at once, one answer');
  t.equal((await read()).get('odds_metrics_renders_total'), 2, 'one render for them, and one for this reading (METRICS_CACHE_MS=0)');
});

t.test('gauges read their sources at the scrape; a lost idle client is counted', async (t) => {
  const { clock, pool, size, read } = setup();
  const before = await read();
  t.equal(before.get('odds_pg_pool_connections{state="idle"}'), 2);
  t.equal(before.get('odds_read_model_items{kind="markets"}'), 100);
  t.equal(before.get('odds_build_info{version="9.9.9",node="' + process.version + '"}'), 1);
  pool.idleCount = 0;
  size.markets = 101;
  pool.emit('error', new Error('terminated'));
  clock.advance(1000);
  const after = await read();
  t.equal(after.get('odds_pg_pool_connections{state="idle"}'), 0);
  t.equal(after.get('odds_read_model_items{kind="markets"}'), 101);
  t.equal(after.get('odds_pg_errors_total{kind="idle_client_lost"}'), 1);
});
