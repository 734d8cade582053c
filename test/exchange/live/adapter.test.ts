/**
 * The live adapter (dist/src/cli/betfair.js, as `npm run betfair` runs it) in its own process,
 * between the local exchange protocol server and the real service, read by a subscriber over a
 * real socket: what a screen is told of a market's freshness when a change cannot be applied,
 * when the exchange goes quiet or hangs, and when the adapter is killed.
 */
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import type { ServerMessage } from '../../../src/odds/messages.js';
import { running } from '../../cli/processes.js';
import { startTestService } from '../../helpers/service.js';
import { eventually } from '../../helpers/wait.js';
import { Client } from '../../helpers/ws.js';
import { APP_KEY, EsaServer, SESSION, TEST_CA_FILE } from '../esa-server.js';
import { IMAGE, MARKET_ID, RUNNERS, clkOf } from '../esa-script.js';

const CLI = new URL('../../../src/cli/betfair.js', import.meta.url).pathname;
/** The adapter's liveness interval here: the service takes its markets as stale after two. */
const LIVE = 1000;
/** The exchange's heartbeat asked for: past two of them unheard, the adapter stops vouching. */
const EXCHANGE_BEAT = 500;
/** What this test waits for a market to go stale at most: a failure saying so, not a judgment of how soon. */
const WAIT_MS = 20_000;

const svc = await startTestService(t, { DEMO_DATA: 'off', INGEST_LATE_MS: '86400000' });
const ingest = `${svc.url.replace(/^http/, 'ws')}/ingest?live=${LIVE}`;

function adapter(t: Test, esa: EsaServer, extra: string[] = []) {
  const args = [CLI, '--app-key', APP_KEY, '--session', SESSION, '--markets', MARKET_ID, '--host', '127.0.0.1', '--port', String(esa.port),
    '--ca', TEST_CA_FILE, '--heartbeat', String(EXCHANGE_BEAT), '--url', ingest, ...extra];
  return running(t, spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] }));
}

async function subscriber(t: Test): Promise<Client> {
  const sub = await Client.connect(svc.url);
  t.teardown(() => sub.close());
  t.equal((await sub.request({ op: 'subscribe', mids: [MARKET_ID] })).status, 1);
  return sub;
}

const isFreshness = (f: ServerMessage): f is Extract<ServerMessage, { op: 'freshness' }> => f.op === 'freshness' && f.mid === MARKET_ID;

/** Whether the market is live for this subscriber: its newest freshness frame says so (none: live). */
const live = (sub: Client) => sub.frames.filter(isFreshness).at(-1)?.live ?? true;

/** The script's image published later: each test's own, told apart from the image a subscriber is given on subscribe. */
const imageAt = (later: number) => ({ ...IMAGE, clk: clkOf(later), pt: IMAGE.pt + later });

/** Waits for an image of the market at this publish time, then for the market to be live. */
async function liveAt(sub: Client, pt: number, what: string): Promise<number> {
  await sub.next((f) => f.op === 'odds' && f.mid === MARKET_ID && f.ts === pt, 20_000);
  const ok = await eventually(async () => live(sub), (v) => v, 5000);
  if (!ok) throw new Error(`${what}: the market never went live; frames: ${JSON.stringify(sub.frames.filter(isFreshness))}`);
  return sub.frames.length;
}

