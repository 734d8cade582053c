/**
 * A row Postgres will not store (here a note whose JSON holds \u0000, which jsonb refuses) is set
 * aside alone, counted and logged, and everything else in its batch, and after it, is written: one
 * bad row never holds back the record, nor does the day's partition, made in the refused batch's
 * transaction and gone with its rollback. Written by the recorder into a real Postgres.
 */
import t from 'tap';
import { Registry } from 'prom-client';
import { freshDatabase, sqlClient } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';
import { createLogger } from '../../src/log.js';
import { RecordMetrics } from '../../src/metrics/record.js';
import { MemoryRecordLog } from '../../src/bus/record-log.js';
import { Recorder } from '../../src/record/recorder.js';

const url = await freshDatabase(t);
const metrics = new RecordMetrics(new Registry());
const log = new MemoryRecordLog(1000, { appended: () => undefined, dropped: () => undefined });
const lines: string[] = [];
const logger = createLogger('warn', false, (line) => void lines.push(line));
const recorder = new Recorder({ url, days: 400, batch: 100, flushMs: 0, connectTimeoutMs: 2000, writeTimeoutMs: 10_000 }, { log, metrics, logger });
await recorder.start();
t.teardown(() => recorder.stop());
const sql = await sqlClient(t, url);

let n = 0;
const at = Date.now();
const note = (client: string) => log.append({ kind: 'note', note: { topic: 'ledger', src: 'pa', n: ++n, at, body: { conn: 'pa.1', op: 'open', client } } });
const clients = async () => (await sql.query<{ client: string }>(`SELECT body->>'client' AS client FROM record_ledger ORDER BY n`)).rows.map((r) => r.client);
const lost = async () => (await metrics.lost.get()).values.find((v) => v.labels.where === 'refused')?.value;

t.test('the refused row alone is set aside; the rest of its batch and what follows are written', async (t) => {
  t.equal(await lost(), 0, 'counted from zero');
  // One batch: the recorder is idle, and these are appended in one go.
  for (const c of ['a', 'b', 'c', 'bad\u0000', 'd', 'e', 'f']) note(c);
  await waitFor(async () => (await clients()).length === 6, () => `the six good rows of the batch written:\n${lines.join('')}`);
  t.same(await clients(), ['a', 'b', 'c', 'd', 'e', 'f'], 'every row but the refused one, in order');
  t.equal(await lost(), 1, 'the refused one counted lost');
  t.ok(lines.some((l) => l.includes('Postgres refused a row') && l.includes('record_ledger')), 'and logged with its table');
  note('g');
  await waitFor(async () => (await clients()).includes('g'), 'an entry after it written too');
});
