import t from 'tap';
import { freePort, silentPort } from '../helpers/net.js';
import { spawn } from 'node:child_process';
import { WebSocketServer } from 'ws';
import { formatFrame, formatFreshness, parseArgs, subscriptionOf } from '../../src/cli/watch.js';
import type { OddsMessage } from '../../src/odds/messages.js';
import { http, keyLive, startTestService } from '../helpers/service.js';
import { createKey } from '../../src/auth/keys.js';
import { HANDSHAKE_TIMEOUT_MS } from '../../src/exchange/publisher.js';
import { UsageError } from '../../src/cli/args.js';
import { waitFor } from '../helpers/wait.js';

const CLI = new URL('../../src/cli/watch.js', import.meta.url).pathname;
const MID = '1.200001001';
const ODDS_LINE = new RegExp(`^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} ${MID.replace('.', '\\.')} seq=\\d+ (OPEN|SUSPENDED|BALL_RUNNING|CLOSED)\\b.*back`, 'm');

interface Run { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }

/** Long enough for a CLI to start and see its first frames on a loaded machine; only a broken one takes it. */
const BOUND_MS = 60_000;

/**
 * Runs the compiled CLI. With `until`, sends SIGINT once stdout (or, with `on: 'stderr'`, stderr)
 * matches it, as a user watching the feed would. A CLI that neither shows it nor exits within
 * BOUND_MS is killed and fails the test, saying what it was waiting for and what it printed.
 */
function run(args: string[], until?: RegExp, on: 'stdout' | 'stderr' = 'stdout', env: NodeJS.ProcessEnv = {}, signal: NodeJS.Signals = 'SIGINT'): Promise<Run> {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, PORT: undefined, HOST: undefined, URL: undefined, ...env } });
  let stdout = '';
  let stderr = '';
  let interrupted = false;
  let hung = false;
  const check = () => {
    if (until && !interrupted && until.test(on === 'stdout' ? stdout : stderr)) {
      interrupted = true;
      child.kill(signal);
    }
  };
  child.stdout.setEncoding('utf8').on('data', (s: string) => {
    stdout += s;
    check();
  });
  child.stderr.setEncoding('utf8').on('data', (s: string) => {
    stderr += s;
    check();
  });
  const guard = setTimeout(() => {
    hung = true;
    child.kill('SIGKILL');
  }, BOUND_MS);
  return new Promise((resolve, reject) => child.on('close', (code, signal) => {
    clearTimeout(guard);
    if (!hung) return resolve({ code, signal, stdout, stderr });
    const waited = interrupted ? `to exit after ${signal}` : until ? `for ${until} on ${on}` : 'to exit';
    reject(new Error(`watch ${args.join(' ')}: waited ${BOUND_MS / 1000} s ${waited}; stdout: ${stdout || '(none)'}; stderr: ${stderr || '(none)'}`));
  }));
}


