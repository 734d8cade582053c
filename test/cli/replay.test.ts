import t from 'tap';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from '../../src/cli/replay.js';
import { UsageError } from '../../src/cli/args.js';
import { spawn, type ChildProcess } from 'node:child_process';
import type { OddsMessage, ServerMessage } from '../../src/odds/messages.js';
import { hasBzip2, lines, matchOdds, race, tennis, writeRecording } from '../exchange/fixtures.js';
import { expectedImages, type ExpectedImage } from '../exchange/reference-book.js';
import { http, startTestService } from '../helpers/service.js';
import { eventually } from '../helpers/wait.js';
import { Client } from '../helpers/ws.js';
import { runTool, tempDir } from './processes.js';

const CLI = new URL('../../src/cli/replay.js', import.meta.url).pathname;
const ingestUrl = (base: string) => base.replace(/^http/, 'ws') + '/ingest';
const SUMMARY = /^(\d+) messages, (\d+) markets, (\d+) images, (\d+) refused, \d+\.\d\d s$/m;

t.test('command line', async (t) => {
  t.match(parseArgs(['a.bz2', 'dir']), { paths: ['a.bz2', 'dir'], speed: 1, url: 'ws://127.0.0.1:8080/ingest' });
  t.match(parseArgs(['a', '--speed', 'max', '--url', 'wss://odds.example/ingest', '--key', 'k', '--catalogue', 'c.json']), { speed: 'max', url: 'wss://odds.example/ingest', key: 'k', catalogue: 'c.json' });
  t.match(parseArgs(['a', '--speed', '0.5']), { speed: 0.5 });
  t.equal(parseArgs(['--help']), 'help');
  for (const [argv, why] of [[[], /at least one file/], [['a', '--speed', '0'], /--speed must be/], [['a', '--speed', 'fast'], /--speed must be/], [['a', '--url', 'http://x'], /--url must be a ws/], [['a', '--nope'], /Unknown option/]] as const) {
    t.throws(() => parseArgs([...argv]), new UsageError(''), argv.join(' '));
    t.throws(() => parseArgs([...argv]), why);
  }
});

t.test('a missing file or a bad catalogue: exit 2 with the usage, nothing sent', async (t) => {
  const r = await runTool(CLI, ['/nonexistent/file.bz2', '--url', 'ws://127.0.0.1:9/ingest'], {});
  t.equal(r.code, 2);
  t.match(r.stderr, /^replay: cannot read .*\/nonexistent\/file\.bz2/);
  t.match(r.stderr, /usage: npm run replay/);
  const dir = await tempDir(t);
  await writeFile(join(dir, 'catalogue.json'), '{"result": [{"marketName": "no ID"}]}');
  const c = await runTool(CLI, [dir, '--catalogue', join(dir, 'catalogue.json'), '--url', 'ws://127.0.0.1:9/ingest'], {});
  t.equal(c.code, 2);
  t.match(c.stderr, `replay: --catalogue ${join(dir, 'catalogue.json')}: entry 0: marketId must be a market ID`);
});

/** What a frame says, in the keys the reference computes: `ltp` and `tv` only where the frame carries them. */
function seen(f: OddsMessage): ExpectedImage {
  const out: ExpectedImage = { mid: f.mid, ts: f.ts, st: f.st, ip: f.ip, r: f.r.map((x) => ({
    rid: x.rid, st: x.st, b: x.b, l: x.l, ...(x.ltp === undefined ? {} : { ltp: x.ltp }), ...(x.tv === undefined ? {} : { tv: x.tv }),
  })) };
  return f.tv === undefined ? out : { ...out, tv: f.tv };
}

