/**
 * Export and replay keep a market's type and terms: a session (line) market, an odd-even market
 * priced as one line (a type Betfair names, though its ODD_OR_EVEN trades odds on runners), a
 * ball-by-ball market at a line of 0 runs and a match odds market, published with terms (bet
 * delay, betting type, a line's range, winners, country, commission, runners' factors) that move
 * as they go in play, are recorded, exported with `npm run export` and replayed with `npm run
 * replay` into a fresh service and into the service they came from: each market comes back as
 * the type it was, with the terms it had, and every line price is published (none refused as
 * crossed odds, nor a line of 0 as a bad price), book for book. An event's export passes over a
 * player race whose prices are its nested markets'.
 */
import t, { type Test } from 'tap';
import { readFile, readdir, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { http, postJson, startTestService, type TestService } from '../helpers/service.js';
import { waitFor } from '../helpers/wait.js';
import { image, lineImage } from '../helpers/ws.js';
import { runTool } from '../cli/processes.js';
import { tempDir } from '../helpers/temp-dir.js';

const REPLAY = new URL('../../src/cli/replay.js', import.meta.url).pathname;
const EXPORT = new URL('../../src/cli/export.js', import.meta.url).pathname;
const ingestUrl = (base: string) => base.replace(/^http/, 'ws') + '/ingest';

type Obj = Record<string, unknown>;
const STARTED = Date.now();
const EID = 40000001;
const SESSION = '4.400000011';
const MATCH = '4.400000012';
const ODD_EVEN = '4.400000013';
const BALL = '4.400000014';
const LINES = [SESSION, ODD_EVEN, BALL];
const MIDS = [...LINES, MATCH];

const REFERENCE: Obj[] = [
  { kind: 'sport', si: 4, na: 'Cricket', a: true },
  { kind: 'league', li: 4001, si: 4, na: 'Test Series' },
  { kind: 'event', eid: EID, na: 'India v England', st: '2030-06-01T09:30:00.000Z', go: false, ip: false, si: 4, li: 4001, tv: null },
  { kind: 'market', mid: SESSION, eid: EID, na: '10 Over Runs IND', ty: 'session', s: true, go: false, rt: false, di: 2 },
  { kind: 'market', mid: MATCH, eid: EID, na: 'Match Odds', ty: 'match-odd', s: true, go: false, rt: false, r: [{ rid: 1, na: 'India' }, { rid: 2, na: 'England' }] },
  { kind: 'market', mid: ODD_EVEN, eid: EID, na: '10 Over Runs IND Odd', ty: 'odd-even', s: true, go: false, rt: false, di: 3 },
  { kind: 'market', mid: BALL, eid: EID, na: '7.1 Ball Runs', ty: 'ball-by-ball', s: true, go: false, rt: false, di: 4, bl: 7.1 },
];
/** Before the off: no bet delay. */
const TERMS_BEFORE: Obj[] = [
  ...LINES.map((mid) => ({ kind: 'terms', mid, bd: 0, tip: true, bt: 'LINE', nw: 1, lmin: 0, lmax: 500, lint: 1, cc: 'IN', mbr: 5 })),
  { kind: 'terms', mid: MATCH, bd: 0, tip: true, bt: 'ODDS', nw: 1, cc: 'IN', mbr: 5, reg: ['GBR'], r: [{ rid: 1, st: 'ACTIVE', af: 55.5 }, { rid: 2, st: 'ACTIVE', af: 44.5 }] },
];
/** In play: the bets wait. */
const TERMS_IN_PLAY: Obj[] = [...LINES.map((mid) => ({ kind: 'terms', mid, bd: 3 })), { kind: 'terms', mid: MATCH, bd: 5 }];

/** A ball's line of runs, from 0: the Yes line at or above the No line, as the line rule asks. */
const ballImage = (runs: number): Obj => ({ kind: 'odds', mid: BALL, ts: Date.now(), st: 'OPEN', ip: true, r: [{ rid: 1, st: 'ACTIVE', b: [[runs, 90], [runs + 1, 100]], l: [[runs, 110]] }] });
/** The images of every market, the `i`th time. */
const images = (i: number, inPlay: boolean): Obj[] =>
  [lineImage(SESSION, (inPlay ? 50 : 40) + i), lineImage(ODD_EVEN, (inPlay ? 60 : 30) + i), ballImage(inPlay ? i : 0), image(MATCH, (inPlay ? 3 : 2) + i / 10)];

const ingest = async (svc: TestService, ...data: Obj[]) => {
  const r = await postJson<{ status: number; message: string }>(svc.url, '/api/v1/ingest', { data });
  if (r.body.status !== 1 || r.body.message !== `Ingested ${data.length} item${data.length > 1 ? 's' : ''}`) throw new Error(`ingest: ${r.text}`);
};

/** Every image the record holds of a market since the test started, as books. */
async function books(svc: TestService, mid: string): Promise<Obj[]> {
  const out: Obj[] = [];
  let after = '';
  for (;;) {
    const r = await http<{ changes: (Obj & { kind: string })[]; next: string | null }>(svc.url, `/api/v1/record/changes?mid=${mid}&from=${STARTED}&limit=1000${after}`);
    for (const c of r.body.changes) if (c.kind === 'odds') out.push({ ts: c.ts, st: c.st, ip: c.ip, r: c.r });
    if (!r.body.next) return out;
    after = `&after=${r.body.next}`;
  }
}

const marketsOf = async (svc: TestService) =>
  new Map((await http<{ data: Record<string, Obj[]> }>(svc.url, `/api/v1/events/markets?eid=${EID}`)).body.data[String(EID)].map((m) => [m.mid as string, m]));
const termsOf = async (svc: TestService) =>
  new Map((await http<{ mid: string; terms: Obj }[]>(svc.url, `/api/v1/markets/terms?mid=${MIDS.join(',')}`)).body.map((x) => [x.mid, x.terms]));

/** The record holds every image the service numbered and, `inPlay`, the market frames of the terms in play. */
async function recorded(svc: TestService, inPlay = true): Promise<void> {
  for (const mid of MIDS) {
    let have = 0;
    await waitFor(async () => (have = (await books(svc, mid)).length) === svc.book.get(mid)?.seq, () => `${mid}: ${have} of ${svc.book.get(mid)?.seq} images recorded`);
    if (inPlay) await waitFor(async () => {
      const at = await http<{ market: { frame: { terms?: Obj } } | null }>(svc.url, `/api/v1/record/price?mid=${mid}&at=${Date.now()}`);
      return at.body.market?.frame.terms?.bd !== undefined && at.body.market.frame.terms.bd !== 0;
    }, `${mid}: the in-play terms recorded`);
  }
}

/** What each market should come back as: its row's type and runners, and its terms. */
async function expectSame(t: Test, from: TestService, to: TestService, what: string): Promise<void> {
  const [before, after] = [await marketsOf(from), await marketsOf(to)];
  const [termsBefore, termsAfter] = [await termsOf(from), await termsOf(to)];
  for (const mid of MIDS) {
    t.equal(after.get(mid)?.ty, before.get(mid)!.ty, `${what}: ${mid} comes back as ${String(before.get(mid)!.ty)}`);
    t.same(after.get(mid)?.r, before.get(mid)!.r, `${what}: ${mid}: the runners its row lists`);
    t.same(termsAfter.get(mid), termsBefore.get(mid), `${what}: ${mid}: the terms it had, the bet delay in play and the line's range included`);
  }
}

t.test('line markets (a session, an odd-even, a ball at 0 runs) and a match odds market, exported and replayed, keep their type, terms and prices', async (t) => {
  const dir = await tempDir(t);
  const a = await startTestService(t, { RECORD: 'on', DEMO_DATA: 'off' });
  await ingest(a, ...REFERENCE, ...TERMS_BEFORE);
  for (let i = 0; i < 4; i++) await ingest(a, ...images(i, false));
  await ingest(a, ...TERMS_IN_PLAY);
  for (let i = 0; i < 4; i++) await ingest(a, ...images(i, true));
  await recorded(a);

  const folder = join(dir, 'event');
  const exported = await runTool(EXPORT, ['--event', String(EID), '--out', folder], { DATABASE_URL: a.databaseUrl });
  t.equal(exported.code, 0, exported.stderr);

  const b = await startTestService(t, { RECORD: 'on', DEMO_DATA: 'off' });
  const replayed = await runTool(REPLAY, [folder, '--speed', 'max', '--url', ingestUrl(b.url)], {});
  t.equal(replayed.code, 0, `every image published, none withheld or refused: ${replayed.stdout}${replayed.stderr}`);
  await expectSame(t, a, b, 'into a fresh service');
  for (const mid of MIDS) {
    await waitFor(async () => (await books(b, mid)).length === (await books(a, mid)).length, `${mid}: every image recorded again`);
    t.same(await books(b, mid), await books(a, mid), `${mid}: every book the same, the line markets' lines as lines`);
  }

  const again = await runTool(REPLAY, [folder, '--speed', 'max', '--url', ingestUrl(a.url)], {});
  t.equal(again.code, 0, `into the service it came from: ${again.stdout}${again.stderr}`);
  await expectSame(t, b, a, 'into the service it came from');
});

t.test('a replay that would change a market\'s type is refused, and the market left as it was', async (t) => {
  const dir = await tempDir(t);
  const a = await startTestService(t, { RECORD: 'on', DEMO_DATA: 'off' });
  await ingest(a, ...REFERENCE, ...TERMS_BEFORE, ...images(0, false));
  await recorded(a, false);
  const folder = join(dir, 'event');
  t.equal((await runTool(EXPORT, ['--event', String(EID), '--out', folder], { DATABASE_URL: a.databaseUrl })).code, 0);
  // What an export that could not say the type wrote: a catch-all type priced in odds, the runner named as a row's.
  const file = join(folder, `${SESSION}.json`);
  const old = (await readFile(file, 'utf8')).replaceAll('"marketType":"session","bettingType":"LINE"', '"marketType":"OTHER","bettingType":"ODDS"').replaceAll('"sortPriority":1}', '"sortPriority":1,"name":"Selection 1"}');
  t.not(old, await readFile(file, 'utf8'), 'the export rewritten as an older one');
  const only = join(dir, 'old');
  await mkdir(only);
  await writeFile(join(only, `${SESSION}.json`), old);
  const [marketsBefore, termsBefore, bookBefore] = [await marketsOf(a), await termsOf(a), a.book.get(SESSION)];

  const replayed = await runTool(REPLAY, [only, '--speed', 'max', '--url', ingestUrl(a.url)], {});
  t.equal(replayed.code, 1, 'the replay says it did not publish everything');
  t.match(replayed.stdout + replayed.stderr, `ty other-market would change the type of market ${SESSION} (session)`, 'naming both types');
  const [marketsAfter, termsAfter] = [await marketsOf(a), await termsOf(a)];
  t.same(marketsAfter.get(SESSION), marketsBefore.get(SESSION), 'the market is still a session market without runners');
  t.same(termsAfter.get(SESSION), termsBefore.get(SESSION), 'with its terms');
  t.same(a.book.get(SESSION), bookBefore, 'and its lines');
});

t.test('an event\'s export passes over a player race priced through its nested markets, and says why a market it writes has no image', async (t) => {
  const dir = await tempDir(t);
  const a = await startTestService(t, { RECORD: 'on', DEMO_DATA: 'off' });
  const race = '4.400000015';
  const nested = [`${race}.1`, `${race}.2`];
  await ingest(a, ...REFERENCE.slice(0, 3), { kind: 'market', mid: race, eid: EID, na: 'Top Batter Race', ty: 'player-race', s: true, go: false, rt: false,
    m: nested.map((mid, i) => ({ mid, s: true, go: false, r: [{ rid: 1 + 2 * i, na: `Batter ${1 + 2 * i}` }, { rid: 2 + 2 * i, na: `Batter ${2 + 2 * i}` }], if: null })) });
  await ingest(a, image(nested[0], 2, [1, 2]), image(nested[1], 3, [3, 4]));
  for (const mid of nested) await waitFor(async () => (await books(a, mid)).length === 1, `${mid}: its image recorded`);

  const folder = join(dir, 'event');
  const exported = await runTool(EXPORT, ['--event', String(EID), '--out', folder], { DATABASE_URL: a.databaseUrl });
  t.equal(exported.code, 0, `every market with prices written: ${exported.stderr}`);
  t.same((await readdir(folder)).sort(), nested.map((mid) => `${mid}.json`), 'a file for each nested market, none for the race');
  t.match(exported.stderr, `export: ${race}: a player race, priced through its nested markets; no file of its own`);

  const unpriced = await runTool(EXPORT, ['--market', race, '--out', join(dir, 'race.json')], { DATABASE_URL: a.databaseUrl });
  t.equal(unpriced.code, 1, 'a market asked for by name with no image fails');
  t.match(unpriced.stderr, `export: ${race}: no image recorded`, 'saying why');
});