t.test('against the live service', async (t) => {
  const svc = await startTestService(t, { SIMULATOR: 'on', SIMULATOR_INTERVAL_MS: '50' });
  const wsUrl = svc.url.replace(/^http/, 'ws') + '/ws';

  for (const format of ['json', 'proto']) {
    t.test(`${format}: prints the ack and odds lines, exits 0 on SIGINT`, async (t) => {
      const r = await run(['--url', wsUrl, '--format', format, MID], ODDS_LINE);
      t.equal(r.code, 0, `exit code (stderr: ${r.stderr})`);
      t.match(r.stdout, new RegExp(`^\\S+ ack id=1 ok Subscribed from market ${MID.replace('.', '\\.')}$`, 'm'));
      t.match(r.stdout, ODDS_LINE);
      t.match(r.stdout, new RegExp(`${MID.replace('.', '\\.')} seq=.*  delay \\d+ ms from source, \\d+ ms from publish$`, 'm'), 'each odds line says how late it arrived');
      t.equal(r.stderr, '');
    });
  }

  // In proto, decoded and printed raw: --raw of JSON frames is the --raw test's, and the cut to a depth is the service's.
  t.test('proto: --event and --depth without market IDs: the event\'s markets, one level a side', async (t) => {
    const r = await run(['--url', wsUrl, '--format', 'proto', '--event', '30000001', '--depth', '1', '--raw'], /"op":"odds"/);
    t.equal(r.code, 0, `exit code (stderr: ${r.stderr})`);
    const msgs = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { op: string; message?: string; r?: { b: unknown[]; l: unknown[] }[] });
    t.match(msgs[0], { op: 'ack', id: 1, status: 1, message: /^Subscribed from event 30000001 \(\d+ markets\)$/ });
    const odds = msgs.filter((m) => m.op === 'odds');
    t.ok(odds.length > 0 && odds.every((m) => m.r!.every((x) => x.b.length <= 1 && x.l.length <= 1)), 'odds frames cut to one level');
  });

  t.test('a market the service does not know: said on stderr, and watched in case it is created', async (t) => {
    const r = await run(['--url', wsUrl, MID, '1.999999999'], /knows no market/, 'stderr');
    t.equal(r.code, 0);
    t.match(r.stdout, /^\S+ ack id=1 ok Subscribed from market 1\.200001001,1\.999999999$/m);
    t.equal(r.stderr, 'watch: the service knows no market 1.999999999; watching in case it is created\n', 'only the unknown one named');
  });

  // Each form of the address, and which wins, is the default endpoint's test below: here, that the variables are read.
  t.test('without --url: the service at URL, or on this machine at HOST and PORT', async (t) => {
    for (const [args, env] of [[[], { PORT: new URL(svc.url).port, HOST: '0.0.0.0' }], [[], { URL: svc.url }]] as const) {
      const r = await run([...args, MID], ODDS_LINE, 'stdout', env);
      t.equal(r.code, 0, `${JSON.stringify(env)}: exit code (stderr: ${r.stderr})`);
      t.match(r.stdout, ODDS_LINE);
    }
  });

  t.test('--sport with --conflate: the ack names the sport', async (t) => {
    const r = await run(['--url', wsUrl, '--sport', '4', '--conflate', '100'], /ack id=1/);
    t.equal(r.code, 0);
    t.match(r.stdout, /^\S+ ack id=1 ok Subscribed from sport 4 \(\d+ markets\)$/m);
  });

  t.test('--raw prints one parseable JSON message per line; the deltas it subscribes to print as the whole images they lead to, as its --help says', async (t) => {
    const r = await run(['--url', wsUrl, '--raw', MID], /("op":"odds"[\s\S]*){4}/);
    t.equal(r.code, 0);
    const msgs = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { op: string; mid?: string; status?: number; r?: unknown[] });
    t.match(msgs[0], { op: 'ack', id: 1, status: 1 });
    t.ok(msgs.every((m) => typeof m.op === 'string'), 'every line has an op');
    const odds = msgs.filter((m) => m.op === 'odds' && m.mid === MID);
    t.ok(odds.length >= 4, 'odds messages for the market');
    t.same(msgs.filter((m) => m.op === 'delta'), [], 'no delta frame');
    t.same(odds.filter((m) => m.r?.length !== odds[0].r?.length), [], 'each image whole: every runner');
  });
});

