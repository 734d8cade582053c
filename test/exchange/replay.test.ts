/**
 * Replays of recordings into the real service (one service with no demo data; each test's
 * markets are its own). In process, `replay` keeps the recording's pace at a speed N. As
 * `npm run replay` (dist/src/cli/replay.js, in its own process), read by a subscriber over a
 * real socket: the troubled market of real-forms.ts among healthy ones, in the forms Betfair's
 * stream really uses, and a market whose definition the service refuses (by its rules, which the
 * adapter applies itself, or by its database) beside a healthy one of the same sport.
 */
import t from 'tap';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Ledger } from '../../src/exchange/ledger.js';
import { Outbox } from '../../src/exchange/outbox.js';
import { Publisher } from '../../src/exchange/publisher.js';
import { newStats, replay } from '../../src/exchange/replay.js';
import { Translator } from '../../src/exchange/translate.js';
import type { OddsMessage, ServerMessage } from '../../src/odds/messages.js';
import { runTool } from '../cli/processes.js';
import { tempDir } from '../helpers/temp-dir.js';
import { http, startTestService } from '../helpers/service.js';
import { Client } from '../helpers/ws.js';
import { matchOdds, tennis, writeRecording } from './fixtures.js';
import { TROUBLED, troubledDay } from './real-forms.js';
import { expectedImages, seen } from './reference-book.js';

type Obj = Record<string, unknown>;
const CLI = new URL('../../src/cli/replay.js', import.meta.url).pathname;
/** Twenty times the recorded pace: the troubled market's lines 50 ms apart, the whole day in a few seconds. */
const SPEED = '20';

const svc = await startTestService(t, { DEMO_DATA: 'off' });
const ingest = `${svc.url.replace(/^http/, 'ws')}/ingest`;

t.test('at a speed N, every message replayed and every image acked (its pace: exchange/pace.test.ts)', async (t) => {
  const messages = tennis(6);
  const file = await writeRecording(await tempDir(t), 'tennis.json', messages);
  const publisher = await Publisher.connect({ url: ingest });
  t.teardown(() => publisher.close());
  const stats = newStats();
  const problems: string[] = [];
  const ledger = new Ledger();
  const translator = new Translator({ ledger });
  const outbox = new Outbox({ publisher, translator, ledger, problem: (p) => problems.push(p) });
  await replay({ files: [file], order: 'time', maxOpen: 8, speed: 8, translator, outbox, stats, problem: (p) => problems.push(p) });
  t.same(stats, { messages: messages.length, before: 0, images: messages.length, problems: 0, clock: messages.at(-1)!.pt });
  t.equal(ledger.totals.published, messages.length, 'every image acked');
  t.same(problems, []);
});

/** The markets' reference rows as the adapter makes them, posted apart so a subscriber can hold the markets before any image: none has a publisher yet. */
async function makeMarkets(messages: Obj[]): Promise<void> {
  const tr = new Translator();
  const data = messages.flatMap((m) => tr.apply(m as never, 'setup').steps.flatMap((s) => ('item' in s ? [s.item] : [])));
  const r = await http(svc.url, '/api/v1/ingest', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ data }) });
  if (r.status !== 200) throw new Error(`setting up the markets: ${r.status} ${r.text}`);
}

/** What the subscriber was told of a market's freshness, in order: `live` or the reason. */
const told = (frames: ServerMessage[], mid: string) =>
  frames.flatMap((f) => (f.op === 'freshness' && f.mid === mid ? [f.live ? 'live' : f.why] : []));

/** The same, less the one `publisher` at the end: the replay's socket closing when it is done. */
const whileReplaying = (frames: ServerMessage[], mid: string) => {
  const all = told(frames, mid);
  return all.at(-1) === 'publisher' ? all.slice(0, -1) : all;
};

