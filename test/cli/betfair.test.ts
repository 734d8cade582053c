import t from 'tap';
import { spawn } from 'node:child_process';
import { parseArgs } from '../../src/cli/betfair.js';
import { UsageError } from '../../src/cli/args.js';
import { APP_KEY, EsaServer, SESSION, TEST_CA_FILE, playScript, type EsaConnection } from '../exchange/esa-server.js';
import { DELTAS, IMAGE, MARKET_ID, RUNNERS, clkOf } from '../exchange/esa-script.js';
import { freePort } from '../helpers/net.js';
import { startTestService } from '../helpers/service.js';
import { eventually } from '../helpers/wait.js';
import { Client } from '../helpers/ws.js';
import { runTool } from './processes.js';

const CLI = new URL('../../src/cli/betfair.js', import.meta.url).pathname;
const BASE = ['--app-key', APP_KEY, '--session', SESSION, '--markets', MARKET_ID];

t.test('arguments', async (t) => {
  t.test('the filter, the stream server and the service', async (t) => {
    t.same(parseArgs([...BASE, '--market-types', 'MATCH_ODDS', '--host', '127.0.0.1', '--port', '8443', '--heartbeat', '1000', '--conflate', '0', '--key', 'k']), {
      appKey: APP_KEY, session: SESSION, filter: { marketIds: [MARKET_ID], marketTypes: ['MATCH_ODDS'] },
      host: '127.0.0.1', port: 8443, ca: undefined, heartbeatMs: 1000, conflateMs: 0,
      url: 'ws://127.0.0.1:8080/ingest', key: 'k', catalogue: undefined,
    });
  });
  t.test('defaults: the exchange\'s host and port, a 5 s heartbeat', async (t) => {
    t.match(parseArgs(['--app-key', 'a', '--session', 's', '--event-types', '1,4,1']), { filter: { eventTypeIds: ['1', '4'] }, host: 'stream-api.betfair.com', port: 443, heartbeatMs: 5000, conflateMs: undefined });
  });
  const refused: [string[], RegExp][] = [
    [['--app-key', 'a', '--session', 's'], /give --markets or --event-types/],
    [['--session', 's', '--markets', MARKET_ID], /--app-key is required/],
    [[...BASE.slice(0, 4), '--markets', '1.2,abc'], /--markets takes market IDs like 1\.230000001, got "abc"/],
    [[...BASE, '--event-types', '0'], /--event-types takes positive integer IDs, got "0"/],
    [[...BASE, '--market-types', 'match odds'], /--market-types takes market type codes/],
    [[...BASE, '--heartbeat', '100'], /--heartbeat must be a whole number from 500 to 30000, got 100/],
    [[...BASE, '--conflate', '200000'], /--conflate must be a whole number from 0 to 120000/],
    [[...BASE, '--port', '0'], /--port must be a whole number from 1 to 65535/],
    [[...BASE, '--url', 'http://x'], /--url must be a ws:\/\/ or wss:\/\/ URL/],
    [[...BASE, '--markets-typo', 'x'], /Unknown option '--markets-typo'/],
  ];
  for (const [argv, message] of refused) {
    try {
      parseArgs(argv);
      t.fail(`accepted ${argv.join(' ')}`);
    } catch (err) {
      t.ok(err instanceof UsageError, argv.join(' '));
      t.match((err as Error).message, message);
    }
  }
});

t.test('bad usage exits 2 with the usage', async (t) => {
  const r = await runTool(CLI, ['--app-key', 'a', '--session', 's'], {});
  t.equal(r.code, 2);
  t.match(r.stderr, /^betfair: give --markets or --event-types.*\nusage: npm run betfair/s);
});