t.test('a change that cannot be applied: the market stale (unreliable) at once, the adapter resubscribes for a fresh image, live again', async (t) => {
  const fresh = { ...IMAGE, clk: clkOf(50), pt: IMAGE.pt + 50_000 };
  const esa = await EsaServer.start(t, [{
    play: (conn, subscription) => {
      // The first subscription gets the image; the adapter's resubscription (no clk) a fresh one.
      if (conn.subscriptions.length === 1) {
        conn.send(IMAGE);
        conn.beat(EXCHANGE_BEAT);
      } else {
        t.equal(subscription.clk, undefined, 'the resubscription asks for a fresh image: no clk');
        conn.send(fresh);
      }
    },
  }]);
  const sub = await subscriber(t);
  const run = adapter(t, esa, ['--refresh', '1000']);
  const from = await liveAt(sub, IMAGE.pt, 'the image');
  // A ladder level that is not [price, size]: the book can no longer be trusted.
  (await esa.connection(1)).send({ op: 'mcm', id: 2, clk: clkOf(1), pt: IMAGE.pt + 1000, mc: [{ id: MARKET_ID, rc: [{ id: RUNNERS.home, batb: [[0, 2.5, 'x']] }] }] });
  const stale = await sub.next(isFreshness, 5000, from);
  t.match(stale, { live: false, why: 'unreliable' }, 'stale, unreliable');
  const back = await sub.next(isFreshness, 10_000, sub.frames.indexOf(stale) + 1);
  t.match(back, { live: true }, 'live again');
  t.match(sub.frames.slice(from).filter((f) => f.op === 'odds' && f.mid === MARKET_ID).map((f) => f.op === 'odds' && f.ts), [fresh.pt], 'no image between the fault and the fresh one, which is the next');
  t.equal((await esa.connection(1)).subscriptions.length, 2, 'resubscribed once on the same connection');
  run.child.kill('SIGINT');
  t.equal(await run.exited, 0, run.stderr);
  t.match(run.stderr, /betfair: the change with clk \S+: mc\[0\]\.rc\[0\]\.batb\[0\] must be/);
  t.match(run.stdout, /, 1 resubscriptions, /);
  t.match(run.stdout, new RegExp(`^  ${MARKET_ID.replace('.', '\\.')}: 2 published, 1 not applied \\(first: .*batb\\[0\\] must be`, 'm'), 'the summary names what happened to the market');
});

t.test('an exchange that only beats: heartbeats keep the market live past two intervals; one that hangs: stale (publisher)', async (t) => {
  const image = imageAt(100_000);
  const esa = await EsaServer.start(t, [{ play: (conn) => { conn.send(image); conn.beat(EXCHANGE_BEAT); } }, { hang: true }]);
  const sub = await subscriber(t);
  const run = adapter(t, esa);
  const from = await liveAt(sub, image.pt, 'the image');
  const conn = await esa.connection(1);
  // Time measured by the exchange's own heartbeats: four liveness intervals with nothing to publish.
  const beats = conn.beats;
  const enough = 4 * LIVE / EXCHANGE_BEAT;
  await eventually(async () => conn.beats - beats, (n) => n >= enough, 4 * LIVE + 5000, 50);
  t.ok(conn.beats - beats >= enough, `the exchange sent ${conn.beats - beats} heartbeats and no data`);
  t.same(sub.frames.slice(from).filter((f) => isFreshness(f) || (f.op === 'odds' && f.mid === MARKET_ID)), [], 'no image and no word of staleness: the adapter\'s heartbeats alone kept it live');

  const hung = Date.now();
  conn.mute();
  // How soon is the units' to judge on their clocks (exchange/heartbeat.test, relay/freshness.test): here, that it comes.
  const stale = await sub.next(isFreshness, WAIT_MS, from);
  // By the time the service stamped on the stale state (its clock is this process's), not by when this busy process read it.
  const took = (stale.op === 'freshness' ? stale.at : Date.now()) - hung;
  t.match(stale, { live: false, why: 'publisher' }, 'stale: its publisher no longer vouches for it');
  t.ok(took >= LIVE, `after ${took} ms: the adapter vouched while the silence was within the exchange's heartbeat allowance, then stopped`);
  await esa.connection(2);
  run.child.kill('SIGINT');
  t.equal(await run.exited, 0, run.stderr);
  const heartbeats = Number(/, (\d+) heartbeats, /.exec(run.stdout)?.[1]);
  t.ok(heartbeats >= 2 * enough / 2, `the summary counts ${heartbeats} heartbeats`);
});

t.test('an adapter killed with SIGKILL: its market stale (publisher)', async (t) => {
  const image = imageAt(200_000);
  const esa = await EsaServer.start(t, [{ play: (conn) => { conn.send(image); conn.beat(EXCHANGE_BEAT); } }]);
  const sub = await subscriber(t);
  const run = adapter(t, esa);
  const from = await liveAt(sub, image.pt, 'the image');
  run.child.kill('SIGKILL');
  t.match(await sub.next(isFreshness, WAIT_MS, from), { live: false, why: 'publisher' });
});
