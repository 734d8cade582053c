/**
 * The odds board at `/`, in headless Chromium against the real service: its
 * routes, the demo with the simulator on, and, with the simulator off, states,
 * conclusions, results, flashes and the two formats driven through ingest.
 * The demo's screenshot goes to dist/board.png, or to BOARD_SCREENSHOT (a path
 * from the repository root: `BOARD_SCREENSHOT=docs/board.png` refreshes the README's).
 * A tab for the demo's tests and one for the rest stay open across the subtests, as a
 * user keeps one: tests that read a live board share it, a test that needs a first load
 * reloads it, and the demo service (its simulator the busiest thing here) stops once its
 * tests are done.
 */
import t from 'tap';
import { mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { http, keyLive, postJson, startTestService, type TestService } from '../helpers/service.js';
import { FakeClock } from '../helpers/clock.js';
import { createKey } from '../../src/auth/keys.js';
import { isLineType } from '../../src/refdata/types.js';
import type { WireMarket as Market } from '../../src/refdata/wire.js';
import type { Route } from 'playwright-core';
import { ingestOnSocket, lineImage } from '../helpers/ws.js';
import { reductionFactors } from '../../src/demo/markets.js';
import { board, bookState, hasChromium, launch, newPage, showing, visit, CHROMIUM } from './browser.js';

// Over five minutes on a slow 2-core machine with seven files beside it; the runner's hard stop (10 min) still holds.
t.setTimeout(540_000);

const ROOT = new URL('../../../', import.meta.url).pathname;
const EVENT = 30000001;
const CRICKET = `/?si=4&eid=${EVENT}`;
/** What the page may weigh, all files together. */
const BUDGET_BYTES = 300 * 1024;

if (!hasChromium()) {
  t.plan(0, `${CHROMIUM} is missing (Debian's chromium package; .ci/run installs it)`);
} else {
  const browser = await launch();
  t.teardown(() => browser.close());
  // No simulator: every price is one the test published. A short stale limit lets the feed status move within a test.
  // Its limits and timers on a clock the tests move: its feed goes STALE, and its publishers silent, only when a test says.
  const quietClock = new FakeClock(Date.now());
  const quiet = await startTestService(t, { FEED_STALE_MS: '1500' }, undefined, { clock: quietClock });
  /** The tab of the tests after the demo's. */
  const tab = await newPage(t, browser);

  const ingest = async (svc: TestService, ...data: Record<string, unknown>[]) => {
    const r = await postJson(svc.url, '/api/v1/ingest', { data });
    if (r.status !== 200) throw new Error(`ingest refused: ${r.text}`);
  };
  const markets = (await http<{ data: Record<string, Market[]> }>(quiet.url, `/api/v1/events/markets?eid=${EVENT}`)).body.data[EVENT];
  /** Every live book of the event: a market with runners or a line, or a player race's head-to-head. */
  const books = markets.filter((m) => !m.go).flatMap((m) => (m.m
    ? m.m.filter((n) => !n.go).map((n) => ({ mid: n.mid, rids: n.r.map((r) => r.rid), line: false }))
    : [{ mid: m.mid, rids: m.r?.map((r) => r.rid) ?? [1], line: isLineType(m.ty) }]));
  const named = (na: string) => markets.find((m) => m.na === na)!.mid;
  /** A full image with three levels a side from `price` up, sizes from `size`. */
  const image = (mid: string, rids: number[], price: number, st = 'OPEN', size = 100) => ({
    kind: 'odds', mid, ts: Date.now(), st, ip: true,
    r: rids.map((rid, i) => ({
      rid, st: 'ACTIVE',
      b: [0, 1, 2].map((k) => [Math.round((price + i - k / 100) * 100) / 100, size + k]),
      l: [0, 1, 2].map((k) => [Math.round((price + i + (k + 1) / 100) * 100) / 100, size + 10 + k]),
    })),
  });
  /** A line book's image (Yes a run above No): runners' ladders are no prices a line market can have. */
  const line = (mid: string, runs: number, st = 'OPEN') => ({ ...lineImage(mid, runs), st });
  const publishAll = (price: number) => ingest(quiet, ...books.map((b, i) => (b.line ? line(b.mid, Math.round((price + i) * 10)) : image(b.mid, b.rids, price + i))));

  t.test('GET / and its assets come from memory with their types and caching; unknown paths stay 404', async (t) => {
    const page = await http(quiet.url, '/');
    t.equal(page.status, 200);
    t.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
    t.equal(page.headers.get('cache-control'), 'no-cache');
    t.match(page.headers.get('content-security-policy'), /default-src 'none'/);
    const etag = page.headers.get('etag')!;
    t.equal((await http(quiet.url, '/', { headers: { 'if-none-match': etag } })).status, 304, 'revalidated by its ETag');
    const assets = [...page.text.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]);
    t.same(assets.map((a) => a.replace(/-[A-Z0-9]+\./, '-HASH.')).sort(), ['/assets/board-HASH.css', '/assets/board-HASH.js']);
    let bytes = Buffer.byteLength(page.text);
    for (const path of assets) {
      const asset = await http(quiet.url, path);
      t.equal(asset.status, 200, path);
      t.equal(asset.headers.get('content-type'), path.endsWith('.js') ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8', path);
      t.equal(asset.headers.get('cache-control'), 'public, max-age=31536000, immutable', path);
      bytes += Number(asset.headers.get('content-length'));
    }
    t.comment(`the board weighs ${(bytes / 1024).toFixed(1)} KiB`);
    t.ok(bytes < BUDGET_BYTES, `${bytes} bytes, under ${BUDGET_BYTES}`);
    for (const path of ['/assets/board-NOPE.js', '/assets/', '/index.html', '/nothing']) {
      const missing = await http<{ status: number; message: string }>(quiet.url, path);
      t.equal(missing.status, 404, path);
      t.same(missing.body, { status: 0, message: `no route for ${path}` }, path);
    }
    t.equal((await http(quiet.url, '/api/v1/sports')).status, 200, 'the API is untouched');
  });

  t.test('the demo, with the simulator on', async (t) => {
    const demo = await startTestService(t, { SIMULATOR: 'on', LIFECYCLE_INTERVAL_MS: '3600000' });
    const demoTab = await newPage(t, browser);

    t.test('the demo page loads without console errors, lists the active sports and opens a protobuf socket', async (t) => {
      const { page, errors, sockets, requests } = await visit(demoTab, demo.url + '/');
      await page.waitForSelector('#conn[data-state=live]');
      t.same(await page.$$eval('#sports button', (bs) => bs.map((b) => b.textContent)), ['Soccer', 'Tennis', 'Cricket', 'Horse Racing'], 'active sports, Kabaddi left out');
      t.equal(await page.textContent('#conn'), 'live · protobuf');
      t.equal(sockets.length, 1);
      t.match(sockets[0].url(), new RegExp(`^${demo.url.replace('http', 'ws')}/ws\\?hb=\\d+$`));
      const binary = await sockets[0].waitForEvent('framereceived', { predicate: (f) => typeof f.payload !== 'string', timeout: 30_000 });
      t.ok(binary, 'binary frames: the protobuf subprotocol');
      await page.waitForSelector('.book[data-state=open] .c b:not(:empty)');
      // Errors are read once a moved price was drawn: the updates' path has run, not only the first load's.
      await page.waitForSelector('.c[data-move]', { timeout: 30_000 });
      t.same(errors, [], 'no console errors');
      t.same(requests.filter((u) => !u.startsWith(demo.url) && !u.startsWith('data:')), [], 'nothing fetched from anywhere else');
    });

    t.test('the demo prices move within seconds', async (t) => {
      const { page } = await showing(demoTab, demo.url + CRICKET);
      await page.waitForSelector('.book[data-state=open] .c b:not(:empty)');
      const before = await page.$$eval('.book .c b', (cells) => cells.map((c) => c.textContent));
      const moved = await page.waitForFunction((was) => {
        const now = [...document.querySelectorAll('.book .c b')].map((c) => c.textContent);
        return now.filter((p, i) => p && was[i] && p !== was[i]).length >= 5;
      }, before, { timeout: 30_000 }).then(() => true, () => false);
      t.ok(moved, 'at least five prices changed');
    });

    t.test('updates change cells in place: no market, row or cell is redrawn while prices move', async (t) => {
      const { page } = await showing(demoTab, demo.url + CRICKET);
      await page.waitForSelector('.book[data-state=open] .c b:not(:empty)');
      // Watched until more than 20 prices and sizes changed, however slowly a busy machine moves them (bounded at 20 s).
      const seen = await page.evaluate(() => new Promise<{ redrawn: number; texts: number }>((resolve) => {
        const counts = { redrawn: 0, texts: 0 };
        const done = () => {
          watch.disconnect();
          resolve(counts);
        };
        const watch = new MutationObserver((records) => {
          for (const r of records) {
            if (r.type === 'childList') counts.redrawn += r.addedNodes.length + r.removedNodes.length;
            else counts.texts++;
          }
          if (counts.texts > 20) done();
        });
        watch.observe(document.getElementById('markets')!, { childList: true, characterData: true, subtree: true });
        setTimeout(done, 20000);
      }));
      t.ok(seen.texts > 20, `${seen.texts} prices and sizes changed`);
      t.equal(seen.redrawn, 0, 'no element added or removed');
    });

    t.test('the header shows the feed status and the publish-to-screen delay', async (t) => {
      const { page } = await showing(demoTab, demo.url + CRICKET);
      await page.waitForFunction(() => /^delay \d+ ms$/.test(document.getElementById('delay')!.textContent ?? ''), null, { timeout: 30_000 });
      t.equal(await page.textContent('#feed'), 'feed OK');
    });

    t.test('while the demo prices move, back (Yes) cells stay blue and lay (No) cells pink: nothing is drawn over them', async (t) => {
      const { page } = await showing(demoTab, demo.url + CRICKET);
      await page.waitForSelector('.book[data-state=open] .c b:not(:empty)');
      const colour = (name: string) => page.evaluate((n) => {
        const probe = document.body.appendChild(document.createElement('i'));
        probe.style.background = `var(${n})`;
        const c = getComputedStyle(probe).backgroundColor;
        probe.remove();
        return c;
      }, name);
      const sides = { b: [await colour('--back'), await colour('--back-far')], l: [await colour('--lay'), await colour('--lay-far')] };
      // Each cell is read as its move is marked, while the mark shows, until more than 20 were; then every open cell once.
      // Bounded at 20 s however slowly a busy machine moves them.
      const seen = await page.evaluate((sides) => new Promise<{ cells: number; moving: number; wrong: string[] }>((resolve) => {
        const seen = { cells: 0, moving: 0, wrong: [] as string[] };
        const read = (c: Element) => {
          const side = c.classList.contains('b') ? 'b' : 'l';
          const [cell, after] = [getComputedStyle(c), getComputedStyle(c, '::after')];
          seen.cells++;
          if (!sides[side].includes(cell.backgroundColor) || after.backgroundColor !== 'rgba(0, 0, 0, 0)') seen.wrong.push(`${side}: ${cell.backgroundColor} under ${after.backgroundColor}`);
          return (c as HTMLElement).dataset.move !== undefined && after.opacity !== '0';
        };
        const done = () => {
          watch.disconnect();
          document.querySelectorAll('.book[data-state=open] .c').forEach(read);
          resolve(seen);
        };
        const watch = new MutationObserver((records) => {
          for (const r of records) if ((r.target as Element).closest('.book[data-state=open]') && read(r.target as Element)) seen.moving++;
          if (seen.moving > 20) done();
        });
        watch.observe(document.getElementById('markets')!, { attributes: true, attributeFilter: ['data-move'], subtree: true });
        setTimeout(done, 20000);
      }), sides);
      t.ok(seen.moving > 20, `${seen.moving} of ${seen.cells} cells read were marked as moving`);
      t.same(seen.wrong.slice(0, 5), [], 'every cell showed its side colour, uncovered');
    });

    t.test('the demo board prices every live book of the cricket event (screenshot, taken live)', async (t) => {
      const { page } = await showing(demoTab, demo.url + CRICKET);
      const all = await page.waitForFunction(() => {
        const bs = [...document.querySelectorAll('.book')];
        return bs.length > 20 && bs.every((b) => [...b.querySelectorAll('.c b')].some((c) => c.textContent));
      }, null, { timeout: 30_000 }).then(() => true, () => false);
      t.ok(all, 'every book shows prices');
      t.ok(await page.textContent('#results'), 'the results of the settled markets are listed');
      await page.waitForFunction(() => /\d ms$/.test(document.getElementById('delay')!.textContent ?? ''));
      // Live, moves and all: the picture is the board as a user sees it.
      const path = join(ROOT, process.env.BOARD_SCREENSHOT ?? 'dist/board.png');
      mkdirSync(dirname(path), { recursive: true });
      // A live page on a machine eight test files keep busy: playwright's 30 s was once too little.
      await page.screenshot({ path, timeout: 120_000 });
      t.ok(statSync(path).size > 10_000, `screenshot in ${path}`);
    });

    t.test('the demo shows an in-play bet delay, and a race\'s non-runner with its reduction factor and when it was withdrawn', async (t) => {
      const { page, errors } = await showing(demoTab, demo.url + CRICKET);
      await page.waitForSelector('.book .bet-delay:not(:empty)');
      t.match(await page.textContent('.book .bet-delay'), 'Bet delay 5 s', 'the in-play cricket match holds bets five seconds');
      t.same(errors, [], 'no console errors on the cricket board');
      const race = await visit(demoTab, `${demo.url}/?si=7&eid=30000031`);
      const row = await race.page.waitForSelector('tr[data-st=removed]');
      const text = (await row.textContent()) ?? '';
      const [factor, at] = [reductionFactors(7)[4], new Date(Date.parse((await http<{ data: Record<string, { st: string }[]> }>(demo.url, '/api/v1/sports/events?si=7')).body.data['7'].find((e) => (e as unknown as { eid: number }).eid === 30000031)!.st) - 40 * 60_000)];
      t.match(text, `Charyn`, 'the non-runner by name');
      t.match(text, `non-runner · RF ${factor}%`, 'with its reduction factor');
      t.ok(text.includes(at.toTimeString().slice(0, 5)) || text.includes(new Date(at.getTime() + 60_000).toTimeString().slice(0, 5)), `and when it was withdrawn: ${text}`);
      t.match(await race.page.textContent('.book .bet-delay'), 'Bet delay 1 s', 'the race is in play: a one-second delay');
      t.match(await race.page.textContent('.book .terms'), /BSP/, 'starting prices taken');
      t.same(race.errors, [], 'no console errors on the race');
    });

    t.test('the format toggle reconnects in JSON and says so in the address', async (t) => {
      const { page, sockets } = await visit(demoTab, demo.url + CRICKET);
      await page.waitForSelector('#conn[data-state=live]');
      await page.selectOption('#format', 'json');
      await page.waitForSelector('#conn:text-is("live · JSON")');
      t.equal(sockets.length, 2, 'a second socket');
      const text = await sockets[1].waitForEvent('framereceived', { predicate: (f) => typeof f.payload === 'string', timeout: 30_000 });
      t.match(JSON.parse(String(text.payload)), { op: String }, 'text frames: the JSON subprotocol');
      t.ok(sockets[0].isClosed(), 'the protobuf socket is closed');
      t.match(new URL(page.url()).searchParams.get('format'), 'json');
    });
  });

  t.test('protobuf and JSON show the same board', async (t) => {
    await publishAll(2);
    // One load after the other: nothing is published between them.
    const settled = async (url: string) => {
      const { page } = await visit(tab, url);
      await page.waitForFunction((n) => {
        const bs = [...document.querySelectorAll('.book')];
        return bs.length === n && bs.every((b) => b.querySelector('.c.b.d1 b')?.textContent);
      }, books.length, { timeout: 30_000 });
      return page;
    };
    const json = await settled(quiet.url + CRICKET + '&format=json');
    t.equal(await json.textContent('#conn'), 'live · JSON');
    const inJson = await board(json);
    const shown = await board(await settled(quiet.url + CRICKET));
    t.same(inJson, shown, 'the same books, runners, prices and sizes');
    t.same(shown.map((b) => b.mid).sort(), books.map((b) => b.mid).sort(), 'every live book of the event');
    const matchOdds = shown.find((b) => b.mid === named('Match Odds'))!;
    t.same(matchOdds.rows[0], ['India', '1.98 102', '1.99 101', '2.00 100', '2.01 110', '2.02 111', '2.03 112'], 'best back and lay meet in the middle');
    const session = shown.find((b) => b.mid === named('10 Over Runs IND'))!;
    t.same(session.rows.map((r) => r[0]), ['Line'], 'a session market is one line: Yes and No');
  });

  t.test("a runner's last traded price and the market's matched volume show when published, and go when they do", async (t) => {
    const mid = named('Tied Match');
    const { page } = await showing(tab, quiet.url + CRICKET);
    const book = `.book[data-mid="${mid}"]`;
    const first = `${book} tbody tr:first-child .ltp`;
    const published = image(mid, [9001, 9002], 3);
    await ingest(quiet, { ...published, tv: 12345, r: [{ ...published.r[0], ltp: 3.05 }, published.r[1]] });
    await page.waitForSelector(`${first}:text-is("LTP 3.05")`);
    t.equal(await page.textContent(`${book} tbody tr:first-child td.b.d1 b`), '3.00', 'prices with two decimals, as betting screens show them');
    t.equal(await page.textContent(`${book} .matched`), 'Matched 12.3K');
    t.equal(await page.textContent(`${book} tbody tr:nth-child(2) .ltp`), '', 'a runner without one shows none');
    await ingest(quiet, image(mid, [9001, 9002], 3.5));
    await page.waitForSelector(`${first}:text-is("")`, { state: 'attached' });
    t.equal(await page.textContent(`${book} .matched`), '', 'an image without them clears them');
  });

  t.test('each book shows how late its newest frame arrived from the source, and from the service in its title', async (t) => {
    const mid = named('Tied Match');
    const { page } = await showing(tab, quiet.url + CRICKET);
    const delay = `.book[data-mid="${mid}"] .delay`;
    // An hour old at the source: a late feed, told in minutes. Each from a publisher of its own:
    // one publisher's images of a market must keep their source times' order.
    const fromOwnPublisher = async (item: Record<string, unknown>) => t.equal((await ingestOnSocket(quiet.url, 'json', [item])).status, 1);
    await fromOwnPublisher({ ...image(mid, [9001, 9002], 4), ts: Date.now() - 3_600_000 });
    await page.waitForSelector(`${delay}:text-matches("^60 min$")`);
    // Past a day: since when, not a count of seconds nobody can read.
    const since = Date.UTC(2026, 0, 2, 3, 4);
    await fromOwnPublisher({ ...image(mid, [9001, 9002], 4.2), ts: since });
    await page.waitForSelector(`${delay}:text-is("no data since 2026-01-02 03:04 UTC")`);
    t.match(await page.getAttribute(delay, 'title'), /^no data since 2026-01-02 03:04 UTC by the source's time; published \d+ ms before it arrived$/);
    await ingest(quiet, image(mid, [9001, 9002], 4.5));
    await page.waitForSelector(`${delay}:text-matches("^[0-9]+ ms$")`);
    t.match(await page.getAttribute(delay, 'title'), /^arrived \d+ ms after the source's time, \d+ ms after the service published it$/);
  });

  t.test('until its first data the board says it is loading: the markets while their list is read, a book until its first image', async (t) => {
    const mid = '1.299999901';
    await ingest(quiet, { kind: 'market', mid, eid: EVENT, na: 'Waiting Market', ty: 'match-odd', r: [{ rid: 9101, na: 'Home' }, { rid: 9102, na: 'Away' }] });
    t.teardown(() => ingest(quiet, { kind: 'market', mid, go: true }));
    const { page } = tab;
    // The event's market list is held back, as on a slow network, until the loading state is seen.
    let release!: () => void;
    const held = new Promise<void>((ok) => (release = ok));
    const hold = async (route: Route) => {
      await held;
      await route.continue();
    };
    await page.route('**/api/v1/events/markets?*', hold);
    t.teardown(() => page.unroute('**/api/v1/events/markets?*', hold));
    await visit(tab, quiet.url + CRICKET);
    await page.waitForSelector('#event h2');
    t.equal(await page.textContent('#markets .note'), 'Loading markets…', 'the event is shown, and its markets said to be loading');
    t.equal(await page.getAttribute('#markets', 'aria-busy'), 'true');
    t.equal(await page.$$eval('#markets .book', (b) => b.length), 0);
    release();
    const book = `.book[data-mid="${mid}"]`;
    await page.waitForSelector(book);
    t.equal(await page.$('#markets .note'), null, 'the loading line goes with the first data');
    t.equal(await page.getAttribute('#markets', 'aria-busy'), 'false');
    t.equal(await page.textContent(`${book} .waiting`), 'No prices yet', 'a book without an image says so, not a ladder of blanks');
    await ingest(quiet, image(mid, [9101, 9102], 2.5));
    await page.waitForSelector(`${book} .c b:text-is("2.50")`);
    t.equal(await page.textContent(`${book} .waiting`), '', 'gone with its first image');
  });

  t.test('a market suspended through ingest shows as suspended, and opens again', async (t) => {
    await publishAll(3);
    const mid = named('Completed Match');
    const { page } = await showing(tab, quiet.url + CRICKET);
    await bookState(page, mid, 'open');
    await ingest(quiet, { kind: 'market', mid, s: false });
    await bookState(page, mid, 'suspended');
    t.equal(await page.textContent(`.book[data-mid="${mid}"] .badge`), 'Suspended');
    await ingest(quiet, { kind: 'market', mid, s: true });
    await bookState(page, mid, 'open');
    t.equal(await page.textContent(`.book[data-mid="${mid}"] .badge`), '');
  });

  t.test('an odds image shows its state plainly: suspended, ball running, closed', async (t) => {
    await publishAll(3);
    const { page } = await showing(tab, quiet.url + CRICKET);
    const cases = [['15 Over Runs IND', 'SUSPENDED', 'suspended', 'Suspended'], ['20 Over Runs IND', 'BALL_RUNNING', 'ball-running', 'Ball running'], ['Virat Kohli Runs', 'CLOSED', 'closed', 'Closed']];
    for (const [na] of cases) await bookState(page, named(na), 'open');
    await ingest(quiet, ...cases.map(([na, st]) => line(named(na), 40, st)));
    for (const [na, , state, badge] of cases) {
      await bookState(page, named(na), state);
      t.equal(await page.textContent(`.book[data-mid="${named(na)}"] .badge`), badge, na);
    }
 
    // A suspension's reason, when the source gives one, beside it.
    await ingest(quiet, { ...line(named('15 Over Runs IND'), 41, 'SUSPENDED'), sr: 'wicket' });
    await page.waitForFunction((mid) => document.querySelector(`.book[data-mid="${mid}"] .badge`)?.textContent === 'Suspended · wicket', named('15 Over Runs IND'), { timeout: 30_000 });
    t.pass('Suspended · wicket');
  });

  t.test('a price that moves is marked by an outline and an arrow, up and down apart, and its cell keeps its colour', async (t) => {
    const mid = named('Bookmaker');
    await ingest(quiet, image(mid, [101, 102], 2));
    // Loaded afresh: what it shows is the page's first price, not a move from the last test's.
    const { page } = await visit(tab, quiet.url + CRICKET);
    const cell = `.book[data-mid="${mid}"] tbody tr:first-child .c.b.d1`;
    await page.waitForSelector(`${cell} b:text-is("2.00")`);
    t.equal(await page.getAttribute(cell, 'data-move'), null, 'a first price is not marked');
    const still = await page.$eval(cell, (c) => getComputedStyle(c).backgroundColor);
    const mark = () => page.$eval(cell, (c) => {
      const after = getComputedStyle(c, '::after');
      return { fill: after.backgroundColor, outline: after.boxShadow, arrow: after.content, cell: getComputedStyle(c).backgroundColor };
    });
    await ingest(quiet, image(mid, [101, 102], 2.5));
    await page.waitForSelector(`${cell}[data-move=up] b:text-is("2.50")`);
    const up = await mark();
    t.same([up.fill, up.cell, up.arrow], ['rgba(0, 0, 0, 0)', still, '"▲"'], 'up: an arrow, no fill over the back colour');
    t.match(up.outline, /inset/, 'and an outline');
    await ingest(quiet, image(mid, [101, 102], 1.5));
    await page.waitForSelector(`${cell}[data-move=down] b:text-is("1.50")`);
    const down = await mark();
    t.same([down.fill, down.cell, down.arrow], ['rgba(0, 0, 0, 0)', still, '"▼"'], 'down: the other arrow, no fill');
    t.not(down.outline, up.outline, 'an outline of another colour');
  });

  t.test('a market concluded through ingest goes away', async (t) => {
    await publishAll(4);
    const mid = named('Super Over Winner');
    const { page } = await showing(tab, quiet.url + CRICKET);
    await bookState(page, mid, 'open');
    await ingest(quiet, { kind: 'market', mid, go: true });
    await page.waitForSelector(`.market[data-mid="${mid}"]`, { state: 'detached' });
    t.same((await board(page)).filter((b) => b.mid === mid), []);
  });

  t.test("a settled market's result is listed by its runner's name", async (t) => {
    await publishAll(4);
    const mid = named('Tournament Winner');
    const { page } = await showing(tab, quiet.url + CRICKET);
    await bookState(page, mid, 'open');
    await ingest(quiet, { kind: 'result', mid, res: '103', rt: false, ia: false }, { kind: 'market', mid, go: true, s: false });
    await page.waitForSelector(`#results li[data-mid="${mid}"]`);
    t.equal(await page.textContent(`#results li[data-mid="${mid}"]`), 'Tournament WinnerEngland');
  });

  t.test('the feed status shows STALE when publishers go quiet, and OK when they are back', async (t) => {
    const { page } = await showing(tab, quiet.url + CRICKET);
    quietClock.advance(2000);
    // State and words read at once.
    t.ok(await page.waitForSelector('#feed[data-state=stale]:text-is("feed STALE")', { timeout: 30_000 }), 'STALE once publishers were quiet past the bound');
    await publishAll(5);
    t.ok(await page.waitForSelector('#feed[data-state=ok]:text-is("feed OK")'), 'OK once they are back');
  });

  t.test('a market whose prices are not live is greyed and says why, and is live again with its next image', async (t) => {
    await publishAll(5.5);
    const mid = named('Match Odds');
    const { page } = await showing(tab, quiet.url + CRICKET);
    await bookState(page, mid, 'open');
    const book = `.book[data-mid="${mid}"]`;
    t.equal(await page.textContent(`${book} .fresh`), '', 'live: nothing said');
    await ingest(quiet, { kind: 'stale', mid, why: 'late' });
    await page.waitForSelector(`${book}[data-fresh=late]`);
    t.equal(await page.textContent(`${book} .fresh`), 'Not live: late data');
    t.equal(await page.$eval(`${book} tbody`, (b) => getComputedStyle(b).opacity), '0.35', 'its prices are greyed, though the market is open');
    const other = books.find((b) => b.mid !== mid)!.mid;
    t.equal(await page.$(`.book[data-mid="${other}"][data-fresh]`), null, 'other books stay live');
    await ingest(quiet, image(mid, books.find((b) => b.mid === mid)!.rids, 5.6));
    await page.waitForSelector(`${book}:not([data-fresh])`);
    t.equal(await page.textContent(`${book} .fresh`), '', 'live again');
  });

  t.test('a phone-sized screen keeps the best prices and drops the deeper levels', async (t) => {
    await publishAll(6);
    // Loaded at that size, as a phone would; the tab is its usual size again for the tests after.
    await tab.page.setViewportSize({ width: 390, height: 844 });
    t.teardown(() => tab.page.setViewportSize({ width: 1280, height: 900 }));
    const { page } = await visit(tab, quiet.url + CRICKET);
    const first = `.book[data-mid="${named('Match Odds')}"] tbody tr:first-child`;
    await page.waitForSelector(`${first} .c.b.d1 b:not(:empty)`);
    t.ok(await page.isVisible(`${first} .c.b.d1`), 'best back shown');
    t.ok(await page.isVisible(`${first} .c.l.d1`), 'best lay shown');
    t.notOk(await page.isVisible(`${first} .c.b.d3`), 'third level hidden');
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    t.equal(overflow, 0, 'no sideways scrolling of the page');
  });

  t.test('with AUTH=on the page passes its ?key= to REST and to the socket', async (t) => {
    const secured = await startTestService(t, { AUTH: 'on' });
    const key = (await createKey(secured.pool, 'viewer', 'subscriber')).token;
    // A key made through the pool works once the service has had its NOTIFY.
    await keyLive(secured.url, key);
    const { page, sockets } = await visit(tab, `${secured.url}/?key=${key}`);
    await page.waitForSelector('#conn[data-state=live]');
    await page.waitForSelector('#sports button');
    t.equal(await page.textContent('#sports button'), 'Soccer', 'the sports came over REST with the key');
    t.match(sockets[0].url(), `key=${key}`);
    const keyless = await visit(tab, `${secured.url}/`);
    await keyless.page.waitForSelector('#notice:not([hidden])');
    t.match(await keyless.page.textContent('#notice'), /\?key=/, 'without a key the page says how to give one');
  });
}
