import t from 'tap';
import { createKey } from '../../src/auth/keys.js';
import { silentPort } from '../helpers/net.js';
import { HANDSHAKE_TIMEOUT_MS, Publisher, PublishError } from '../../src/exchange/publisher.js';
import { http, keyLive, startTestService } from '../helpers/service.js';
import { eventually } from '../helpers/wait.js';

const svc = await startTestService(t, { AUTH: 'on', DEMO_DATA: 'off' });
const url = svc.url.replace(/^http/, 'ws') + '/ingest';
const reader = (await createKey(svc.pool, 'reader', 'subscriber')).token;
const feeder = (await createKey(svc.pool, 'feeder', 'publisher')).token;
// Keys made straight in Postgres reach the service by NOTIFY: a busy CI machine once refused the
// second one 401 before it arrived.
await keyLive(svc.url, reader);
await keyLive(svc.url, feeder);
const sport = (si: number) => ({ kind: 'sport' as const, si, na: `Sport ${si}`, a: true });

t.test('the key goes in the x-api-key header; a missing or wrong-role key is refused with the service\'s message', async (t) => {
  await t.rejects(Publisher.connect({ url }), new PublishError(`cannot connect to ${url}: 401 an API key is required: send it in the x-api-key header`));
  await t.rejects(Publisher.connect({ url, key: reader }), { message: /^cannot connect to .*: 403 .*needs publisher/ });
  const publisher = await Publisher.connect({ url, key: feeder });
  t.match(await publisher.send([sport(901)]), { status: 1, message: 'Ingested 1 item', refused: [] });
  await publisher.close();
});

t.test('a port whose program accepts and never answers the handshake: refused after the handshake timeout', async (t) => {
  const at = `ws://127.0.0.1:${await silentPort(t)}/ingest`;
  await t.rejects(Publisher.connect({ url: at }), new PublishError(`cannot connect to ${at}: Opening handshake has timed out`), `given up after ${HANDSHAKE_TIMEOUT_MS} ms`);
});

t.test('batches pipelined within the window, acked in order; a refused batch resolves with the refusal and the next ones go on', async (t) => {
  const publisher = await Publisher.connect({ url, key: feeder, window: 2, liveMs: 5000 });
  const sent = [publisher.send([sport(902)]), publisher.send([sport(903), sport(904)])];
  t.equal(publisher.inFlight, 2);
  await publisher.room();
  t.ok(publisher.inFlight < 2, 'room() waited for an ack');
  t.same((await Promise.all(sent)).map((a) => a.message), ['Ingested 1 item', 'Ingested 2 items']);
  const good = publisher.send([sport(905)]);
  const bad = publisher.send([{ kind: 'sport', si: -1 }]);
  const after = publisher.send([sport(906)]);
  t.match(await good, { status: 1, message: 'Ingested 1 item' });
  t.match(await bad, { status: 0, message: 'item 0 (sport -1): si must be a positive integer' }, 'refused whole: reference data is all or nothing');
  t.match(await after, { status: 1, message: 'Ingested 1 item' }, 'the publisher goes on');
  await publisher.flush();
  await publisher.close();
  await t.rejects(publisher.send([sport(907)]), new PublishError('connection closed: code 1000 "publisher done"'), 'a closed publisher sends nothing');
  // The read model follows commits through NOTIFY: read until the last acked sport is there.
  const sports = await eventually(() => http<{ si: number }[]>(svc.url, '/api/v1/sports', { headers: { 'x-api-key': reader } }), (r) => r.body.some((s) => s.si === 906));
  t.same(sports.body.map((s) => s.si), [901, 902, 903, 904, 905, 906]);
});
