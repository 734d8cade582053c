import t from 'tap';
import { freePort } from '../helpers/net.js';
import { spawn } from 'node:child_process';
import { WebSocketServer } from 'ws';
import { formatFrame, parseArgs } from '../../src/cli/watch.js';
import type { OddsMessage } from '../../src/odds/messages.js';
import { startTestService } from '../helpers/service.js';

const CLI = new URL('../../src/cli/watch.js', import.meta.url).pathname;
const MID = '1.200001001';
const ODDS_LINE = new RegExp(`^\\d\\d:\\d\\d:\\d\\d\\.\\d{3} ${MID.replace('.', '\\.')} seq=\\d+ (OPEN|SUSPENDED|BALL_RUNNING|CLOSED)\\b.*back`, 'm');

interface Run { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }

/**
 * Runs the compiled CLI. With `until`, sends SIGINT once stdout matches it, as a user watching
 * the feed would; a hard kill after 15 s keeps a broken CLI from hanging the suite.
 */
function run(args: string[], until?: RegExp): Promise<Run> {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let interrupted = false;
  child.stdout.setEncoding('utf8').on('data', (s: string) => {
    stdout += s;
    if (until && !interrupted && until.test(stdout)) {
      interrupted = true;
      child.kill('SIGINT');
    }
  });
  child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  const guard = setTimeout(() => child.kill('SIGKILL'), 15_000);
  return new Promise((resolve) => child.on('close', (code, signal) => {
    clearTimeout(guard);
    resolve({ code, signal, stdout, stderr });
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
      t.equal(r.stderr, '');
    });
  }

  t.test('--raw prints one parseable JSON message per line', async (t) => {
    const r = await run(['--url', wsUrl, '--raw', MID], /"op":"odds"/);
    t.equal(r.code, 0);
    const msgs = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { op: string; mid?: string; status?: number });
    t.match(msgs[0], { op: 'ack', id: 1, status: 1 });
    t.ok(msgs.every((m) => typeof m.op === 'string'), 'every line has an op');
    t.ok(msgs.some((m) => m.op === 'odds' && m.mid === MID), 'an odds message for the market');
  });
});

t.test('no market IDs: usage and exit 2', async (t) => {
  const r = await run(['--format', 'json']);
  t.equal(r.code, 2);
  t.match(r.stderr, /at least one market ID/);
  t.match(r.stderr, /^usage: npm run watch/m);
  t.equal(r.stdout, '');
});

t.test('an unknown option: message and exit 2', async (t) => {
  const r = await run(['--bogus', MID]);
  t.equal(r.code, 2);
  t.match(r.stderr, /--bogus/);
});

t.test('a bad --format or --hb is refused before connecting', async (t) => {
  t.throws(() => parseArgs(['--format', 'xml', MID]), /--format must be json or proto/);
  t.throws(() => parseArgs(['--hb', '100', MID]), /--hb must be/);
  t.strictSame(parseArgs(['--hb', '500', 'a', 'b']), { url: 'ws://127.0.0.1:8080/ws', format: 'json', hb: 500, raw: false, mids: ['a', 'b'] });
});

t.test('connection refused: message and exit 1', async (t) => {
  const port = await freePort();
  const r = await run(['--url', `ws://127.0.0.1:${port}/ws`, MID]);
  t.equal(r.code, 1);
  t.match(r.stderr, new RegExp(`cannot connect to ws://127\\.0\\.0\\.1:${port}/ws: .*ECONNREFUSED`));
});

t.test('a server that hangs up: close code and reason, exit 1', async (t) => {
  // Hangs up as soon as the subscribe arrives, as a server enforcing a limit would.
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, handleProtocols: (p) => [...p][0] ?? false });
  t.teardown(() => new Promise((ok) => wss.close(ok)));
  wss.on('connection', (ws) => ws.on('message', () => ws.close(4008, 'too slow')));
  await new Promise((ok) => wss.once('listening', ok));
  const { port } = wss.address() as { port: number };
  const r = await run(['--url', `ws://127.0.0.1:${port}/ws`, MID]);
  t.equal(r.code, 1);
  t.match(r.stderr, /connection closed unexpectedly: code 4008 reason "too slow"/);
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