t.test('the troubled market among healthy ones: it goes stale at each fault and live at its next image, the others stay exact, the replay reads to the end', async (t) => {
  const { healthy, all } = troubledDay(30, 6);
  const dir = await tempDir(t);
  const file = join(dir, 'day.json');
  await writeFile(file, all.map((l) => l.text).join('\n') + '\n');
  const firsts = [JSON.parse(all.find((l) => l.text.includes('"marketDefinition"') && l.text.includes(TROUBLED))!.text) as Obj, ...healthy.map((h) => h[0])];
  await makeMarkets(firsts);
  const mids = [TROUBLED, ...healthy.map((h) => (h[0].mc as Obj[])[0].id as string)];
  const sub = await Client.connect(svc.url);
  t.teardown(() => sub.close());
  t.match(await sub.request({ op: 'subscribe', mids }), { status: 1 });
  await sub.settled();
  const from = sub.frames.length;

  const r = await runTool(CLI, [file, '--speed', SPEED, '--url', ingest], {});
  t.equal(r.code, 1, 'exit 1 at the end: not everything was published');
  t.match(r.stderr, /^replay: \S+day\.json:\d+: mc\[0\]\.rc\[0\]\.atb\[0\] must be \[price, size\]$/m, 'the change that could not be applied, named by file and line');
  t.notMatch(r.stderr, /spn|spf|NaN|Infinity|xyz|futureFlag|newKeyNobodyKnows/, 'starting prices and unknown fields: never a problem');
  t.match(r.stdout, new RegExp(`^${all.length} messages, ${mids.length} markets, `, 'm'), 'every line read: bad data never stopped it');
  const images = all.filter((l) => l.expect === 'image' || l.expect === 'late image').length;
  t.match(r.stdout, new RegExp(`^  ${TROUBLED.replace('.', '\\.')}: ${images} published, 4 withheld, 1 not applied \\(first: r\\[0\\] is crossed, back 3 against lay 2\\.96: best back must be below best lay`, 'm'),
    'the summary names what happened to the troubled market');
  t.match(r.stdout, /^by market \(1 with anything not published\):$/m, 'and to no other');

  // The replay is over when its socket closed: its markets go stale (publisher) last.
  await sub.next((f) => f.op === 'freshness' && f.mid === TROUBLED && f.why === 'publisher', 5000, from);
  await sub.settled();
  const frames = sub.frames.slice(from);
  const troubled = whileReplaying(frames, TROUBLED);
  // At a speed N each instant goes in a batch of its own, so no fault shares one with its recovery, on any machine.
  t.same(troubled, [
    'unreliable', 'live', // the crossed book, then the lay taken back
    'unreliable', 'live', // the lay at 1001, then taken back
    'unreliable', 'live', // the ltp of 1e300, then a good one
    'unreliable', 'live', // the change that could not be applied, then img: true
    'late', 'live', // status 503, then a message without it
  ], 'the troubled market: stale with the reason at each fault, live at its next image');
  const troubledTs = frames.filter((f): f is OddsMessage => f.op === 'odds' && f.mid === TROUBLED).map((f) => f.ts);
  t.equal(new Set(troubledTs).size, troubledTs.length - 1, 'one image a good line, and one sent again when lateness cleared');

  for (const messages of healthy) {
    const mid = (messages[0].mc as Obj[])[0].id as string;
    const expected = expectedImages(messages).get(mid)!;
    const byTs = new Map(expected.map((e) => [e.ts, e]));
    const got = frames.filter((f): f is OddsMessage => f.op === 'odds' && f.mid === mid);
    const wrong = got.filter((f) => JSON.stringify(seen(f)) !== JSON.stringify(byTs.get(f.ts)));
    t.same(wrong.slice(0, 1).map(seen), wrong.slice(0, 1).map((f) => byTs.get(f.ts)), `${mid}: every frame equals the exchange's book at its message`);
    t.equal(wrong.length, 0, `${mid}: ${got.length} frames checked`);
    if (!got.some((f) => f.con)) t.same([...new Set(got.map((f) => f.ts))], expected.map((e) => e.ts), `${mid}: every image, in order`);
    t.same(whileReplaying(frames, mid), ['late', 'live'], `${mid}: stale only while the exchange flagged its data late`);
    // Its image is sent again when lateness clears: the book did not move, the service is told it is current.
    t.match(r.stdout, new RegExp(`^  ${mid.replace('.', '\\.')}: ${expected.length + 1} published$`, 'm'), `${mid}: all published`);
  }
});

/** A soccer match odds recording moved to a market, event and sport of its own, `shift` ms later. */
const match = (steps: number, seed: number, mid: string, eid: string, si: string, shift = 0) => matchOdds(steps, seed, mid)
  .map((m) => JSON.parse(JSON.stringify({ ...m, pt: (m.pt as number) + shift }).replaceAll('"eventId":"34000001"', `"eventId":"${eid}"`).replaceAll('"eventTypeId":"1"', `"eventTypeId":"${si}"`)) as Obj);

/** The reasons a market's definition is refused: by the service's rules, which the adapter applies itself, and by its database. */
const REFUSALS = [
  {
    how: 'an event name past the service\'s 500 characters (the adapter keeps the row back)', si: '5', bad: '1.260009001', good: '1.260009002',
    spoil: (messages: Obj[]) => messages.map((m) => JSON.parse(JSON.stringify(m).replaceAll('"Harbour Town v Mill Rovers"', `"${'Harbour Town v Mill Rovers '.repeat(20)}"`)) as Obj),
    why: 'event 34009001: na must be a string of at most 500 characters',
    said: 'replay: kept back, as the service would refuse it: event 34009001: na must be a string of at most 500 characters',
  },
  {
    how: 'an ID another publisher holds as a nested market (the service\'s database refuses the row)', si: '4', bad: '1.260009011', good: '1.260009012',
    spoil: (messages: Obj[]) => messages.slice(0, -1),
    why: 'item 0 (market 1.260009011): mid 1.260009011 is already a nested market',
    said: 'replay: the service refused the reference rows of market 1.260009011: item 0 (market 1.260009011): mid 1.260009011 is already a nested market',
  },
];

