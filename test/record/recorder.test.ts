/**
 * The recorder's own rules, over a fake store and lease and the in-process log on a fake clock:
 * a batch is acknowledged only once written; the complete mark it moves is when the log drained
 * less the settling time, never while a recorder before it may have entries still to be handed
 * out again, and, idle, only when the log holds nothing; an entry at or before the mark is
 * counted late; a row Postgres refuses is set aside and the rest written. The writes themselves
 * (COPY, the mark's row, the lease's lock) are test/record's contract files' on a real Postgres.
 */
import t, { type Test } from 'tap';
import { Registry } from 'prom-client';
import { createLogger } from '../../src/log.js';
import { RecordMetrics } from '../../src/metrics/record.js';
import { MemoryRecordLog } from '../../src/bus/record-log.js';
import type { RecordBacklog, RecordBatch, RecordEntry, RecordLog } from '../../src/bus/types.js';
import { Recorder } from '../../src/record/recorder.js';
import type { RecordStore } from '../../src/record/writer.js';
import type { RecordLease } from '../../src/record/lease.js';
import type { Rows } from '../../src/record/rows.js';
import { FakeClock } from '../helpers/clock.js';
import { waitFor } from '../helpers/wait.js';
import { imageOf } from '../helpers/images.js';

const SETTLE_MS = 1000;
/** The recorder's idle wait before it moves the mark on with nothing written (recorder.ts). */
const IDLE_MARK_MS = 1000;

/** A refused row's SQLSTATE class (22: data exception), as Postgres answers a value a column cannot hold. */
const refusal = () => Object.assign(new Error('invalid input syntax'), { code: '22P02' });

class FakeStore implements RecordStore {
  readonly events: string[];
  /** Each write that succeeded: its lines and the mark it carried. */
  readonly writes: { lines: string[]; mark?: number }[] = [];
  readonly marks: number[] = [];
  complete = Number.NEGATIVE_INFINITY;
  /** Lines containing this are refused as Postgres refuses a value its column cannot hold. */
  refuse: string | undefined;

  constructor(events: string[]) {
    this.events = events;
  }

  async migrate(): Promise<void> {}

  async write(rows: Rows, mark?: number): Promise<number | undefined> {
    const lines = Object.values(rows.lines).flat();
    if (this.refuse !== undefined && lines.some((l) => l.includes(this.refuse!))) throw refusal();
    this.writes.push({ lines, mark });
    this.events.push(`write ${lines.length}`);
    if (mark === undefined) return undefined;
    this.complete = Math.max(this.complete, mark);
    return this.complete;
  }

  async mark(at: number): Promise<number> {
    this.marks.push(at);
    this.complete = Math.max(this.complete, at);
    return this.complete;
  }

  async retain(): Promise<string[]> {
    return [];
  }

  close(): void {}
}

class FakeLease implements RecordLease {
  held = false;
  async acquire(): Promise<boolean> {
    this.held = true;
    return true;
  }
  release(): void {
    this.held = false;
  }
}

/** The in-process log, with the acknowledgements seen, a redelivery time, and a backlog a test can say is left elsewhere (a recorder before this one). */
class WatchedLog implements RecordLog {
  readonly inner: MemoryRecordLog;
  /** Entries held elsewhere, unacknowledged, as NATS counts them: the idle mark waits while any are. */
  heldElsewhere = 0;

  constructor(clock: FakeClock, private readonly events: string[], readonly redeliverMs = 0) {
    this.inner = new MemoryRecordLog(1000, { appended: () => undefined, dropped: () => undefined }, clock);
  }

  append(e: RecordEntry): void {
    this.inner.append(e);
  }

  async next(max: number, signal: AbortSignal, gatherMs?: number, idleMs?: number): Promise<RecordBatch | undefined> {
    const batch = await this.inner.next(max, signal, gatherMs, idleMs);
    if (!batch) return undefined;
    return { ...batch, ack: async () => { this.events.push(`ack ${batch.entries.length}`); } };
  }

  async backlog(): Promise<RecordBacklog> {
    const own = await this.inner.backlog();
    return { ...own, entries: own.entries + this.heldElsewhere };
  }
}

let seq = 0;
/** An odds image of market `mid` stamped `at`. */
const odds = (at: number, mid = '1.1'): RecordEntry => ({
  kind: 'odds',
  o: { epoch: 'e', seq: ++seq, publishTime: at, image: imageOf({ mid, ts: at, st: 'OPEN', ip: false, r: [{ rid: 1, st: 'ACTIVE', b: [[2, seq]], l: [] }] }) },
});
const ledger = (at: number): RecordEntry => ({ kind: 'note', note: { topic: 'ledger', src: 'pa', n: ++seq, at, body: { conn: 'c1', op: 'take', mid: '1.1' } } });

async function counter(metrics: RecordMetrics, name: 'late' | 'lost', where?: string): Promise<number> {
  const { values } = await metrics[name].get();
  return values.find((v) => where === undefined || v.labels.where === where)?.value ?? 0;
}