t.test('with AUTH=on', async (t) => {
  const svc = await startTestService(t, { AUTH: 'on', SIMULATOR: 'on', SIMULATOR_INTERVAL_MS: '50' });
  const wsUrl = svc.url.replace(/^http/, 'ws') + '/ws';
  const { token } = await createKey(svc.pool, 'watcher', 'subscriber');
  await keyLive(svc.url, token);

  t.test('--key: the subscribe is acked and odds lines follow', async (t) => {
    const r = await run(['--url', wsUrl, '--key', token, MID], ODDS_LINE);
    t.equal(r.code, 0, `exit code (stderr: ${r.stderr})`);
    t.match(r.stdout, /^\S+ ack id=1 ok Subscribed from market/m);
    t.match(r.stdout, ODDS_LINE);
  });

  t.test('no key: the server\'s reason for refusing the handshake, exit 1', async (t) => {
    const r = await run(['--url', wsUrl, MID]);
    t.equal(r.code, 1);
    t.equal(r.stderr, `watch: cannot connect to ${wsUrl}: refused with 401: an API key is required: send it in the x-api-key header\n`);
    t.equal(r.stdout, '');
  });

  t.test('a key in the URL, with the market in its client\'s stored set too: each frame printed once', async (t) => {
    const stored = await http(svc.url, '/api/v1/subscribe', { method: 'POST', headers: { 'x-api-key': token, 'content-type': 'application/json' }, body: JSON.stringify({ data: [MID] }) });
    t.equal(stored.status, 200);
    // The socket is attached to the stored market at connect and sent its image; the subscribe sends it again.
    const r = await run(['--url', `${wsUrl}?key=${token}`, '--raw', MID], /("op":"odds"[\s\S]*){3}/);
    t.equal(r.code, 0, `exit code (stderr: ${r.stderr})`);
    const seqs = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { op: string; seq?: number }).filter((m) => m.op === 'odds').map((m) => m.seq);
    t.ok(seqs.length >= 3);
    t.same(seqs, [...new Set(seqs)], `no seq twice: ${seqs.join(',')}`);
  });

  t.test('every market asked for refused: the REFUSED line, then exit 2 without waiting', async (t) => {
    const r = await run(['--url', wsUrl, '--key', token, 'bad!id']);
    t.equal(r.signal, null, 'not killed');
    t.equal(r.code, 2);
    t.match(r.stdout, /^\S+ ack id=1 REFUSED mids\[0\] must be a market ID/m);
  });
});

t.test('no market IDs and no filter: usage and exit 2', async (t) => {
  const r = await run(['--format', 'json']);
  t.equal(r.code, 2);
  t.match(r.stderr, /at least one market ID, --event or --sport/);
  t.match(r.stderr, /^usage: npm run watch/m);
  t.equal(r.stdout, '');
});

t.test('--help (or -h): the usage on stdout, exit 0, nothing else checked', async (t) => {
  const r = await run(['--help']);
  t.equal(r.code, 0);
  t.match(r.stdout, /^usage: npm run watch -- /);
  t.match(r.stdout.replace(/\s+/g, ' '), '--raw print each message as one JSON line instead of a summary line; odds as the client holds them: it subscribes with deltas, and each arrives as the whole image it leads to ("op":"odds"), never as a "delta" frame', '--raw says what it prints of the deltas it subscribes to');
  t.equal(r.stderr, '');
  t.equal(parseArgs(['-h']), 'help', '-h the same');
  t.equal(parseArgs(['--help', '--format', 'xml']), 'help');
});

