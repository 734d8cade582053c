import t from 'tap';
import { createServer } from 'node:net';
import { bindRefusal, freePort, outgoingPortsFrom } from '../../src/lib/free-port.js';

t.test('a port is picked below the range the kernel gives outgoing connections, where none of them can take it first', async (t) => {
  const tried: number[] = [];
  const canBind = async (port: number) => (tried.push(port), port);
  t.equal(await freePort(() => 0, 32_768, canBind), 20_000);
  t.equal(await freePort(() => 0.999999, 32_768, canBind), 32_767, 'never into the range');
  t.same(tried, [20_000, 32_767]);
});

t.test('a taken port is passed over; with no room below the range, the kernel picks', async (t) => {
  const taken = new Set([20_000, 26_384]);
  const picks = [0, 0.5, 0.25];
  const tried: number[] = [];
  const canBind = async (port: number) => (tried.push(port), taken.has(port) ? undefined : port || 40_001);
  t.equal(await freePort(() => picks.shift()!, 32_768, canBind), 23_192);
  t.same(tried, [20_000, 26_384, 23_192]);
  tried.length = 0;
  t.equal(await freePort(() => 0.5, 1024, canBind), 40_001, 'a range from 1024: the kernel\'s own pick');
  t.same(tried, [0]);
  await t.rejects(freePort(() => 0.5, 1024, async () => undefined), /no loopback port could be bound/);
});

t.test('the range is read from the kernel, its default where it cannot be', async (t) => {
  const dir = t.testdir({ range: '40000\t60999\n', junk: 'x' });
  t.equal(outgoingPortsFrom(`${dir}/range`), 40_000);
  t.equal(outgoingPortsFrom(`${dir}/junk`), 32_768);
  t.equal(outgoingPortsFrom(`${dir}/missing`), 32_768);
  const port = await freePort();
  const from = outgoingPortsFrom();
  t.ok(from > 20_100 ? port >= 20_000 && port < from : port > 0, `a real pick on this machine: ${port}, outgoing connections from ${from}`);
});

t.test('why a start could not take its port, asked before anything is made (npm start, main.ts): taken, or no such address here', async (t) => {
  const holder = createServer();
  await new Promise<void>((ok) => holder.listen(0, '127.0.0.1', ok));
  t.teardown(() => holder.close());
  const port = (holder.address() as { port: number }).port;
  t.equal(await bindRefusal('127.0.0.1', port), 'EADDRINUSE', 'a port another server holds');
  t.equal(await bindRefusal('192.0.2.1', port), 'EADDRNOTAVAIL', 'an address this machine does not have (TEST-NET-1)');
  await new Promise<void>((ok) => holder.close(() => ok()));
  t.equal(await bindRefusal('127.0.0.1', port), undefined, 'free once it is let go, and the try leaves it free');
  t.equal(await bindRefusal('127.0.0.1', port), undefined);
});