async function setUp(t: Test, redeliverMs = 0) {
  const clock = new FakeClock();
  const events: string[] = [];
  const store = new FakeStore(events);
  const log = new WatchedLog(clock, events, redeliverMs);
  const metrics = new RecordMetrics(new Registry());
  const recorder = new Recorder(
    { url: 'postgres://unused', days: 7, batch: 100, flushMs: 0, settleMs: SETTLE_MS, connectTimeoutMs: 1000, writeTimeoutMs: 1000 },
    { log, metrics, logger: createLogger('error', false), now: () => clock.now(), store, lease: new FakeLease() },
  );
  await recorder.start();
  t.teardown(() => recorder.stop());
  /** Waits until the recorder waits on the log again (its idle timer set on the fake clock). */
  const waiting = () => waitFor(() => clock.pending() > 0, 'the recorder waits on the log again');
  return { clock, events, store, log, metrics, recorder, waiting };
}

t.test('a batch is acknowledged only after it is written, and moves the mark to when the log drained less the settling time', async (t) => {
  const { clock, events, store, log, waiting } = await setUp(t);
  await waiting();
  const drained = clock.now();
  log.append(odds(drained - 5));
  log.append(odds(drained - 4));
  log.append(ledger(drained - 3));
  await waitFor(() => events.includes('ack 3'), () => `the batch acknowledged: ${events.join(', ')}`);
  t.same(events, ['write 3', 'ack 3'], 'written, then acknowledged');
  t.equal(store.writes[0].mark, drained - SETTLE_MS, 'the mark: the instant the log drained, less RECORD_SETTLE_MS');
});

t.test('an image or state at or before the mark already written is counted late and written all the same; a ledger entry is not paged, so never late', async (t) => {
  const { clock, events, store, log, metrics, waiting } = await setUp(t);
  await waiting();
  log.append(odds(clock.now()));
  await waitFor(() => events.includes('ack 1'), 'the first batch acknowledged');
  const mark = store.complete;
  t.equal(await counter(metrics, 'late'), 0, 'nothing late yet');
  log.append(odds(mark, '1.2'));
  log.append(odds(mark + 1, '1.3'));
  log.append(ledger(mark - 10));
  await waitFor(() => events.includes('ack 3'), 'the second batch acknowledged');
  t.equal(await counter(metrics, 'late'), 1, 'one image stamped at the mark: late (a reader may have paged past it)');
  t.equal(store.writes[1].lines.length, 3, 'each written, late or not');
});

t.test('after a takeover, no batch moves the mark until the log could hand out again what a recorder before it took', async (t) => {
  const { clock, events, store, log, waiting } = await setUp(t, 5000);
  await waiting();
  // What the recorder before this one took and never acknowledged, as NATS counts it: it keeps the idle mark back too.
  log.heldElsewhere = 1;
  log.append(odds(clock.now()));
  await waitFor(() => events.includes('ack 1'), 'the first batch acknowledged');
  t.equal(store.writes[0].mark, undefined, 'written with no mark: an earlier recorder\'s unacknowledged entries may still come');
  await waiting();
  clock.advance(5000);
  await waiting();
  log.heldElsewhere = 0;
  log.append(odds(clock.now(), '1.2'));
  await waitFor(() => store.writes.length === 2, 'the second batch written');
  t.equal(store.writes[1].mark, clock.now() - SETTLE_MS, 'past the redelivery time, the batch moves the mark');
  t.same(store.marks, [], 'no idle mark while the earlier recorder\'s entries were held');
});

t.test('idle, the mark moves to now less the settling time, but only while the log holds nothing unwritten', async (t) => {
  const { clock, store, log, waiting } = await setUp(t);
  await waiting();
  log.heldElsewhere = 2;
  clock.advance(IDLE_MARK_MS);
  await waiting();
  t.same(store.marks, [], 'entries held unacknowledged elsewhere: the mark stays');
  log.heldElsewhere = 0;
  clock.advance(IDLE_MARK_MS);
  await waitFor(() => store.marks.length === 1, 'the idle mark written');
  t.same(store.marks, [clock.now() - SETTLE_MS], 'moved to now less RECORD_SETTLE_MS');
});

t.test('a row Postgres refuses is set aside: the rest of its batch is written, the loss counted, and the batch still moves the mark', async (t) => {
  const { clock, events, store, log, metrics, waiting } = await setUp(t);
  await waiting();
  store.refuse = '1.666';
  const at = clock.now();
  for (const mid of ['1.1', '1.2', '1.666', '1.3', '1.4']) log.append(odds(at, mid));
  await waitFor(() => events.some((e) => e.startsWith('ack')), () => `the batch acknowledged: ${events.join(', ')}`);
  const written = store.writes.flatMap((w) => w.lines).map((l) => l.split('\t')[0]).sort();
  t.same(written, ['1.1', '1.2', '1.3', '1.4'], 'every row but the refused one written');
  t.equal(await counter(metrics, 'lost', 'refused'), 1, 'the refused row counted lost');
  t.same(store.writes.map((w) => w.mark).filter((m) => m !== undefined), [at - SETTLE_MS], 'the batch\'s mark written once, after its rows');
  t.equal(events.at(-1), 'ack 5', 'acknowledged once its rows are written or set aside');
});
