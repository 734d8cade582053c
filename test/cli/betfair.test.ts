import t from 'tap';
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from '../../src/cli/betfair.js';
import { UsageError } from '../../src/cli/args.js';
import { APP_KEY, EsaServer, SESSION, TEST_CA_FILE, playScript, type EsaConnection } from '../exchange/esa-server.js';
import { DELTAS, IMAGE, MARKET_ID, RUNNERS, clkOf } from '../exchange/esa-script.js';
import { freePort } from '../helpers/net.js';
import { startTestService } from '../helpers/service.js';
import { eventually } from '../helpers/wait.js';
import { Client } from '../helpers/ws.js';
import WebSocket from 'ws';
import { CLOSE } from '../../src/errors.js';
import type { OddsMessage } from '../../src/odds/messages.js';
import { running, runTool } from './processes.js';
import { tempDir } from '../helpers/temp-dir.js';
import { Burst } from '../exchange/esa-burst.js';
import { findRoot } from '../k8s/root.js';

const CLI = new URL('../../src/cli/betfair.js', import.meta.url).pathname;
const SUMMARY = new RegExp('^\\d+ messages, (?<changes>\\d+) market changes, (?<markets>\\d+) markets, (?<sent>\\d+) images sent: (?<published>\\d+) published, '
  + '(?<refused>\\d+) refused by the service; (?<withheld>\\d+) withheld, (?<unapplied>\\d+) changes not applied, (?<problems>\\d+) problems, \\d+ batches, (?<heartbeats>\\d+) heartbeats, '
  + '(?<reconnects>\\d+) reconnects, \\d+ resubscriptions, (?<pauses>\\d+) pauses, peak memory (?<peak>\\d+) MiB, \\d+\\.\\d\\d s$', 'm');
const BASE = ['--app-key', APP_KEY, '--session', SESSION, '--markets', MARKET_ID];

