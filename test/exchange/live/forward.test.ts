import t, { type Test } from 'tap';
import { WebSocketServer } from 'ws';
import { Forwarder } from '../../../src/exchange/live/forward.js';
import { Publisher } from '../../../src/exchange/publisher.js';
import type { MarketChangeMessage } from '../../../src/exchange/stream.js';
import { Translator } from '../../../src/exchange/translate.js';
import { eventually } from '../../helpers/wait.js';
import { DELTAS, IMAGE } from '../esa-script.js';

/** An /ingest socket that takes batches and acks them only when told: a service that stalls. */
async function stalledService(t: Test) {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise((ok) => wss.once('listening', ok));
  const received: unknown[] = [];
  wss.on('connection', (ws) => ws.on('message', (data) => received.push(JSON.parse(String(data)))));
  t.teardown(() => new Promise((ok) => { for (const c of wss.clients) c.terminate(); wss.close(ok); }));
  return { url: `ws://127.0.0.1:${(wss.address() as { port: number }).port}/ingest`, received };
}

const change = (m: object) => m as unknown as MarketChangeMessage;

t.test('batches wait for room in order; a service too far behind stops the forwarder with a clear reason', async (t) => {
  const svc = await stalledService(t);
  const publisher = await Publisher.connect({ url: svc.url, window: 1 });
  t.teardown(() => publisher.close());
  const problems: string[] = [];
  const forwarder = new Forwarder(new Translator(), publisher, (p) => problems.push(p), 2);
  let failure: Error | undefined;
  void forwarder.failed.then((err) => (failure = err));
  forwarder.push(change(IMAGE), 'image');
  await eventually(async () => svc.received.length, (n) => n === 1);
  t.equal(svc.received.length, 1, 'the image went out: the window holds one batch');
  forwarder.push(change({ ...IMAGE, ct: 'HEARTBEAT', mc: undefined }), 'heartbeat');
  forwarder.push(change(DELTAS[0]), 'delta 1');
  forwarder.push(change(DELTAS[1]), 'delta 2');
  await new Promise((ok) => setImmediate(ok));
  t.equal(failure, undefined, 'two batches may wait');
  forwarder.push(change(DELTAS[2]), 'delta 3');
  const err = await forwarder.failed;
  t.equal(err.message, 'the service is not keeping up: 2 batches wait to be sent');
  t.equal(svc.received.length, 1, 'nothing more was sent past the window');
  t.same(problems, []);
  await forwarder.flush().then(() => t.fail('flush resolved after a failure'), (e: Error) => t.equal(e, err));
});
