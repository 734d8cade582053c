/**
 * The terms of a bet from the exchange to every screen: a betting day in the stream's own forms
 * (terms-day.ts: a bet delay raised as a market turns in play, adjustment factors moving, a
 * runner removed mid-market, a place market with three winners, a dead heat, a settlement
 * rolled back) replayed as `npm run replay` runs it, into the real service, read by a JSON and a
 * protobuf subscriber: each holds, at each of a market's definitions, exactly the terms that
 * definition gives, and each settlement as the exchange settled it.
 */
import t from 'tap';
import { runTool } from '../cli/processes.js';
import { tempDir } from '../helpers/temp-dir.js';
import { startTestService } from '../helpers/service.js';
import { Client } from '../helpers/ws.js';
import { Translator } from '../../src/exchange/translate.js';
import { writeRecording } from './fixtures.js';
import { DAY_EVENTS, DAY_MARKETS, PLACE, REMOVED_AT, bettingDay, definitionsOf, distinct, heldAsTheExchangeSaid, termsOf } from './terms-day.js';

type Obj = Record<string, any>;
const CLI = new URL('../../src/cli/replay.js', import.meta.url).pathname;

const day = bettingDay();
const definitions = definitionsOf(day);

t.test('the translator: a terms item at each definition whose terms moved, and only then', async (t) => {
  const tr = new Translator();
  const items = day.flatMap((m, i) => tr.translate(m, `day:${i + 1}`).items);
  for (const mid of DAY_MARKETS) {
    const sent = items.filter((x) => x.kind === 'terms' && x.mid === mid).length;
    t.equal(sent, distinct(definitions.get(mid)!.map(termsOf)).length, `${mid}: one per change`);
  }
  const removal = items.find((x) => x.kind === 'terms' && x.mid === PLACE && (x.r as Obj[] | undefined)?.some((r) => r.st === 'REMOVED'));
  t.match(removal?.r, [{ rid: 67001 }, { rid: 67002 }, { rid: 67003, st: 'REMOVED', af: 13.613, rd: Date.parse(REMOVED_AT) }], 'the removal names the runner, its factor and its time');
});

t.test('npm run replay: every subscriber holds each definition\'s terms in turn, and each settlement, JSON and protobuf', async (t) => {
  const svc = await startTestService(t, { DEMO_DATA: 'off' });
  const file = await writeRecording(await tempDir(t), 'day.json', day);
  const subs = await Promise.all((['json', 'proto'] as const).map((format) => Client.connect(svc.url, { format })));
  t.teardown(() => subs.forEach((s) => s.close()));
  for (const s of subs) t.equal((await s.request({ op: 'subscribe', eids: DAY_EVENTS })).status, 1);

  const r = await runTool(CLI, [file, '--speed', '20', '--url', `${svc.url.replace(/^http/, 'ws')}/ingest`], {});
  t.equal(r.code, 0, r.stderr);
  for (const s of subs) await heldAsTheExchangeSaid(t, s);
});