t.test('against the local stream server and the service', async (t) => {
  const svc = await startTestService(t);
  const ingest = svc.url.replace(/^http/, 'ws') + '/ingest';
  const to = (esa: EsaServer) => ['--host', '127.0.0.1', '--port', String(esa.port), '--ca', TEST_CA_FILE, '--heartbeat', '500', '--url', ingest];

  t.test('a refused session exits 1 with the exchange\'s code and words', async (t) => {
    const esa = await EsaServer.start(t, [{ play: playScript() }]);
    const r = await runTool(CLI, ['--app-key', APP_KEY, '--session', 'expired', '--markets', MARKET_ID, ...to(esa)], {});
    t.equal(r.code, 1, r.stderr);
    t.match(r.stderr, /betfair: stopped: the exchange refused the authentication: INVALID_SESSION_INFORMATION: Session token is invalid\n/);
    t.equal(esa.connections.length, 1, 'no retry');
  });

  t.test('a stream server that cannot be reached exits 1 and says so', async (t) => {
    const port = await freePort();
    const r = await runTool(CLI, [...BASE, '--host', '127.0.0.1', '--port', String(port), '--url', ingest], {});
    t.equal(r.code, 1);
    t.match(r.stderr, new RegExp(`betfair: cannot use the stream at 127\\.0\\.0\\.1:${port}: connection to 127\\.0\\.0\\.1:${port} failed: ECONNREFUSED`));
  });

  t.test('a service that goes away stops the CLI with exit 1 at the next change', async (t) => {
    const gone = await startTestService(t);
    let live: EsaConnection | undefined;
    const esa = await EsaServer.start(t, [{ play: (conn) => { live = conn; conn.send(IMAGE); conn.beat(500); } }]);
    const child = spawn(process.execPath, [CLI, ...BASE, ...to(esa).slice(0, -1), gone.url.replace(/^http/, 'ws') + '/ingest'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const exited = new Promise<number | null>((ok) => child.on('close', (code) => ok(code)));
    t.teardown(() => child.kill('SIGKILL'));
    await eventually(async () => stderr, (s) => s.includes('subscribed'), 20_000);
    await gone.close();
    live!.send(DELTAS[0]);
    t.equal(await exited, 1, stderr);
    t.match(stderr, /betfair: stopped: connection closed: code \d+/);
  });

  t.test('end to end: a subscriber sees the exchange\'s book, through a dropped connection and a clk resume', async (t) => {
    const esa = await EsaServer.start(t, [{ play: playScript({ upTo: 3, then: 'drop' }) }, { play: playScript() }]);
    const sub = await Client.connect(svc.url);
    t.teardown(() => sub.close());
    t.equal((await sub.request({ op: 'subscribe', mids: [MARKET_ID] })).status, 1);
    const child = spawn(process.execPath, [CLI, ...BASE, ...to(esa)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const exited = new Promise<number | null>((ok) => child.on('close', (code) => ok(code)));
    t.teardown(() => child.kill('SIGKILL'));
    // The last deltas set home's best back to 2.07 and away's to 2.08 (esa-script.ts).
    const best = (f: Awaited<ReturnType<typeof sub.next>>, rid: number) => (f.op === 'odds' ? f.r.find((r) => r.rid === rid)?.b[0] : undefined);
    const last = await sub.next((f) => f.op === 'odds' && f.mid === MARKET_ID && best(f, RUNNERS.home)?.[0] === 2.07 && best(f, RUNNERS.away)?.[0] === 2.08, 20_000);
    t.same(best(last, RUNNERS.home), [2.07, 107]);
    t.same(best(last, RUNNERS.draw), [2.06, 106]);
    t.equal((await esa.connection(2)).subscriptions[0].clk, clkOf(3), 'the CLI resumed with the clk of the last delta before the drop');
    child.kill('SIGINT');
    t.equal(await exited, 0, stderr);
    t.match(stderr, /connected to 127\.0\.0\.1:\d+ \(connection 002-100000\)\nbetfair: subscribed\n.*reconnecting in \d+ ms\n.*subscription resumed from the last clk\n/s);
    t.match(stdout, /^9 changes, 1 markets, 9 images, 0 refused, \d+ batches, 1 reconnects\n$/);
  });
});
