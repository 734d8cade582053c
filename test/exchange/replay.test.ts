import t from 'tap';
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
  await replay({ files: [file], speed: 8, translator: new Translator(), publisher, stats, problem: (p) => problems.push(p) });
  const took = performance.now() - started;
  t.ok(took >= span / 8 - 5, `${Math.round(took)} ms for ${span} ms of recording at 8 times`);
  t.same(stats, { messages: messages.length, images: messages.length, refused: 0, clock: messages.at(-1)!.pt });
  t.same(problems, []);
});