t.test('the default endpoint: --url or URL as the service\'s address or socket, else HOST and PORT, else 127.0.0.1:8080', async (t) => {
  const url = (env: NodeJS.ProcessEnv) => (parseArgs([MID], env) as { url: string }).url;
  t.equal(url({}), 'ws://127.0.0.1:8080/ws');
  t.equal(url({ PORT: '9001' }), 'ws://127.0.0.1:9001/ws');
  t.equal(url({ URL: 'http://odds.example:81', PORT: '9001' }), 'ws://odds.example:81/ws', 'URL wins');
  t.equal(url({ URL: 'https://odds.example/' }), 'wss://odds.example/ws');
  t.equal(url({ URL: 'ws://odds.example/feed/ws' }), 'ws://odds.example/feed/ws', 'a socket address as it is');
  t.equal((parseArgs(['--url', 'ws://other:1/ws', MID], { URL: 'http://odds.example' }) as { url: string }).url, 'ws://other:1/ws', '--url wins over both');
  t.equal((parseArgs(['--url', 'http://127.0.0.1:18431', MID], {}) as { url: string }).url, 'ws://127.0.0.1:18431/ws', '--url takes what URL takes: the address npm start prints');
  t.equal(url({ HOST: '127.0.0.2', PORT: '9001' }), 'ws://127.0.0.2:9001/ws', 'HOST as npm start reads it');
  t.equal(url({ HOST: '0.0.0.0' }), 'ws://127.0.0.1:8080/ws', 'every interface, dialled on loopback');
  t.throws(() => parseArgs(['--url', 'ftp://x', MID], {}), /--url must be an http\(s\):\/\/ or ws\(s\):\/\/ address, got ftp:\/\/x/);
  t.throws(() => parseArgs([MID], { URL: 'ftp://odds.example' }), /URL must be an http\(s\):\/\/ or ws\(s\):\/\/ address, got ftp:\/\/odds.example/);
  t.throws(() => parseArgs([MID], { URL: 'odds' }), /URL must be the service's address/);
});

t.test('an unknown option: a usage error naming it (exit 2, as the run without market IDs shows)', async (t) => {
  t.throws(() => parseArgs(['--bogus', MID]), new UsageError(''));
  t.throws(() => parseArgs(['--bogus', MID]), /--bogus/);
});

t.test('a bad --format, --hb, --event, --sport, --depth or --conflate is refused before connecting', async (t) => {
  t.throws(() => parseArgs(['--format', 'xml', MID]), /--format must be json or proto/);
  t.throws(() => parseArgs(['--hb', '100', MID]), /--hb must be/);
  t.throws(() => parseArgs(['--event', '0']), /--event takes positive integer IDs, got "0"/);
  t.throws(() => parseArgs(['--sport', '4,x']), /--sport takes positive integer IDs, got "x"/);
  t.throws(() => parseArgs(['--depth', '11', MID]), /--depth must be a whole number from 1 to 10, got 11/);
  t.throws(() => parseArgs(['--conflate', '50', MID]), /--conflate must be 0 or a whole number from 100 to 60000, got 50/);
  t.strictSame(parseArgs(['--hb', '500', 'a', 'b'], {}), {
    url: 'ws://127.0.0.1:8080/ws', key: undefined, format: 'json', hb: 500, raw: false, mids: ['a', 'b'], eids: [], sis: [], depth: undefined, conflate: undefined,
  });
});

t.test('--event and --sport repeat or take comma lists; market IDs are then optional; deltas are asked for', async (t) => {
  const opts = parseArgs(['--event', '30000001,30000002', '--event', '30000001', '--event', '30000003', '--sport', '4', '--depth', '2', '--conflate', '0']) as Exclude<ReturnType<typeof parseArgs>, 'help'>;
  t.same(opts.eids, [30000001, 30000002, 30000003], 'duplicates collapse');
  t.same(opts.sis, [4]);
  t.same(opts.mids, []);
  t.same(subscriptionOf(opts), { delta: true, eids: [30000001, 30000002, 30000003], sis: [4], depth: 2, conflate: 0 });
});

t.test('connection refused: message and exit 1', async (t) => {
  const port = await freePort();
  const r = await run(['--url', `ws://127.0.0.1:${port}/ws`, MID]);
  t.equal(r.code, 1);
  t.match(r.stderr, new RegExp(`cannot connect to ws://127\\.0\\.0\\.1:${port}/ws: .*ECONNREFUSED`));
});

t.test('a port whose program accepts and never answers the handshake: said after the handshake timeout, exit 1', async (t) => {
  const port = await silentPort(t);
  const r = await run(['--url', `ws://127.0.0.1:${port}/ws`, MID]);
  t.equal(r.code, 1, r.stderr);
  t.equal(r.stderr, `watch: cannot connect to ws://127.0.0.1:${port}/ws: Opening handshake has timed out\n`, `given up after ${HANDSHAKE_TIMEOUT_MS} ms`);
});

t.test('a server that hangs up: close code and reason, then a reconnect that asks again', async (t) => {
  // Hangs up as soon as the subscribe arrives, as a server enforcing a limit would.
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, handleProtocols: (p) => [...p][0] ?? false });
  t.teardown(() => new Promise((ok) => wss.close(ok)));
  const asked: string[] = [];
  wss.on('connection', (ws) => ws.on('message', (data) => {
    asked.push(data.toString());
    ws.close(4008, 'too slow');
  }));
  await new Promise((ok) => wss.once('listening', ok));
  const { port } = wss.address() as { port: number };
  const r = await run(['--url', `ws://127.0.0.1:${port}/ws`, MID], /(reconnecting in \d+ ms[\s\S]*){2}/, 'stderr');
  t.equal(r.code, 0, 'stopped by SIGINT, not by the hang-up');
  t.match(r.stderr, /^watch: connection closed unexpectedly: code 4008 reason "too slow"; reconnecting in \d+ ms$/m);
  t.ok(asked.length >= 2, 'it subscribed again on the new connection');
  t.match(JSON.parse(asked[1]), { op: 'subscribe', mids: [MID] });
});

