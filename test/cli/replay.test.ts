import t, { type Test } from 'tap';
import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from '../../src/cli/replay.js';
import { UsageError } from '../../src/cli/args.js';
import { spawn, type ChildProcess } from 'node:child_process';
import type { OddsMessage, ServerMessage } from '../../src/odds/messages.js';
import { BZIP2, hasBzip2, matchOdds, race, tennis, writeRecording } from '../exchange/fixtures.js';
import { expectedImages, seen } from '../exchange/reference-book.js';
import { http, startTestService } from '../helpers/service.js';
import { eventually } from '../helpers/wait.js';
import { Client } from '../helpers/ws.js';
import { runTool } from './processes.js';
import { tempDir } from '../helpers/temp-dir.js';

const CLI = new URL('../../src/cli/replay.js', import.meta.url).pathname;
const ingestUrl = (base: string) => base.replace(/^http/, 'ws') + '/ingest';
/** messages, markets, images sent, published, refused by the service, withheld, changes not applied, problems, peak memory. */
const SUMMARY = /^(\d+) messages(?: \(and \d+ before --from\))?, (\d+) markets, (\d+) images sent: (\d+) published, (\d+) refused by the service; (\d+) withheld, (\d+) changes not applied, (\d+) problems, peak memory (\d+) MiB, \d+\.\d\d s$/m;
const summary = (stdout: string) => SUMMARY.exec(stdout)?.slice(1).map(Number);

/** The three recordings of the replay tests: a soccer match, a race's win and place markets, a tennis match. */
const threeRecordings = () => ({ soccer: matchOdds(600), race: race(300), tennis: tennis(200) });
type Recordings = ReturnType<typeof threeRecordings>;
const all = (r: Recordings) => [...r.soccer, ...r.race, ...r.tennis];

/** The recordings as files: plain, gzip, and bzip2 where the machine has it. */
const writeRecordings = async (dir: string, r: Recordings) => [
  await writeRecording(dir, 'soccer.json', r.soccer),
  await writeRecording(dir, 'race.json.gz', r.race),
  await writeRecording(dir, hasBzip2() ? 'tennis.json.bz2' : 'tennis.json', r.tennis),
];

/**
 * Replays the recordings at max into the service at `base` with a subscriber holding every market:
 * every image published (the summary's count is the images the recording makes), exit 0, nothing
 * on stderr, and every frame the subscriber receives equal to the exchange's book at its message.
 */
async function replayedWhole(t: Test, base: string, recordings: Recordings, files: string[]): Promise<void> {
  const want = expectedImages(all(recordings));
  const mids = [...want.keys()];
  // Subscribed before the replay makes the markets: a subscription waits for a market it does not know yet.
  const client = await Client.connect(base);
  t.teardown(() => client.close());
  t.match(await client.request({ op: 'subscribe', mids }), { status: 1 });
  await client.settled();
  const from = client.frames.length;

  const r = await runTool(CLI, [...files, '--speed', 'max', '--url', ingestUrl(base)], {});
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stderr, '');
  const images = [...want.values()].reduce((n, l) => n + l.length, 0);
  t.match(r.stdout, SUMMARY);
  t.same(summary(r.stdout)!.slice(0, 8), [all(recordings).length, mids.length, images, images, 0, 0, 0, 0]);
  t.match(r.stdout, /^by market \(0 with anything not published\):\n(  1\.\d+: \d+ published\n){4}$/m, 'one line a market');

  for (const mid of mids) await client.next((f) => f.op === 'odds' && f.mid === mid && f.ts === want.get(mid)!.at(-1)!.ts, 20000, from);
  await client.settled();
  for (const mid of mids) {
    const expected = want.get(mid)!;
    const frames = client.frames.slice(from).filter((f): f is OddsMessage => f.op === 'odds' && f.mid === mid);
    const byTs = new Map(expected.map((e) => [e.ts, e]));
    const wrong = frames.filter((f) => !byTs.has(f.ts) || JSON.stringify(seen(f)) !== JSON.stringify(byTs.get(f.ts)));
    t.same(wrong.slice(0, 1).map((f) => seen(f)), wrong.slice(0, 1).map((f) => byTs.get(f.ts)), `${mid}: every frame equals the book at its message`);
    t.equal(wrong.length, 0, `${mid}: ${frames.length} frames checked`);
    // Frames skipped for a slow socket are marked con: only then may fewer arrive than were sent.
    if (!frames.some((f) => f.con)) t.equal(frames.length, expected.length, `${mid}: every image arrived`);
    t.strictSame(seen(frames.at(-1)!), expected.at(-1), `${mid}: the last frame is the final book`);
  }
  // Recorded times are the replay's own (it declares itself: /ingest?replay=1): its markets stay live.
  t.same(client.frames.slice(from).filter((f) => f.op === 'freshness' && !f.live), [], 'a recording months old is not late');
  // The three recordings run over the same hours: merged, the frames of all markets come in publish-time order.
  // A socket the server found slow (a busy machine) catches up with the newest image of each market
  // in turn, marked con: those are the newest of their markets, not in order among themselves.
  const times = client.frames.slice(from).filter((f): f is OddsMessage => f.op === 'odds' && !f.con).map((f) => f.ts);
  t.ok(times.every((ts, i) => i === 0 || ts >= times[i - 1]), 'merged by publish time across files (catch-up images aside)');
}

