import t from 'tap';
import { CLOSE } from '../../src/errors.js';
import { startTestService } from '../helpers/service.js';
import { Client } from '../helpers/ws.js';

/**
 * A pong that answers none of the server's probes is a message the socket pays for, as any other:
 * one sent at full speed is refused for rate and, not backing off, closed with 4029; a socket that
 * answers the server's pings (as every WebSocket does) is never refused for it. So is a ping of
 * the client's own: uWS answers each, and at full speed each cost the server a write and a read.
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
