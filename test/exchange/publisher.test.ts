import t from 'tap';
import { createKey } from '../../src/auth/keys.js';
import { Publisher, PublishError } from '../../src/exchange/publisher.js';
import { http, startTestService } from '../helpers/service.js';
import { eventually } from '../helpers/wait.js';

const svc = await startTestService(t, { AUTH: 'on', DEMO_DATA: 'off' });
const url = svc.url.replace(/^http/, 'ws') + '/ingest';
const reader = (await createKey(svc.pool, 'reader', 'subscriber')).token;
const feeder = (await createKey(svc.pool, 'feeder', 'publisher')).token;
const sport = (si: number) => ({ kind: 'sport' as const, si, na: `Sport ${si}`, a: true });

t.test('the key goes in the x-api-key header; a missing or wrong-role key is refused with the service\'s message', async (t) => {
  await t.rejects(Publisher.connect({ url }), new PublishError(`cannot connect to ${url}: 401 an API key is required: send it in the x-api-key header`));
  await t.rejects(Publisher.connect({ url, key: reader }), { message: /^cannot connect to .*: 403 .*needs publisher/ });
  const publisher = await Publisher.connect({ url, key: feeder });
  t.equal(await publisher.send([sport(901)]), 'Ingested 1 item');
  await publisher.close();
});

t.test('batches pipelined within the window, acked in order; the first refusal fails it and every later batch', async (t) => {
  const publisher = await Publisher.connect({ url, key: feeder, window: 2 });
  const sent = [publisher.send([sport(902)]), publisher.send([sport(903), sport(904)])];
  t.equal(publisher.inFlight, 2);
  await publisher.room();
  t.ok(publisher.inFlight < 2, 'room() waited for an ack');
  t.same(await Promise.all(sent), ['Ingested 1 item', 'Ingested 2 items']);
  const good = publisher.send([sport(905)]);
  const bad = publisher.send([{ kind: 'sport', si: -1 }]);
  const after = publisher.send([sport(906)]);
  t.equal(await good, 'Ingested 1 item');
  await t.rejects(bad, { message: /^batch 4 refused: item 0 \(sport -1\): si must be a positive integer$/ });
  await t.rejects(after, { message: /^batch 4 refused/ });
  await t.rejects(publisher.flush(), { message: /^batch 4 refused/ });
  await t.rejects(publisher.room(), { message: /^batch 4 refused/ });
  await t.rejects(publisher.send([sport(907)]), { message: /^batch 4 refused/ }, 'nothing more is sent');
  await publisher.close();
  // The read model follows commits through NOTIFY: read until the last acked sport is there.
  const sports = await eventually(() => http<{ si: number }[]>(svc.url, '/api/v1/sports', { headers: { 'x-api-key': reader } }), (r) => r.body.some((s) => s.si === 905));
  // 906 went out before the refusal came back, so the service may or may not have applied it; 907 never went.
  t.same(sports.body.map((s) => s.si).filter((si) => si !== 906), [901, 902, 903, 904, 905]);
});
