/**
 * The terms of a bet through the live adapter (dist/src/cli/betfair.js, as `npm run betfair`
 * runs it) in its own process, between the local exchange protocol server and the real service:
 * the betting day of terms-day.ts played as the exchange streams it (a subscription image, then
 * changes, each with its clk, at the exchange's pace: each once the last was published), read by
 * a JSON and a protobuf subscriber, each of which holds at each definition exactly its terms, and
 * each settlement as the exchange settled it.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { running } from '../../cli/processes.js';
import { startTestService } from '../../helpers/service.js';
import { Client } from '../../helpers/ws.js';
import { APP_KEY, EsaServer, SESSION, TEST_CA_FILE } from '../esa-server.js';
import { clkOf, INITIAL_CLK } from '../esa-script.js';
import { DAY_EVENTS, DAY_MARKETS, bettingDay, heldAsTheExchangeSaid } from '../terms-day.js';

const CLI = new URL('../../../src/cli/betfair.js', import.meta.url).pathname;

/** The day as the stream sends it to a subscription: the first message its image, each with the subscription's id and a clk. */
const streamed = bettingDay().map((m, i): Record<string, any> => ({ ...m, id: 2, clk: clkOf(i), ...(i === 0 ? { ct: 'SUB_IMAGE', initialClk: INITIAL_CLK, heartbeatMs: 500 } : {}) }));

t.test('the live adapter: every subscriber holds each definition\'s terms in turn, and each settlement, JSON and protobuf', async (t) => {
  const svc = await startTestService(t, { DEMO_DATA: 'off' });
  const subs = await Promise.all((['json', 'proto'] as const).map((format) => Client.connect(svc.url, { format })));
  t.teardown(() => subs.forEach((s) => s.close()));
  for (const s of subs) t.equal((await s.request({ op: 'subscribe', eids: DAY_EVENTS })).status, 1);
  const esa = await EsaServer.start(t, [{ play: (conn) => conn.send(streamed[0]) }]);
  const run = running(t, spawn(process.execPath, [
    CLI, '--app-key', APP_KEY, '--session', SESSION, '--markets', DAY_MARKETS.join(','), '--host', '127.0.0.1', '--port', String(esa.port),
    '--ca', TEST_CA_FILE, '--heartbeat', '500', '--url', `${svc.url.replace(/^http/, 'ws')}/ingest`,
  ], { stdio: ['ignore', 'pipe', 'pipe'] }));
  // At the exchange's pace, not in one burst: each change once the service has published the last
  // (a burst would be conflated, as the adapter does when behind, and intermediate terms skipped).
  const conn = await esa.connection(1);
  for (const msg of streamed) {
    if (msg !== streamed[0]) conn.send(msg);
    for (const mc of msg.mc) await subs[0].next((f) => f.op === 'odds' && f.mid === mc.id && f.ts === msg.pt, 10_000);
  }
  for (const s of subs) await heldAsTheExchangeSaid(t, s);
  run.child.kill('SIGINT');
  t.equal(await run.exited, 0, run.stderr);
});
