import t from 'tap';
import { CLOSE } from '../../src/errors.js';
import { startTestService } from '../helpers/service.js';
import { Client } from '../helpers/ws.js';
import { FakeClock } from '../helpers/clock.js';

/**
 * A pong that answers none of the server's probes is a message the socket pays for, as any other:
 * one sent at full speed is refused for rate and, not backing off, closed with 4029; a socket that
 * answers the server's pings (as every WebSocket does) is never refused for it. So is a ping of
 * the client's own: uWS answers each, and at full speed each cost the server a write and a read.
 * A flood paced so that one message passes each time the budget refills a token is no backing off
 * either (a hostile check kept a socket open at 2,000 messages a second so): only a second free of
 * refusals starts a socket's count afresh.
 */
const svc = await startTestService(t);

t.test('a socket flooding pongs of its own is closed for rate; one answering the server\'s pings is not', async (t) => {
  const flooder = await Client.connect(svc.url);
  const reader = await Client.connect(svc.url);
  t.teardown(() => { flooder.close(); reader.close(); });
  t.equal((await reader.request({ op: 'subscribe', mids: ['1.200001001'] })).status, 1);
  for (let i = 0; i < 2000; i++) flooder.ws.pong(Buffer.from([i & 0xff, 1, 2, 3]));
  t.same(await flooder.closed, CLOSE.RATE, 'closed as a socket that goes on sending while refused');
  t.equal((await reader.request({ op: 'ping' })).message, 'pong', 'the other socket is served');
});

t.test('a socket flooding pings is closed for rate; one pinging now and then is answered', async (t) => {
  const flooder = await Client.connect(svc.url);
  const calm = await Client.connect(svc.url);
  t.teardown(() => { flooder.close(); calm.close(); });
  const answered = new Promise<void>((ok) => calm.ws.once('pong', () => ok()));
  calm.ws.ping(Buffer.from('keep-alive'));
  await answered;
  for (let i = 0; i < 2000; i++) flooder.ws.ping(Buffer.from([i & 0xff]));
  t.same(await flooder.closed, CLOSE.RATE, 'closed as a socket that goes on sending while refused');
  t.equal((await calm.request({ op: 'ping' })).message, 'pong', 'the calm socket is served');
});

t.test('a flood paced so one message passes each time the budget refills a token is still closed for rate; a socket that backs off a second starts afresh', async (t) => {
  const clock = new FakeClock(Date.now());
  const paced = await startTestService(t, {}, undefined, { clock });
  /** Sends `n` requests at once and waits for the last one's ack: how many were let through. */
  const burst = async (c: Client, n: number) => {
    const ids = Array.from({ length: n }, () => c.send({ op: 'ping' }));
    await c.next((f) => f.op === 'ack' && f.id === ids.at(-1));
    return c.frames.filter((f) => f.op === 'ack' && ids.includes(f.id) && f.status === 1).length;
  };
  const calm = await Client.connect(paced.url);
  t.teardown(() => calm.close());
  t.equal(await burst(calm, 80), 50, 'a second\'s budget let through, 30 refused');
  clock.advance(1000);
  t.equal(await burst(calm, 80), 50, 'backed off a second: the refusals before count no more, and it stays open');
  const flooder = await Client.connect(paced.url);
  t.teardown(() => flooder.close());
  let through = await burst(flooder, 60);
  for (let i = 0; i < 60 && flooder.ws.readyState === flooder.ws.OPEN; i++) {
    clock.advance(20);
    through += await burst(flooder, 3).catch(() => 0);
  }
  t.same(await flooder.closed, CLOSE.RATE, `closed for rate, though ${through} messages were let through as the budget refilled`);
  t.ok(through > 50, 'some were let through between the refusals');
  t.equal((await calm.request({ op: 'ping' })).status, 1, 'the calm socket is served');
});