t.test('SIGTERM and SIGHUP (timeout, a supervisor, a closed terminal) stop it as Ctrl-C does: its socket closed with 1000, exit 0', async (t) => {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, handleProtocols: (p) => [...p][0] ?? false });
  t.teardown(() => new Promise((ok) => wss.close(ok)));
  const closes: number[] = [];
  wss.on('connection', (ws) => {
    ws.on('message', () => ws.send(JSON.stringify({ op: 'ack', id: 1, status: 1, message: `Subscribed from market ${MID}` })));
    ws.on('close', (code) => closes.push(code));
  });
  await new Promise((ok) => wss.once('listening', ok));
  const { port } = wss.address() as { port: number };
  for (const signal of ['SIGTERM', 'SIGHUP'] as const) {
    const r = await run(['--url', `ws://127.0.0.1:${port}/ws`, MID], / ack id=1 ok /, 'stdout', {}, signal);
    t.same({ code: r.code, signal: r.signal }, { code: 0, signal: null }, `${signal}: exit 0 (stderr: ${r.stderr})`);
    await waitFor(() => closes.length > 0, `${signal}: the server saw the socket close`);
    t.equal(closes.shift(), 1000, `${signal}: a normal close, not a dropped connection (1006)`);
  }
});

t.test('odds lines show the best level of each runner and mark con frames', async (t) => {
  const msg: OddsMessage = {
    op: 'odds', mid: MID, epoch: 'm1', seq: 42, ts: 0, pt: 0, st: 'OPEN', ip: true, con: true, cf: false,
    r: [
      { rid: 101, st: 'ACTIVE', b: [[3.2, 1471.74], [3.15, 10]], l: [[3.25, 712.37]] },
      { rid: 102, st: 'SUSPENDED', b: [], l: [] },
    ],
  };
  t.match(formatFrame(msg, false, 0), /^\d\d:\d\d:\d\d\.000 1\.200001001 seq=42 OPEN ip con  101 back 3\.20@1471\.74 lay 3\.25@712\.37 \| 102 SUSPENDED back - lay -$/);
  t.strictSame(JSON.parse(formatFrame(msg, true)), msg);
});

