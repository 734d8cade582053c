/**
 * The recorder gathers a steady feed into one write per RECORD_FLUSH_MS, not one per entry: each
 * write is several round trips to Postgres, which at hundreds a second cost the pod more than its
 * fan-out. A full batch is written at once, and so is what a stop finds waiting. Written by the
 * recorder into a real Postgres; its writes counted by its own histogram. The interval's timing
 * itself is test/bus/record-log's, on a fake clock.
 */
import t from 'tap';
import { Registry } from 'prom-client';
import { freshDatabase, sqlClient } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';
import { imageOf } from '../helpers/images.js';
import { createLogger } from '../../src/log.js';
import { RecordMetrics } from '../../src/metrics/record.js';
import { MemoryRecordLog } from '../../src/bus/record-log.js';
import { Recorder } from '../../src/record/recorder.js';

const url = await freshDatabase(t);
const metrics = new RecordMetrics(new Registry());
const log = new MemoryRecordLog(1000, { appended: () => undefined, dropped: () => undefined });
// Long enough that no busy machine ends the gathering before the test has appended what it gathers.
const FLUSH_MS = 60_000;
const recorder = new Recorder({ url, days: 400, batch: 10, flushMs: FLUSH_MS, connectTimeoutMs: 2000, writeTimeoutMs: 10_000 }, { log, metrics, logger: createLogger('error', false) });
await recorder.start();

let seq = 0;
const append = (n: number) => {
  for (let i = 0; i < n; i++, seq++) {
    log.append({ kind: 'odds', o: { epoch: 'e', seq: seq + 1, publishTime: Date.now(), image: imageOf({ mid: '1.1', ts: seq + 1, st: 'OPEN', ip: false, r: [{ rid: 1, st: 'ACTIVE', b: [[2, 1]], l: [] }] }) } });
  }
};
const writes = async () => (await metrics.writeSeconds.get()).values.find((v) => v.metricName === 'odds_record_write_seconds_count')?.value ?? 0;
const sql = await sqlClient(t, url);
const rows = async () => Number((await sql.query('SELECT count(*) AS c FROM record_odds')).rows[0].c);

t.test('entries appended one by one are gathered into one write, until a full batch; a stop writes what waits', async (t) => {
  for (let i = 0; i < 9; i++) {
    append(1);
    await new Promise((ok) => setImmediate(ok));
  }
  t.equal(await writes(), 0, 'nine entries gathering, none written');
  append(1);
  // The rows show once committed, the write's count a moment later, when the recorder's await resumes.
  await waitFor(async () => (await rows()) === 10 && (await writes()) > 0, 'the tenth makes a full batch, written at once');
  t.equal(await writes(), 1, 'ten entries appended one by one took one write');
  append(2);
  await recorder.stop();
  t.equal(await rows(), 12, 'a stop writes what it finds gathering, without waiting out the interval');
  t.equal(await writes(), 2, 'in one write');
});
