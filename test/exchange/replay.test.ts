import t from 'tap';
import { Ledger } from '../../src/exchange/ledger.js';
import { Outbox } from '../../src/exchange/outbox.js';
import { Publisher } from '../../src/exchange/publisher.js';
import { newStats, replay } from '../../src/exchange/replay.js';
import { Translator } from '../../src/exchange/translate.js';
import { tempDir } from '../cli/processes.js';
import { startTestService } from '../helpers/service.js';
import { tennis, writeRecording } from './fixtures.js';

const svc = await startTestService(t, { DEMO_DATA: 'off' });
const url = svc.url.replace(/^http/, 'ws') + '/ingest';

t.test('at a speed N, the replay takes at least the recording\'s span divided by N', async (t) => {
  const messages = tennis(6);
  const span = (messages.at(-1)!.pt as number) - (messages[0].pt as number);
  const file = await writeRecording(await tempDir(t), 'tennis.json', messages);
  const publisher = await Publisher.connect({ url });
  t.teardown(() => publisher.close());
  const stats = newStats();
  const problems: string[] = [];
  const started = performance.now();
  const ledger = new Ledger();
  const translator = new Translator({ ledger });
  const outbox = new Outbox({ publisher, translator, ledger, problem: (p) => problems.push(p) });
  await replay({ files: [file], order: 'time', maxOpen: 8, speed: 8, translator, outbox, stats, problem: (p) => problems.push(p) });
  const took = performance.now() - started;
  t.ok(took >= span / 8 - 5, `${Math.round(took)} ms for ${span} ms of recording at 8 times`);
  t.same(stats, { messages: messages.length, before: 0, images: messages.length, problems: 0, clock: messages.at(-1)!.pt });
  t.equal(ledger.totals.published, messages.length, 'every image acked');
  t.same(problems, []);
});
