/**
 * A replay at a speed N behind a slow service, over a fake socket and a clock the test moves:
 * each instant of the recording goes in a batch of its own, so a state that lasted between two
 * instants is told; at `max` what waited merges into full batches.
 */
import t, { type Test } from 'tap';
import { Ledger } from '../../src/exchange/ledger.js';
import { Outbox } from '../../src/exchange/outbox.js';
import { Publisher } from '../../src/exchange/publisher.js';
import { newStats, replay } from '../../src/exchange/replay.js';
import { Translator } from '../../src/exchange/translate.js';
import { tempDir } from '../helpers/temp-dir.js';
import { FakeClock, FakeSocket } from './fake-ingest.js';
import { tennis, writeRecording } from './fixtures.js';

type Obj = Record<string, unknown>;

/** The `ts` of each batch's odds items, batches without any left out. */
const oddsTimes = (socket: FakeSocket) =>
  socket.sent.map((s) => (JSON.parse(s) as { data?: Obj[] }).data ?? []).map((d) => d.filter((i) => i.kind === 'odds').map((i) => i.ts)).filter((ts) => ts.length);

/** Turns of the event loop until `done`, acking each batch as it comes; fails after `turns`. */
async function ackUntil(socket: FakeSocket, clock: FakeClock, done: Promise<void>, turns = 2000): Promise<void> {
  let over = false;
  void done.then(() => (over = true));
  for (let acked = 0, i = 0; !over; i++) {
    if (i === turns) throw new Error(`the replay did not end in ${turns} turns (${socket.sent.length} batches sent, ${acked} acked)`);
    await new Promise((next) => setImmediate(next));
    // Late: every message is overdue once the first has gone, so only the service's pace holds the replay.
    clock.advance(60_000);
    for (; acked < socket.sent.length; acked++) socket.ack(acked);
  }
}

async function run(t: Test, speed: number | 'max') {
  const messages = tennis(6);
  const file = await writeRecording(await tempDir(t), 'tennis.json', messages);
  const socket = new FakeSocket();
  const clock = new FakeClock();
  // One batch in flight: a service slower than the pace, on any machine.
  const publisher = new Publisher(socket, { liveMs: 60_000, clock, window: 1 });
  const ledger = new Ledger();
  const translator = new Translator({ ledger });
  const problems: string[] = [];
  const outbox = new Outbox({ publisher, translator, ledger, problem: (p) => problems.push(p) });
  const stats = newStats();
  const done = replay({ files: [file], order: 'time', maxOpen: 8, speed, translator, outbox, stats, clock, problem: (p) => problems.push(p) });
  await ackUntil(socket, clock, done);
  await done;
  t.same(problems, []);
  t.equal(ledger.totals.published, messages.length, 'every image published');
  return { messages, times: oddsTimes(socket) };
}

t.test('at a speed N behind a slow service: each instant in a batch of its own, in order', async (t) => {
  const { messages, times } = await run(t, 2);
  t.same(times, messages.map((m) => [m.pt]), 'one batch per message, each holding its own image');
});

t.test('at max: what waited for the service goes together', async (t) => {
  const { messages, times } = await run(t, 'max');
  t.ok(times.length < messages.length, `${messages.length} images in ${times.length} batches`);
  t.same(times.flat(), messages.map((m) => m.pt), 'every image, in order');
});
