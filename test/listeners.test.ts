/**
 * The listeners that join areas no folder may join from below, over fakes of what they tell: what
 * the LISTEN connection hears (reference keys to the read model, key changes to auth, confirmed
 * back once held; a reconnect reloads everything), and what a reload of the read model changed
 * (frames for subscribers, a deleted market forgotten by freshness and the outside feeds).
 */
import t from 'tap';
import { EventEmitter } from 'node:events';
import type pg from 'pg';
import { Notifications, ReferenceChanges } from '../src/listeners.js';
import { OutsideFeeds } from '../src/ingest/outside.js';
import type { ModelChange } from '../src/refdata/model.js';
import type { Market } from '../src/refdata/types.js';
import { ServiceMetrics } from '../src/metrics/registry.js';
import { createLogger } from '../src/log.js';
import { FakeClock } from './helpers/clock.js';
import { parseMetrics } from './helpers/prometheus.js';

function metrics() {
  const pool = Object.assign(new EventEmitter(), { totalCount: 0, idleCount: 0, waitingCount: 0 }) as unknown as pg.Pool;
  return new ServiceMetrics({ pool, model: { size: { sports: 0, events: 0, markets: 0, results: 0 } }, uws: 'x', version: 'x', reuseMs: 0, clock: new FakeClock() });
}

t.test('what the LISTEN connection hears goes where it belongs; a key change is confirmed once auth holds it', async (t) => {
  const told: string[] = [];
  const m = metrics();
  const n = new Notifications({
    sync: { reloadAll: () => void told.push('reload all'), notify: (key: string) => void told.push(`notify ${key}`) } as never,
    auth: { enabled: true, refresh: async (_pool: unknown, ids: string[] | 'all') => (told.push(`refresh ${ids}`), ids !== 'all' && ids[0] !== 'missing') } as never,
    pool: {} as pg.Pool,
    listener: { notify: (channel: string, id: string) => void told.push(`confirm ${channel} ${id}`) } as never,
    metrics: m,
    log: createLogger('error', false, () => undefined),
  });
  n.onNotify('market:1.5');
  n.onNotify('key:k1');
  n.onNotify('key:missing');
  await new Promise((ok) => setImmediate(ok));
  t.same(told.filter((x) => !x.startsWith('confirm')), ['notify market:1.5', 'refresh k1', 'refresh missing']);
  t.equal(told.filter((x) => x.startsWith('confirm')).length, 1, 'only a key auth holds is confirmed');
  t.match(told.find((x) => x.startsWith('confirm')), / k1$/);
  told.length = 0;
  n.onConnect();
  t.same(told, ['reload all', 'refresh all'], 'a reconnect reloads everything: what was sent meanwhile is lost');
  n.onDisconnect();
  t.equal(parseMetrics(await m.registry.metrics()).get('odds_pg_errors_total{kind="listener_lost"}'), 1);
});

t.test('a reload\'s changes: frames for subscribers, a deleted market forgotten by freshness and the outside feeds', async (t) => {
  const framed: ModelChange[][] = [];
  const forgotten: string[] = [];
  const outside = new OutsideFeeds();
  outside.claim('1.1');
  const m = metrics();
  const r = new ReferenceChanges({ frames: { changed: (c: ModelChange[]) => void framed.push(c) } as never, outside, freshness: { forget: (mid: string) => void forgotten.push(mid) } as never, metrics: m });
  const gone: ModelChange = { kind: 'market', before: { id: '1.1' } as Market, after: undefined };
  r.changes([gone]);
  t.same(framed, [[gone]]);
  t.same(forgotten, ['1.1']);
  t.notOk(outside.has('1.1'));
  r.failed();
  r.lag(0.002);
  const scraped = parseMetrics(await m.registry.metrics());
  t.equal(scraped.get('odds_pg_errors_total{kind="refresh"}'), 1);
  t.equal(scraped.get('odds_read_model_refresh_lag_seconds_count'), 1);
});
