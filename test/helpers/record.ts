import type { Test } from 'tap';
import type pg from 'pg';
import { Registry } from 'prom-client';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { createPool } from '../../src/db/pool.js';
import { RecordMetrics } from '../../src/metrics/record.js';
import { MemoryRecordLog } from '../../src/bus/record-log.js';
import { Recorder, type RecorderOptions } from '../../src/record/recorder.js';

/** A record written by the real recorder from an in-memory log, and a pool that reads it. */
export interface TestRecord {
  /** What the record's log is handed, as a pod's taps hand it. */
  log: MemoryRecordLog;
  recorder: Recorder;
  pool: pg.Pool;
  metrics: RecordMetrics;
}

/**
 * Starts a recorder on the database at `url` (its lease, its migrations), and a pool on it; both
 * stopped at the end of `t`. `opts` overrides the recorder's: by default it writes whatever the
 * log holds at once.
 */
export async function testRecord(t: Test, url: string, opts: Partial<RecorderOptions> = {}): Promise<TestRecord> {
  const logger = createLogger('error', false);
  const metrics = new RecordMetrics(new Registry());
  const log = new MemoryRecordLog(10_000, { appended: () => undefined, dropped: () => undefined });
  const recorder = new Recorder(
    { url, days: 400, batch: 1000, flushMs: 0, settleMs: 1000, connectTimeoutMs: 2000, writeTimeoutMs: 10_000, ...opts },
    { log, metrics, logger },
  );
  await recorder.start();
  t.teardown(() => recorder.stop());
  const pool = createPool(url, loadConfig({}), logger);
  t.teardown(() => pool.end());
  return { log, recorder, pool, metrics };
}