t.test('command line', async (t) => {
  t.match(parseArgs(['a.bz2', 'dir']), { paths: ['a.bz2', 'dir'], speed: 1, url: 'ws://127.0.0.1:8080/ingest' });
  t.match(parseArgs(['a', '--speed', 'max', '--url', 'wss://odds.example/ingest', '--key', 'k', '--catalogue', 'c.json']), { speed: 'max', url: 'wss://odds.example/ingest', key: 'k', catalogue: 'c.json' });
  t.match(parseArgs(['a', '--speed', '0.5']), { speed: 0.5, order: 'time', maxOpen: 64 });
  t.match(parseArgs(['a', '--from', '2026-05-01T12:00:00Z', '--to', '1777640400000', '--sequential', '--open', '3']), { from: Date.UTC(2026, 4, 1, 12), to: 1777640400000, order: 'files', maxOpen: 3 });
  const dir = await tempDir(t);
  await writeFile(join(dir, 'key'), 'ok_from_a_file\n');
  t.match(parseArgs(['a', '--key-file', join(dir, 'key')]), { key: 'ok_from_a_file' });
  process.env.ODDS_INGEST_KEY_FILE = join(dir, 'key');
  t.teardown(() => delete process.env.ODDS_INGEST_KEY_FILE);
  t.match(parseArgs(['a']), { key: 'ok_from_a_file' }, 'from the file a variable names');
  t.equal(parseArgs(['--help']), 'help');
  // The service where npm start put it, in either form of its address, from --url or URL alike.
  const url = (argv: string[], env: NodeJS.ProcessEnv) => (parseArgs(['a', ...argv], env) as { url: string }).url;
  t.equal(url([], { PORT: '18431' }), 'ws://127.0.0.1:18431/ingest', 'PORT');
  t.equal(url([], { PORT: '18431', HOST: '0.0.0.0' }), 'ws://127.0.0.1:18431/ingest', 'every interface, dialled on loopback');
  t.equal(url([], { HOST: '::1' }), 'ws://[::1]:8080/ingest', 'HOST');
  t.equal(url(['--url', 'http://127.0.0.1:18431'], {}), 'ws://127.0.0.1:18431/ingest', '--url as npm start prints it');
  t.equal(url([], { URL: 'https://odds.example' }), 'wss://odds.example/ingest', 'URL the same');
  t.equal(url(['--url', 'ws://a:1/ingest'], { URL: 'http://b:2', PORT: '3' }), 'ws://a:1/ingest', '--url wins');
  t.throws(() => parseArgs(['a'], { PORT: 'eighty' }), /PORT must be the service's port/);
  for (const [argv, why] of [[[], /at least one file/], [['a', '--speed', '0'], /--speed must be/], [['a', '--speed', 'fast'], /--speed must be/], [['a', '--url', 'ftp://x'], /--url must be an http\(s\):\/\/ or ws\(s\):\/\/ address, got ftp:\/\/x/], [['a', '--nope'], /Unknown option/],
    [['a', '--from', 'yesterday'], /--from must be an ISO 8601 time/], [['a', '--from', '2026-05-02T00:00:00Z', '--to', '2026-05-01T00:00:00Z'], /--to must not be before --from/],
    [['a', '--key-file', '/nonexistent/key'], /--key-file \/nonexistent\/key: ENOENT/]] as const) {
    t.throws(() => parseArgs([...argv]), new UsageError(''), argv.join(' '));
    t.throws(() => parseArgs([...argv]), why);
  }
});

t.test('a missing file or a bad catalogue: exit 2 with the usage, nothing sent', async (t) => {
  const r = await runTool(CLI, ['/nonexistent/file.bz2', '--url', 'ws://127.0.0.1:9/ingest'], {});
  t.equal(r.code, 2);
  t.match(r.stderr, /^replay: cannot read \/nonexistent\/file\.bz2: no such file or folder\n/);
  t.match(r.stderr, /usage: npm run replay/);
  const dir = await tempDir(t);
  await writeFile(join(dir, 'catalogue.json'), '{"result": [{"marketName": "no ID"}]}');
  const c = await runTool(CLI, [dir, '--catalogue', join(dir, 'catalogue.json'), '--url', 'ws://127.0.0.1:9/ingest'], {});
  t.equal(c.code, 2);
  t.match(c.stderr, `replay: --catalogue ${join(dir, 'catalogue.json')}: entry 0: marketId must be a market ID`);
});

t.test('against the real service', async (t) => {
  const svc = await startTestService(t, { DEMO_DATA: 'off' });
  const dir = await tempDir(t);
  const recordings = threeRecordings();
  const files = await writeRecordings(dir, recordings);
  const mids = [...expectedImages(all(recordings)).keys()];

  t.test('replayed at max, every image a subscriber receives equals the book at its message; the last equals the final book', async (t) => {
    await replayedWhole(t, svc.url, recordings, files);
  });

  t.test('results, market and event states as mapped', async (t) => {
    // The read model follows commits by NOTIFY: read until the last settlement shows.
    const results = await eventually(
      () => http<{ mid: string; mt: string; res: string; rt: boolean; ia: boolean }[]>(svc.url, `/api/v1/markets/result?mid=${mids.join(',')}`),
      (r) => r.body.length === mids.length && r.body.every((x) => x.res !== ''),
    );
    t.same(Object.fromEntries(results.body.map((x) => [x.mid, x])), {
      '1.240000001': { mid: '1.240000001', mt: 'match-odd', res: '44001', rt: false, ia: false },
      '1.240000101': { mid: '1.240000101', mt: 'winner-market', res: '47003', rt: false, ia: false },
      '1.240000102': { mid: '1.240000102', mt: 'other-market', res: '47001,47003,47007', rt: false, ia: false },
      '1.240000201': { mid: '1.240000201', mt: 'match-odd', res: '52002', rt: false, ia: false },
    });
    const events = await eventually(
      () => http<{ data: Record<string, { go: boolean }[]> }>(svc.url, '/api/v1/sports/events?si=1,2,7'),
      (r) => Object.values(r.body.data ?? {}).flat().every((e) => e.go),
    );
    t.match(events.body.data['7'], [{ eid: 34000101, na: 'Ludlow 1st May', le: 'Horse Racing (Betfair)', st: '2026-05-01T14:00:00.000Z', go: true, ip: false, si: 7, li: 1_000_000_007, tv: null }]);
    t.match(events.body.data['1'], [{ eid: 34000001, na: 'Harbour Town v Mill Rovers', le: 'Soccer (Betfair)', go: true, ip: false, si: 1 }]);
    const markets = await http<{ data: Record<string, unknown[]> }>(svc.url, '/api/v1/events/markets?eid=34000101');
    t.match(markets.body.data['34000101'], [
      { mid: '1.240000101', na: '2m Hcap', ty: 'winner-market', s: false, go: true, r: [{ rid: 47001, na: 'Quiet Harbour' }, { rid: 47002, na: 'Red Lantern' }] },
      { mid: '1.240000102', na: 'To Be Placed', ty: 'other-market', s: false, go: true },
    ]);
  });

  t.test('--from and --to: the books built from the start, the market\'s image as it stood at --from, then every image to --to', async (t) => {
    // A market of its own: the soccer market of the replay above is settled by now.
    const mid = '1.240000009';
    const soccer = matchOdds(600, 9, mid);
    const file = await writeRecording(dir, 'window.json', soccer);
    const pts = soccer.map((m) => m.pt as number);
    const [from, to] = [pts[200] - 1, pts[400]];
    const client = await Client.connect(svc.url);
    t.teardown(() => client.close());
    const first = await runTool(CLI, [file, '--to', String(pts[0]), '--url', ingestUrl(svc.url)], {});
    t.equal(first.code, 0, first.stderr);
    t.match(await client.request({ op: 'subscribe', mids: [mid] }), { status: 1 });
    await client.settled();
    const start = client.frames.length;
    const r = await runTool(CLI, [file, '--speed', 'max', '--from', String(from), '--to', String(to), '--url', ingestUrl(svc.url)], {});
    t.equal(r.code, 0, r.stderr);
    t.match(r.stdout, /^201 messages \(and 200 before --from\), 1 markets, 202 images sent: 202 published/);
    const expected = expectedImages(soccer).get(mid)!;
    await client.next((f) => f.op === 'odds' && f.mid === mid && f.ts === to, 20000, start);
    const frames = client.frames.slice(start).filter((f): f is OddsMessage => f.op === 'odds' && f.mid === mid).map(seen);
    t.strictSame(frames[0], expected[199], 'first the market as it stood at --from');
    t.strictSame(frames.slice(1), expected.slice(200, 401), 'then every image from --from to --to');
  });

  t.test('a bzip2 bomb (400 MB of zeros in a few hundred bytes) is refused at the line cap with memory bounded; .gz the same', { skip: hasBzip2() ? false : 'no bzip2' }, async (t) => {
    // Eight concatenated streams of 50 MB of zeros each: bzip2 reads them as one file, and making them costs an eighth.
    const bomb = join(dir, 'bomb.json.bz2');
    const part = execFileSync('/bin/sh', ['-c', `head -c 50000000 /dev/zero | ${BZIP2} -9`]);
    await writeFile(bomb, Buffer.concat(Array.from({ length: 8 }, () => part)));
    const size = statSync(bomb).size;
    t.ok(size < 1000, `400 MB in ${size} bytes`);
    const gzBomb = join(dir, 'bomb.json.gz');
    execFileSync('/bin/sh', ['-c', `head -c 32000000 /dev/zero | gzip -9 > ${gzBomb}`]);
    const r = await runTool(CLI, [bomb, gzBomb, '--speed', 'max', '--url', ingestUrl(svc.url)], {});
    t.equal(r.code, 1, 'something was not published: exit 1');
    t.match(r.stderr, `replay: ${bomb}:1: a line longer than 16 MiB: not a recording; the rest of the file is skipped`);
    t.match(r.stderr, `replay: ${gzBomb}:1: a line longer than 16 MiB: not a recording; the rest of the file is skipped`);
    const [,,,,,,, problems, peak] = summary(r.stdout)!;
    t.equal(problems, 2);
    // A 16 MiB line held as text, the decoders' blocks, and Node itself: far from the 400 MB it stands for.
    t.ok(peak < 200, `peak memory ${peak} MiB, under 200 MiB`);
  });

  t.test('progress on stderr shows the recording\'s clock', async (t) => {
    const r = await runTool(CLI, [files[2], '--speed', '1000', '--progress', '0.1', '--url', ingestUrl(svc.url)], {});
    t.equal(r.code, 0, r.stderr);
    t.match(r.stderr, /^replay: 2026-05-01 1\d:\d\d:\d\d \(recording\)  \d+ messages  1 markets  \d+ msg\/s$/m);
  });

  t.test('bad lines: each reported with file and line and counted; other ops skipped; the replay goes on; exit 1', async (t) => {
    const def = recordings.tennis[0] as { mc: { marketDefinition: object }[] };
    const good = (pt: number) => JSON.stringify({ op: 'mcm', pt, mc: [{ id: '1.240000301', marketDefinition: { ...def.mc[0].marketDefinition, eventId: '34000301' } }] });
    const file = join(dir, 'bad.json');
    await writeFile(file, [good(1), '{"op":"mcm",', '{"op":"ocm","pt":2}', '{"op":"mcm","pt":3,"mc":[{"id":"1.9","rc":[]}]}', good(4)].join('\n'));
    const r = await runTool(CLI, [file, '--speed', 'max', '--url', ingestUrl(svc.url)], {});
    t.equal(r.code, 1);
    t.match(r.stderr, `replay: ${file}:2: not JSON`);
    t.notMatch(r.stderr, 'ocm', 'an order change is not market data: skipped');
    t.match(r.stderr, `replay: ${file}:4: market 1.9 has no definition yet`);
    t.same(summary(r.stdout)!.slice(0, 8), [4, 1, 2, 2, 0, 0, 1, 2]);
    t.match(r.stdout, /^  1\.9: 0 published, 1 not applied \(first: .*market 1\.9 has no definition yet\)$/m);
    const markets = await eventually(
      () => http<{ data: Record<string, unknown[]> }>(svc.url, '/api/v1/events/markets?eid=34000301'),
      (r) => r.body.data?.['34000301']?.length === 1,
    );
    t.match(markets.body.data['34000301'], [{ mid: '1.240000301' }], 'the good lines were published');
  });

  t.test('a replaying publisher killed with SIGKILL mid-stream: exactly its markets go stale on every socket, live again when it is restarted', async (t) => {
    const LIVE = 1000;
    const [VICTIM, BYSTANDER] = ['1.240000901', '1.240000902'];
    /** A match of its own: the soccer recording moved to another market and event. */
    const match = (seed: number, mid: string, eid: string) =>
      matchOdds(400, seed, mid).map((m) => JSON.parse(JSON.stringify(m).replaceAll('"eventId":"34000001"', `"eventId":"${eid}"`)) as Record<string, unknown>);
    const victim = await writeRecording(dir, 'victim.json', match(21, VICTIM, '34000901'));
    const bystander = await writeRecording(dir, 'bystander.json', match(22, BYSTANDER, '34000902'));
    // Ten times the recorded pace: a message every 10 to 300 ms, well within the liveness interval.
    const replaying = (file: string): ChildProcess => {
      const child = spawn(process.execPath, [CLI, file, '--speed', '10', '--url', `${ingestUrl(svc.url)}?live=${LIVE}`], { stdio: 'ignore' });
      t.teardown(() => void child.kill('SIGKILL'));
      return child;
    };
    const subs = [await Client.connect(svc.url), await Client.connect(svc.url, { format: 'proto' })];
    for (const c of subs) {
      t.teardown(() => c.close());
      t.match(await c.request({ op: 'subscribe', mids: [VICTIM, BYSTANDER] }), { status: 1 });
    }
    const stream = replaying(victim);
    replaying(bystander);
    for (const c of subs) {
      await c.next((f) => f.op === 'odds' && f.mid === VICTIM && f.seq >= 5, 20000);
      await c.next((f) => f.op === 'odds' && f.mid === BYSTANDER, 20000);
      await c.settled();
    }
    const from = subs.map((c) => c.frames.length);
    stream.kill('SIGKILL');
    const stale: ServerMessage[] = [];
    for (const [i, c] of subs.entries()) {
      // A killed process's socket closes at once, and its markets go stale at once: how soon silence would is the units' to judge.
      const f = await c.next((f) => f.op === 'freshness' && f.mid === VICTIM, 20_000, from[i]);
      t.match(f, { op: 'freshness', mid: VICTIM, live: false, why: 'publisher' }, `${c.format}: its market is stale, publisher`);
      stale.push(f);
    }
    for (const [i, c] of subs.entries()) {
      // The other publisher goes on: a frame of its market after the kill, and never a word that it is stale.
      await c.next((f) => f.op === 'odds' && f.mid === BYSTANDER, 10000, from[i]);
      await c.settled();
      t.same(c.frames.slice(from[i]).filter((f) => f.op === 'freshness' && f.mid !== VICTIM), [], `${c.format}: only the killed publisher's market`);
    }
    replaying(victim);
    for (const [i, c] of subs.entries()) {
      const live = await c.next((f) => f.op === 'freshness' && f.mid === VICTIM, 20000, c.frames.indexOf(stale[i]) + 1);
      t.match(live, { live: true }, `${c.format}: live again once it is replayed again`);
    }
  });
});

t.test('into a service whose bounds are small (so a replay at max meets them on any machine): it keeps within them, every image published, the books exact', async (t) => {
  // A few batches of a few items in flight; the key's bytes smaller than the connection's, and about four images of the race.
  const svc = await startTestService(t, { DEMO_DATA: 'off', INGEST_MAX_IN_FLIGHT: '4', INGEST_QUEUE_BYTES: '32768', INGEST_KEY_QUEUE_BYTES: '12288', INGEST_MAX_ITEMS: '3' });
  const dir = await tempDir(t);
  const recordings = threeRecordings();
  await replayedWhole(t, svc.url, recordings, await writeRecordings(dir, recordings));
});
