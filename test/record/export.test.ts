/**
 * Export and replay: a Betfair recording replayed into one service is recorded; its record
 * exported (`npm run export`) in Betfair's historic stream format and replayed (`npm run replay`)
 * into a second service gives the same books, image for image. The race settles, so the round
 * trip covers suspension, going in play, removed runners and winners too.
 */
import t from 'tap';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { matchOdds, race, writeRecording } from '../exchange/fixtures.js';
import { http, startTestService, type TestService } from '../helpers/service.js';
import { waitFor } from '../helpers/wait.js';
import { parseArgs } from '../../src/cli/export.js';
import { UsageError } from '../../src/cli/args.js';
import { runTool } from '../cli/processes.js';
import { tempDir } from '../helpers/temp-dir.js';

const REPLAY = new URL('../../src/cli/replay.js', import.meta.url).pathname;
const EXPORT = new URL('../../src/cli/export.js', import.meta.url).pathname;
const ingestUrl = (base: string) => base.replace(/^http/, 'ws') + '/ingest';

type Image = Record<string, unknown>;
const STARTED = Date.now();

/** Every image the record holds of a market, as books: what it showed, not how it was numbered. */
async function books(svc: TestService, mid: string): Promise<Image[]> {
  const out: Image[] = [];
  let after = '';
  for (;;) {
    const r = await http<{ changes: (Image & { kind: string })[]; next: string | null }>(svc.url, `/api/v1/record/changes?mid=${mid}&from=${STARTED}&limit=1000${after}`);
    for (const c of r.body.changes) if (c.kind === 'odds') out.push({ ts: c.ts, st: c.st, ip: c.ip, r: c.r, ...(c.tv === undefined ? {} : { tv: c.tv }) });
    if (!r.body.next) return out;
    after = `&after=${r.body.next}`;
  }
}

/** Waits until the record holds every image the service numbered of each market. */
async function recorded(svc: TestService, mids: string[]): Promise<void> {
  for (const mid of mids) {
    let have = 0;
    await waitFor(async () => (have = (await books(svc, mid)).length) === svc.book.get(mid)?.seq, () => `${mid}: ${have} of ${svc.book.get(mid)?.seq} images recorded`);
  }
}

t.test('command line', async (t) => {
  t.match(parseArgs(['--market', '1.2', '--out', 'f.json'], 5000), { what: { market: '1.2' }, from: 0, to: 5000, out: 'f.json' });
  t.match(parseArgs(['--day', '2026-11-25', '--out', 'd']), { what: { day: Date.UTC(2026, 10, 25) }, from: Date.UTC(2026, 10, 25), to: Date.UTC(2026, 10, 26) - 1 });
  t.match(parseArgs(['--event', '30000001', '--out', 'd', '--from', '2026-11-25T12:00:00Z']), { what: { event: 30000001 }, from: Date.UTC(2026, 10, 25, 12) });
  for (const [argv, why] of [[[], /one of --market/], [['--market', '1.2', '--event', '3'], /one of --market/], [['--market', 'a b'], /--market must be a market ID/],
    [['--event', '3'], /give the folder with --out/], [['--day', '25/11/2026', '--out', 'd'], /--day must be a date/], [['--market', '1.2', '--from', '9', '--to', '8'], /--to must not be before/]] as const) {
    t.throws(() => parseArgs([...argv]), new UsageError(''), argv.join(' '));
    t.throws(() => parseArgs([...argv]), why);
  }
});

t.test('a replayed market, recorded, exported and replayed again: the same books', async (t) => {
  const dir = await tempDir(t);
  const a = await startTestService(t, { RECORD: 'on', DEMO_DATA: 'off' });
  const soccer = '1.240000001';
  const files = [await writeRecording(dir, 'soccer.json', matchOdds(150)), await writeRecording(dir, 'race.json', race(120))];
  const first = await runTool(REPLAY, [...files, '--speed', 'max', '--url', ingestUrl(a.url)], {});
  t.equal(first.code, 0, first.stderr);
  const mids = [...a.book.values()].map((e) => e.marketId).sort();
  t.equal(mids.length, 3, `a match and a race's two markets replayed: ${mids.join(', ')}`);
  t.ok(mids.includes(soccer));
  await recorded(a, mids);

  const out = join(dir, 'soccer-export.json');
  const one = await runTool(EXPORT, ['--market', soccer, '--out', out], { DATABASE_URL: a.databaseUrl });
  t.equal(one.code, 0, one.stderr);
  const exported = (await readFile(out, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  t.equal(exported.length, a.book.get(soccer)!.seq, 'one message per recorded image');
  t.match(exported[0], { op: 'mcm', clk: '1', mc: [{ id: soccer, img: true, marketDefinition: { status: String, runners: Array } }] }, 'the first is an image with the definition');
  const folder = join(dir, 'event');
  const all = await runTool(EXPORT, ['--day', new Date().toISOString().slice(0, 10), '--out', folder], { DATABASE_URL: a.databaseUrl });
  t.equal(all.code, 0, all.stderr);
  for (const mid of mids) t.match(all.stderr, `export: ${mid}: `, `${mid}: the day's markets, each in a file`);

  const b = await startTestService(t, { RECORD: 'on', DEMO_DATA: 'off' });
  const again = await runTool(REPLAY, [folder, '--speed', 'max', '--url', ingestUrl(b.url)], {});
  t.equal(again.code, 0, again.stderr);
  await recorded(b, mids);
  for (const mid of mids) {
    const [before, after] = [await books(a, mid), await books(b, mid)];
    t.equal(after.length, before.length, `${mid}: as many images`);
    const first = after.findIndex((x, i) => JSON.stringify(x) !== JSON.stringify(before[i]));
    t.equal(first, -1, `${mid}: every book the same${first < 0 ? '' : `; the first that differs, #${first}: ${JSON.stringify(after[first]).slice(0, 300)} vs ${JSON.stringify(before[first]).slice(0, 300)}`}`);
  }
});