t.test('arguments', async (t) => {
  t.test('the filter, the stream server and the service', async (t) => {
    t.same(parseArgs([...BASE, '--market-types', 'MATCH_ODDS', '--host', '127.0.0.1', '--port', '8443', '--heartbeat', '1000', '--conflate', '0', '--key', 'k']), {
      appKey: APP_KEY, session: SESSION, filter: { marketIds: [MARKET_ID], marketTypes: ['MATCH_ODDS'] },
      host: '127.0.0.1', port: 8443, ca: undefined, heartbeatMs: 1000, conflateMs: 0,
      url: 'ws://127.0.0.1:8080/ingest', key: 'k', catalogue: undefined, queueBytes: 8 * 1024 * 1024, refreshMs: 10_000,
    });
  });
  t.test('credentials from files and variables, so none shows in the process list', async (t) => {
    const dir = await tempDir(t);
    await writeFile(join(dir, 'app-key'), 'key-from-a-file\n');
    await writeFile(join(dir, 'session'), 'session-from-a-file\n');
    t.match(parseArgs(['--app-key-file', join(dir, 'app-key'), '--session-file', join(dir, 'session'), '--markets', MARKET_ID]), { appKey: 'key-from-a-file', session: 'session-from-a-file' });
    const env = { BETFAIR_APP_KEY: 'key-from-env', BETFAIR_SESSION_FILE: join(dir, 'session'), ODDS_INGEST_KEY: 'ok_publisher' };
    Object.assign(process.env, env);
    t.teardown(() => { for (const k of Object.keys(env)) delete process.env[k]; });
    t.match(parseArgs(['--markets', MARKET_ID]), { appKey: 'key-from-env', session: 'session-from-a-file', key: 'ok_publisher' });
    t.match(parseArgs(['--app-key', 'from-args', '--markets', MARKET_ID]), { appKey: 'from-args' }, 'an argument wins');
    t.throws(() => parseArgs(['--session-file', join(dir, 'missing'), '--markets', MARKET_ID]), /--session-file .*missing: ENOENT/);
  });
  t.test('the service from --url or URL, as http(s):// or ws(s)://, else at HOST and PORT; --host and --port stay the stream server\'s', async (t) => {
    t.match(parseArgs([...BASE, '--url', 'http://127.0.0.1:18431'], {}), { url: 'ws://127.0.0.1:18431/ingest', host: 'stream-api.betfair.com' });
    t.match(parseArgs(BASE, { URL: 'https://odds.example/' }), { url: 'wss://odds.example/ingest' });
    t.match(parseArgs(BASE, { HOST: '0.0.0.0', PORT: '18431' }), { url: 'ws://127.0.0.1:18431/ingest', port: 443 });
  });
  t.test('defaults: the exchange\'s host and port, a 5 s heartbeat', async (t) => {
    t.match(parseArgs(['--app-key', 'a', '--session', 's', '--event-types', '1,4,1']), { filter: { eventTypeIds: ['1', '4'] }, host: 'stream-api.betfair.com', port: 443, heartbeatMs: 5000, conflateMs: undefined });
  });
  const refused: [string[], RegExp][] = [
    [['--app-key', 'a', '--session', 's'], /give --markets or --event-types/],
    [['--session', 's', '--markets', MARKET_ID], /--app-key \(or --app-key-file, BETFAIR_APP_KEY, BETFAIR_APP_KEY_FILE\) is required/],
    [[...BASE, '--queue-bytes', '100'], /--queue-bytes must be a whole number from 65536/],
    [[...BASE, '--refresh', '10'], /--refresh must be a whole number from 1000 to 600000, got 10/],
    [[...BASE.slice(0, 4), '--markets', '1.2,abc'], /--markets takes market IDs like 1\.230000001, got "abc"/],
    [[...BASE, '--event-types', '0'], /--event-types takes positive integer IDs, got "0"/],
    [[...BASE, '--market-types', 'match odds'], /--market-types takes market type codes/],
    [[...BASE, '--heartbeat', '100'], /--heartbeat must be a whole number from 500 to 30000, got 100/],
    [[...BASE, '--conflate', '200000'], /--conflate must be a whole number from 0 to 120000/],
    [[...BASE, '--port', '0'], /--port must be a whole number from 1 to 65535/],
    [[...BASE, '--url', 'ftp://x'], /--url must be an http\(s\):\/\/ or ws\(s\):\/\/ address/],
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
  // No demo data: every market here is the adapter's own.
  const svc = await startTestService(t, { INGEST_LATE_MS: '86400000', DEMO_DATA: 'off' });
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
    const gone = await startTestService(t, { INGEST_LATE_MS: '86400000', DEMO_DATA: 'off' });
    let live: EsaConnection | undefined;
    const esa = await EsaServer.start(t, [{ play: (conn) => { live = conn; conn.send(IMAGE); conn.beat(500); } }]);
    const run = running(t, spawn(process.execPath, [CLI, ...BASE, ...to(esa).slice(0, -1), gone.url.replace(/^http/, 'ws') + '/ingest'], { stdio: ['ignore', 'pipe', 'pipe'] }));
    await eventually(async () => run.stderr, (s) => s.includes('subscribed'), 20_000);
    await gone.close();
    live!.send(DELTAS[0]);
    t.equal(await run.exited, 1, run.stderr);
    t.match(run.stderr, /betfair: stopped: the service's socket failed: connection closed: code \d+/);
  });

  t.test('end to end: a subscriber sees the exchange\'s book, through a dropped connection and a clk resume', async (t) => {
    const esa = await EsaServer.start(t, [{ play: playScript({ upTo: 3, then: 'drop' }) }, { play: playScript() }]);
    const sub = await Client.connect(svc.url);
    t.teardown(() => sub.close());
    t.equal((await sub.request({ op: 'subscribe', mids: [MARKET_ID] })).status, 1);
    const run = running(t, spawn(process.execPath, [CLI, ...BASE, ...to(esa)], { stdio: ['ignore', 'pipe', 'pipe'] }));
    // The last deltas set home's best back to 2.07 and away's to 2.08 (esa-script.ts).
    const best = (f: Awaited<ReturnType<typeof sub.next>>, rid: number) => (f.op === 'odds' ? f.r.find((r) => r.rid === rid)?.b[0] : undefined);
    const last = await sub.next((f) => f.op === 'odds' && f.mid === MARKET_ID && best(f, RUNNERS.home)?.[0] === 2.07 && best(f, RUNNERS.away)?.[0] === 2.08, 20_000);
    t.same(best(last, RUNNERS.home), [2.07, 107]);
    t.same(best(last, RUNNERS.draw), [2.06, 106]);
    t.equal((await esa.connection(2)).subscriptions[0].clk, clkOf(3), 'the CLI resumed with the clk of the last delta before the drop');
    run.child.kill('SIGINT');
    t.equal(await run.exited, 0, run.stderr);
    t.match(run.stderr, /connected to 127\.0\.0\.1:\d+ \(connection 002-100000\)\nbetfair: subscribed\n.*reconnecting in \d+ ms\n.*subscription resumed from the last clk\n/s);
    const m = SUMMARY.exec(run.stdout);
    t.ok(m, run.stdout);
    // The image and the deltas come in a few reads: their images may merge, never past the newest book.
    t.match(m?.groups, { changes: '9', markets: '1', refused: '0', withheld: '0', unapplied: '0', problems: '0', reconnects: '1' });
    t.equal(m?.groups?.published, m?.groups?.sent, 'every image sent was published');
    t.match(run.stdout, /^by market \(0 with anything not published\):\n  1\.230000001: [1-9]\d* published\n$/m);
  });
  t.test('started through npm, SIGTERM reaches it: it sends what it holds, prints its summary and exits 0', async (t) => {
    const esa = await EsaServer.start(t, [{ play: playScript() }]);
    // As a supervisor runs it: through npm, credentials in variables, nothing secret on the command line.
    const run = running(t, spawn('npm', ['run', '--silent', 'betfair', '--', '--markets', MARKET_ID, ...to(esa)], {
      cwd: findRoot(), env: { ...process.env, BETFAIR_APP_KEY: APP_KEY, BETFAIR_SESSION: SESSION }, stdio: ['ignore', 'pipe', 'pipe'],
    }));
    await eventually(async () => run.stderr, (s) => s.includes('subscribed'), 30_000);
    run.child.kill('SIGTERM');
    const code = await run.exited;
    t.match(run.stderr, /betfair: SIGTERM: sending what is held, then stopping\n/);
    // The signal may come before or after the image was read: the summary says which, and that it shut down in order.
    t.match(SUMMARY.exec(run.stdout)?.groups, { refused: '0', problems: '0' }, 'the summary: the adapter shut down in order');
    t.equal(code, 0, run.stderr);
  });

  t.test('a burst of 100,000 changes a second for 3 s: every book ends on the exchange\'s, memory stays bounded, and the exchange sees the adapter stop reading', async (t) => {
    const burst = new Burst({ markets: 200, rate: 100_000, seconds: 3 });
    const esa = await EsaServer.start(t, [{ play: (conn) => burst.play(conn) }]);
    // A small queue, so it fills whenever the service is behind and the pause is seen.
    const run = running(t, spawn(process.execPath, [CLI, ...BASE.slice(0, 4), '--event-types', '1', ...to(esa), '--queue-bytes', '65536'], { stdio: ['ignore', 'pipe', 'pipe'] }));
    await burst.done;
    t.ok(burst.stats.made >= 240_000, `${burst.stats.made} changes made, ${burst.stats.rate} a second`);
    t.ok(burst.stats.backedUp > 0, `the adapter stopped reading: the stream backed up ${burst.stats.backedUp} times and conflated ${burst.stats.conflated} market changes`);
    // After the burst the service's book of every market, and a subscriber's newest frame of twenty
    // of them, come to equal the exchange's books; then a new subscriber of the sport gets each as its
    // image. The live subscriber holds twenty, not all 200: decoding every frame of the backlog for
    // all of them cost this process about as much as the service's ingest of it.
    // This process also plays the exchange and runs the service: on a busy machine it may read too
    // slowly and be closed as a slow consumer (4008), and then it does what a client does, subscribes
    // again, which starts it on the newest images. Any other close fails.
    const want = new Map(burst.mids.map((mid) => [mid, JSON.stringify(burst.expected(mid))]));
    const held = (mid: string) => JSON.stringify(svc.book.get(mid)?.image.runners.map((r) => ({ rid: r.runnerId, b: r.back, l: r.lay })));
    const seen = (f: OddsMessage | undefined) => f && JSON.stringify(f.r.map((r) => ({ rid: r.rid, b: r.b, l: r.l })));
    const watched = burst.mids.slice(0, 20);
    const newest = new Map<string, OddsMessage>();
    const wrongHeld = () => burst.mids.filter((mid) => held(mid) !== want.get(mid));
    const wrongSeen = () => watched.filter((mid) => seen(newest.get(mid)) !== want.get(mid));
    let pending = burst.mids;
    const slowCloses: string[] = [];
    let otherClose = '';
    let sub: Client;
    let read = 0;
    const subscribe = async () => {
      sub = await Client.connect(svc.url);
      read = 0;
      const mine = sub;
      t.teardown(() => mine.close());
      const ack = await sub.request({ op: 'subscribe', mids: watched });
      t.equal(ack.status, 1, ack.message);
      void mine.closed.then(({ code, reason }) => {
        if (code === CLOSE.SLOW.code && slowCloses.length < 3) slowCloses.push(reason);
        else otherClose = `${code} ${reason}`;
      });
    };
    await subscribe();
    await eventually(async () => {
      if (sub.ws.readyState === WebSocket.CLOSED && !otherClose) await subscribe();
      for (; read < sub.frames.length; read++) {
        const f = sub.frames[read];
        if (f.op === 'odds') newest.set(f.mid, f);
      }
      // Only the markets not yet right are read again, until none is left: then every one, once more.
      pending = pending.filter((mid) => held(mid) !== want.get(mid));
      if (pending.length === 0) pending = wrongHeld();
      return pending.length + wrongSeen().length;
      // The adapter works through the backlog the exchange kept for it: on a slow machine beside seven
      // other test files that outlasted 60 s. It ends as soon as every book is the exchange's.
    }, (n) => n === 0 || otherClose !== '', 180_000, 200);
    const left = wrongHeld();
    const unseen = wrongSeen();
    t.equal(otherClose, '', `the subscriber was closed only as a slow consumer, at most three times (${slowCloses.length} times)`);
    t.same(left.slice(0, 1).map(held), left.slice(0, 1).map((mid) => want.get(mid)), 'the first market the service holds otherwise, if any');
    t.equal(left.length, 0, `every book ends on the exchange's (the service knows ${svc.model.size.markets} markets; ${left.length} differ; the adapter said: ${run.stderr.slice(-600)})`);
    t.same(unseen.slice(0, 1).map((mid) => seen(newest.get(mid))), unseen.slice(0, 1).map((mid) => want.get(mid)), 'the first market whose newest frame differs, if any');
    t.equal(unseen.length, 0, `the subscriber's newest frame of each of its ${watched.length} markets is the exchange's book (${newest.size} had a frame)`);
    const late = await Client.connect(svc.url);
    t.teardown(() => late.close());
    // A request lists at most 50 markets: the sport takes them all (the burst's are soccer).
    t.equal((await late.request({ op: 'subscribe', sis: [1] })).status, 1);
    // A subscription's images come in pieces, after its ack.
    const images = () => new Map(late.frames.filter((f): f is OddsMessage => f.op === 'odds').map((f) => [f.mid, seen(f)]));
    const notAsHeld = await eventually(async () => images(), (m) => m.size >= want.size, 30_000, 50)
      .then((m) => burst.mids.filter((mid) => m.get(mid) !== want.get(mid)));
    t.same(notAsHeld, [], 'a new subscriber of the sport gets every market\'s image as the exchange holds it');
    run.child.kill('SIGINT');
    t.equal(await run.exited, 0, run.stderr.slice(-2000));
    const summary = SUMMARY.exec(run.stdout)?.groups;
    t.ok(Number(summary?.pauses) > 0, `the adapter paused its reading ${summary?.pauses} times while its queue was full`);
    t.ok(Number(summary?.peak) < 400, `peak memory ${summary?.peak} MiB, under 400 MiB`);
    t.match(summary, { markets: '200', refused: '0', withheld: '0', unapplied: '0', problems: '0' });
  });
});
