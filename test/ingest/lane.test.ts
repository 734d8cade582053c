import t from 'tap';
import { errors } from '../../src/errors.js';
import { KeyQueues, Lane, type BatchRunner } from '../../src/ingest/lane.js';
import type { Batch, BatchItems } from '../../src/ingest/batch.js';
import type { IngestResult } from '../../src/ingest/ingest.js';

/**
 * One publisher connection's batches over a runner the test answers by hand:
 * they take effect in the order sent, bounds refuse in the batch's place, and
 * a shutdown or a revocation answers every batch taken before it lets go.
 */
class HeldRunner implements BatchRunner {
  readonly started: number[] = [];
  private readonly held: ((r: IngestResult) => void)[] = [];

  accept(items: BatchItems): Promise<IngestResult> {
    this.started.push((items as { count: number }).count);
    return new Promise((ok) => this.held.push(ok));
  }

  /** Answers the batch running now. */
  finish(): void {
    this.held.shift()!({ count: 1, inserted: 0, updated: 0, refused: [] } as unknown as IngestResult);
  }
}

const batch = (id: number, bytes = 10): Batch => ({ id, bytes, items: { count: id, reference: [], odds: [] } });
const turn = () => new Promise((ok) => setImmediate(ok));

function setup(limits = { maxInFlight: 4, maxBytes: 1000 }, keys = new KeyQueues(10_000)) {
  const runner = new HeldRunner();
  const lane = new Lane({ ingest: runner, by: {}, limits, keys, keyId: 'k' });
  const answers: string[] = [];
  const submit = (b: Batch) => lane.submit(b).then(() => answers.push(`${b.id} ok`), (err: Error) => answers.push(`${b.id} ${err.message}`));
  return { runner, lane, answers, submit };
}

t.test('batches start one at a time in the order sent, each after the one before it is answered', async (t) => {
  const { runner, answers, submit } = setup();
  void submit(batch(1));
  void submit(batch(2));
  await turn();
  t.same(runner.started, [1], 'the second waits for the first');
  runner.finish();
  await turn();
  t.same(runner.started, [1, 2]);
  runner.finish();
  await turn();
  t.same(answers, ['1 ok', '2 ok']);
});

t.test('past its bound in count a batch is refused in its place, so acks still come back in the order sent', async (t) => {
  const { runner, answers, submit } = setup({ maxInFlight: 2, maxBytes: 1000 });
  for (const id of [1, 2, 3]) void submit(batch(id));
  await turn();
  runner.finish();
  await turn();
  runner.finish();
  await turn();
  t.same(answers, ['1 ok', '2 ok', `3 ${errors.batchesInFlight(2).message}`]);
  t.same(runner.started, [1, 2], 'the refused batch never ran');
});

t.test('bytes: a connection\'s and its key\'s queues refuse past their bound; the first batch always fits; answered bytes are given back', async (t) => {
  const keys = new KeyQueues(150);
  const a = setup({ maxInFlight: 10, maxBytes: 100 }, keys);
  const b = setup({ maxInFlight: 10, maxBytes: 1000 }, keys);
  void a.submit(batch(1, 500));
  void a.submit(batch(2, 10));
  void b.submit(batch(3, 10));
  await turn();
  t.match(a.answers, [], 'nothing answered yet');
  a.runner.finish();
  await turn();
  t.same(a.answers, ['1 ok', `2 ${errors.ingestQueueFull('connection', 500, 100).message}`], 'the first batch fits however big; the next is past the connection\'s bytes');
  t.same(b.answers, [`3 ${errors.ingestQueueFull('key', 500, 150).message}`], 'another connection of the key is past the key\'s bytes');
  void b.submit(batch(4, 10));
  await turn();
  t.same(b.runner.started, [4], 'once answered, the bytes are the key\'s again');
});

t.test('shutdown: batches taken are answered; one arriving after is refused saying it was not applied; close resolves once all are answered', async (t) => {
  const { runner, lane, answers, submit } = setup();
  void submit(batch(1));
  void submit(batch(2));
  let closed = false;
  void lane.close().then(() => (closed = true));
  void submit(batch(3));
  await turn();
  t.notOk(closed, 'not while taken batches wait');
  runner.finish();
  await turn();
  runner.finish();
  await turn();
  t.ok(closed);
  t.same(answers, ['1 ok', '2 ok', `3 ${errors.shuttingDown().message}`]);
  t.same(runner.started, [1, 2]);
});

t.test('a revoked key: the running batch is answered, every other refused with the revocation, none started after', async (t) => {
  const { runner, lane, answers, submit } = setup();
  for (const id of [1, 2, 3]) void submit(batch(id));
  await turn();
  const revoked = lane.revoke(errors.keyRevoked());
  void submit(batch(4));
  runner.finish();
  await revoked;
  t.same(answers, ['1 ok', ...[2, 3, 4].map((id) => `${id} ${errors.keyRevoked().message}`)]);
  t.same(runner.started, [1]);
});