t.test('against the real service', async (t) => {
  const svc = await startTestService(t, { DEMO_DATA: 'off' });
  const dir = await tempDir(t);
  const recordings = { soccer: matchOdds(600), race: race(300), tennis: tennis(200) };
  const files = [
    await writeRecording(dir, 'soccer.json', recordings.soccer),
    await writeRecording(dir, 'race.json.gz', recordings.race),
    await writeRecording(dir, hasBzip2() ? 'tennis.json.bz2' : 'tennis.json', recordings.tennis),
  ];
  const all = [...recordings.soccer, ...recordings.race, ...recordings.tennis];
  const want = expectedImages(all);
  const mids = [...want.keys()];

  t.test('replayed at max, every image a subscriber receives equals the book at its message; the last equals the final book', async (t) => {
    // The first message of each recording makes the markets, so the subscriber can hold them before the replay.
    await writeFile(join(dir, 'first.json'), lines([recordings.soccer[0], recordings.race[0], recordings.tennis[0]]));
    const first = await runTool(CLI, [join(dir, 'first.json'), '--url', ingestUrl(svc.url)], {});
    t.equal(first.code, 0, first.stderr);
    const client = await Client.connect(svc.url);
    t.teardown(() => client.close());
    t.match(await client.request({ op: 'subscribe', mids }), { status: 1 });
    await client.settled();
    const from = client.frames.length;

    const r = await runTool(CLI, [...files, '--speed', 'max', '--url', ingestUrl(svc.url)], {});
    t.equal(r.code, 0, r.stderr);
    t.equal(r.stderr, '');
    const images = [...want.values()].reduce((n, l) => n + l.length, 0);
    t.match(r.stdout, SUMMARY);
    t.same(SUMMARY.exec(r.stdout)!.slice(1, 5).map(Number), [all.length, mids.length, images, 0]);

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

  t.test('bad lines: each reported with file and line and counted; the replay goes on; exit 1', async (t) => {
    const def = recordings.tennis[0] as { mc: { marketDefinition: object }[] };
    const good = (pt: number) => JSON.stringify({ op: 'mcm', pt, mc: [{ id: '1.240000301', marketDefinition: { ...def.mc[0].marketDefinition, eventId: '34000301' } }] });
    const file = join(dir, 'bad.json');
    await writeFile(file, [good(1), '{"op":"mcm",', '{"op":"ocm","pt":2}', '{"op":"mcm","pt":3,"mc":[{"id":"1.9","rc":[]}]}', good(4)].join('\n'));
    const r = await runTool(CLI, [file, '--speed', 'max', '--url', ingestUrl(svc.url)], {});
    t.equal(r.code, 1);
    t.match(r.stderr, `replay: ${file}:2: not JSON`);
    t.match(r.stderr, `replay: ${file}:3: unknown op "ocm"`);
    t.match(r.stderr, `replay: ${file}:4: market 1.9 has no definition yet`);
    t.same(SUMMARY.exec(r.stdout)!.slice(1, 5).map(Number), [2, 1, 2, 3]);
    const markets = await eventually(
      () => http<{ data: Record<string, unknown[]> }>(svc.url, '/api/v1/events/markets?eid=34000301'),
      (r) => r.body.data?.['34000301']?.length === 1,
    );
    t.match(markets.body.data['34000301'], [{ mid: '1.240000301' }], 'the good lines were published');
  });

  t.test('a replaying publisher killed with SIGKILL mid-stream: exactly its markets go stale on every socket within its liveness bound, live again when it is restarted', async (t) => {
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
    const killed = Date.now();
    stream.kill('SIGKILL');
    const stale: ServerMessage[] = [];
    for (const [i, c] of subs.entries()) {
      const f = await c.next((f) => f.op === 'freshness' && f.mid === VICTIM, 2 * LIVE + 3000, from[i]);
      t.match(f, { op: 'freshness', mid: VICTIM, live: false, why: 'publisher' }, `${c.format}: its market is stale, publisher`);
      stale.push(f);
    }
    const took = Date.now() - killed;
    t.ok(took <= 2 * LIVE + 1000, `told within ${took} ms: within its liveness bound (two intervals of ${LIVE} ms, and a second)`);
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

t.test('a refused batch stops the replay with the service\'s message; exit 1', async (t) => {
  const svc = await startTestService(t, { DEMO_DATA: 'off', INGEST_MAX_ITEMS: '2' });
  const dir = await tempDir(t);
  const file = await writeRecording(dir, 'soccer.json', matchOdds(50));
  const r = await runTool(CLI, [file, '--speed', 'max', '--url', ingestUrl(svc.url)], {});
  t.equal(r.code, 1);
  t.match(r.stderr, /^replay: stopped: batch 1 refused: data must hold at most 2 items, got \d+$/m);
  t.match(r.stdout, SUMMARY);
});