t.test('a market whose definition the service refuses beside a healthy one of the same sport: the healthy market is published whole, the other named with why', async (t) => {
  // The nested market another publisher made, whose ID the second recording's market also has.
  const taken = [
    { kind: 'sport', si: 55, na: 'Darts', a: true }, { kind: 'league', li: 5501, si: 55, na: 'Premier League Darts' },
    { kind: 'event', eid: 55009011, na: 'Price v Smith', st: '2030-01-01T19:00:00.000Z', si: 55, li: 5501 },
    { kind: 'market', mid: '5.55009011', eid: 55009011, na: 'Top Checkout', ty: 'player-race', m: [{ mid: '1.260009011', s: true, go: false, r: [{ rid: 1, na: 'Price' }] }] },
  ];
  const made = await http(svc.url, '/api/v1/ingest', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ data: taken }) });
  t.equal(made.status, 200, made.text);
  for (const [n, { how, si, bad, good, spoil, why, said }] of REFUSALS.entries()) {
    t.test(how, async (t) => {
      // The refused market's first line comes first, so the sport's and league's rows are made with its definition.
      const healthy = match(40, 930 + n, good, `3400902${n}`, si);
      const refused = spoil(match(40, 940 + n, bad, bad === '1.260009001' ? '34009001' : '34009011', si, -10_000));
      const file = join(await tempDir(t), 'day.json');
      await writeFile(file, [...refused, ...healthy].sort((a, b) => (a.pt as number) - (b.pt as number)).map((m) => JSON.stringify(m)).join('\n') + '\n');
      // The markets do not exist yet: the subscriber holds their sport, and is sent each market it gets.
      const sub = await Client.connect(svc.url);
      t.teardown(() => sub.close());
      t.match(await sub.request({ op: 'subscribe', sis: [Number(si)] }), { status: 1 });
      const from = sub.frames.length;

      const r = await runTool(CLI, [file, '--speed', 'max', '--url', ingest], {});
      t.equal(r.code, 1, 'exit 1: not everything was published');
      t.match(r.stderr, said, 'the refused market named with why');
      t.match(r.stdout, new RegExp(`^  ${bad.replace('.', '\\.')}: .*\\(first: ${why.replace(/[.()]/g, '\\$&')}\\)$`, 'm'), 'and in the summary');
      const expected = expectedImages(healthy).get(good)!;
      t.match(r.stdout, new RegExp(`^  ${good.replace('.', '\\.')}: ${expected.length} published$`, 'm'), 'the healthy market: every image taken');
      t.match(r.stdout, /^by market \(1 with anything not published\):$/m, 'and nothing else troubled');

      await sub.next((f) => f.op === 'odds' && f.mid === good && f.ts === expected.at(-1)!.ts, 10_000, from);
      const frames = sub.frames.slice(from).filter((f): f is OddsMessage => f.op === 'odds' && f.mid === good);
      if (!frames.some((f) => f.con)) t.same(frames.map(seen), expected, 'every image of the healthy market, as the exchange\'s book stood');
      const markets = await http<{ data: Record<string, { mid: string }[]> }>(svc.url, `/api/v1/events/markets?eid=3400902${n}`);
      t.match(markets.body.data[`3400902${n}`], [{ mid: good, go: true }], 'its rows written, settled at the end');
    });
  }
});

t.test('a replay at the recorded pace waiting out a gap longer than its liveness bound: heartbeats keep its market live', async (t) => {
  const LIVE = 1000;
  const MID = '1.260009101';
  // The first image, then nothing for three seconds of the recording (more than two intervals), then the next.
  const [first, ...rest] = matchOdds(6, 911, MID).map((m) => JSON.parse(JSON.stringify(m).replaceAll('"eventId":"34000001"', '"eventId":"34009101"')) as Obj);
  const second = { ...rest[0], pt: (first.pt as number) + 3 * LIVE };
  const file = await writeRecording(await tempDir(t), 'gap.json', [first, second]);
  await makeMarkets([first]);
  const sub = await Client.connect(svc.url);
  t.teardown(() => sub.close());
  t.match(await sub.request({ op: 'subscribe', mids: [MID] }), { status: 1 });
  await sub.settled();
  const from = sub.frames.length;
  const r = await runTool(CLI, [file, '--speed', '1', '--url', `${ingest}?live=${LIVE}`], {});
  t.equal(r.code, 0, r.stderr);
  await sub.next((f) => f.op === 'odds' && f.mid === MID && f.ts === second.pt, 5000, from);
  const frames = sub.frames.slice(from);
  t.same(whileReplaying(frames, MID), [], 'never stale while the replay waited');
  t.same(frames.filter((f) => f.op === 'odds' && f.mid === MID).map((f) => f.op === 'odds' && f.ts), [first.pt, second.pt], 'both images, three seconds apart');
});
