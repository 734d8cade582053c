/**
 * Retention: the recorder keeps today and RECORD_DAYS days before it, and drops whole partitions
 * older than that (never rows one by one). The clock is the recorder's own, injected: images are
 * recorded into days 401, 400 and 0 days before "now", and the pass drops the first only.
 */
import t from 'tap';
import { freshDatabase, sqlClient } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';
import { createLogger } from '../../src/log.js';
import { Registry } from 'prom-client';
import { RecordMetrics } from '../../src/metrics/record.js';
import { MemoryRecordLog } from '../../src/bus/record-log.js';
import { Recorder } from '../../src/record/recorder.js';
import { DAY_MS, dayOf, partitionName } from '../../src/record/partitions.js';
import type { OddsImage } from '../../src/odds/image.js';
import { imageOf } from '../helpers/images.js';

const url = await freshDatabase(t);
const now = dayOf(Date.UTC(2026, 10, 25)) * DAY_MS + 12 * 3_600_000;
const log = new MemoryRecordLog(1000, { appended: () => undefined, dropped: () => undefined });
const recorder = new Recorder(
  { url, days: 400, batch: 100, flushMs: 250, connectTimeoutMs: 2000, writeTimeoutMs: 10_000 },
  { log, metrics: new RecordMetrics(new Registry()), logger: createLogger('error', false), now: () => now },
);
await recorder.start();
t.teardown(() => recorder.stop());
const sql = await sqlClient(t, url);

const image = (ts: number): OddsImage => imageOf({ mid: '1.1', ts, st: 'OPEN', ip: false, r: [{ rid: 1, st: 'ACTIVE', b: [[2, 10]], l: [[2.02, 10]] }] });

t.test('partitions whose day is past RECORD_DAYS are dropped whole; the days kept keep every row', async (t) => {
  const days = [401, 400, 0].map((ago) => now - ago * DAY_MS);
  days.forEach((pt, i) => log.append({ kind: 'odds', o: { epoch: 'm1', seq: i + 1, publishTime: pt, image: image(pt) } }));
  const count = async () => Number((await sql.query('SELECT count(*) AS n FROM record_odds')).rows[0].n);
  await waitFor(async () => (await count()) === 3, 'three images recorded');
  const dropped = await recorder.retain();
  t.same(dropped, [partitionName('record_odds', dayOf(days[0]))], 'the day 401 days back goes, and only it');
  t.same((await sql.query('SELECT seq FROM record_odds ORDER BY seq')).rows.map((r) => Number(r.seq)), [2, 3], 'the rows of the days kept remain');
  const left = await sql.query(`SELECT relname FROM pg_class WHERE relname LIKE 'record_odds_p%' AND relkind = 'r' ORDER BY relname`);
  t.same(left.rows.map((r) => r.relname), [partitionName('record_odds', dayOf(days[1])), partitionName('record_odds', dayOf(days[2]))]);
  t.same(await recorder.retain(), [], 'a second pass finds nothing to drop');
});