t.test('odds lines end with how late the frame arrived, from the source and from the service', async (t) => {
  const msg: OddsMessage = { op: 'odds', mid: MID, epoch: 'm1', seq: 7, ts: 1000, pt: 1400, st: 'OPEN', ip: false, con: false, cf: false, r: [] };
  t.match(formatFrame(msg, false, 1450, { at: 1450, source: 450, publish: 50.4 }), /^\S+ 1\.200001001 seq=7 OPEN {4}delay 450 ms from source, 50 ms from publish$/);
  // A market whose source stopped days ago: since when, not 18263643000 ms.
  const at = Date.UTC(2026, 10, 28, 12, 0);
  t.match(formatFrame(msg, false, at, { at, source: 3 * 86_400_000, publish: 40 }), / {4}no data since 2026-11-25 12:00 UTC by the source's time, 40 ms from publish$/);
  t.match(formatFrame(msg, false, at, { at, source: 3 * 86_400_000, publish: 2 * 86_400_000 }), / {4}no data since 2026-11-25 12:00 UTC by the source's time, published 2026-11-26 12:00 UTC$/);
});

t.test('odds lines show what each runner last traded at, its volume and the market matched, when known', async (t) => {
  const msg: OddsMessage = {
    op: 'odds', mid: MID, epoch: 'm1', seq: 43, ts: 0, pt: 0, st: 'OPEN', ip: false, con: false, cf: false, tv: 152340.5,
    r: [
      { rid: 101, st: 'ACTIVE', b: [[3.2, 10]], l: [[3.25, 20]], ltp: 3.2, tv: 100000 },
      { rid: 102, st: 'ACTIVE', b: [[1.5, 10]], l: [[1.52, 20]], tv: 950 },
    ],
  };
  t.match(formatFrame(msg, false, 0), /^\S+ 1\.200001001 seq=43 OPEN matched 152\.3K  101 back 3\.20@10\.00 lay 3\.25@20\.00 ltp 3\.20 tv 100K \| 102 back 1\.50@10\.00 lay 1\.52@20\.00 tv 950$/);
});

t.test('freshness lines: live, or STALE with the reason and since when; a server frame and the client\'s own reason alike', async (t) => {
  t.match(formatFreshness({ mid: MID, live: true }, 0), /^\d\d:\d\d:\d\d\.000 freshness 1\.200001001 live$/);
  t.match(formatFreshness({ mid: MID, live: false, why: 'disconnected', since: 0 }, 0), /^\S+ freshness 1\.200001001 STALE disconnected since \d\d:\d\d:\d\d\.000$/);
  t.match(formatFrame({ op: 'freshness', mid: MID, live: false, why: 'publisher', at: 0 }, false, 0), /^\S+ freshness 1\.200001001 STALE publisher since \S+$/);
  t.match(formatFrame({ op: 'odds', mid: MID, epoch: 'e', seq: 8, ts: 0, pt: 0, st: 'SUSPENDED', sr: 'goal', ip: true, con: false, cf: false, r: [] }, false, 0), /^\S+ 1\.200001001 seq=8 SUSPENDED \(goal\) ip {2}$/, 'a suspension says why');
  t.match(formatFrame({ op: 'market', mid: MID, s: true, go: false, rt: false, terms: {
    bd: 5, tip: true, bt: 'ODDS', nw: 3, ewd: 4, bsp: true, cc: 'GB', ven: 'Ascot', race: 'Flat', mbr: 5, reg: ['GBR'],
    r: [{ rid: 1, st: 'ACTIVE' }, { rid: 2, st: 'ACTIVE', af: 26.3 }, { rid: 3, st: 'REMOVED', af: 13.6, rd: 0 }],
  } }, false, 0), /^\S+ market 1\.200001001 s=true go=false rt=false terms bd=5s tip ODDS nw=3 ewd=4 bsp GB Ascot Flat mbr=5% reg=GBR \| 2 af=26\.3% \| 3 REMOVED af=13\.6% at \S+$/, 'the market\'s terms, a non-runner with its factor and time');
  t.match(formatFrame({ op: 'result', mid: MID, mt: 'winner-market', res: '1,2', rt: false, ia: false, cert: 'confirmed', rs: [{ rid: 1, st: 'WINNER', dh: 0.5 }, { rid: 2, st: 'WINNER', dh: 0.5 }, { rid: 3, st: 'REMOVED' }] }, false, 0),
    /^\S+ result 1\.200001001 mt=winner-market res=1,2 rt=false ia=false cert=confirmed dh 1:0\.5,2:0\.5 void 3$/, 'a settlement: dead heat and void');
  t.strictSame(JSON.parse(formatFrame({ op: 'freshness', mid: MID, live: true, at: 5 }, true)), { op: 'freshness', mid: MID, live: true, at: 5 }, '--raw: the frame as it came');
});
