/**
 * The simulator's feed over a fake of the ingest path that answers when the test says: one batch
 * in flight, of at most the service's items a batch; while one is in flight a market's newer
 * image takes the place of the one waiting, so what waits stays one image a market.
 */
import t from 'tap';
import { SimFeed, type SimIngest } from '../../src/demo/feed.js';
import type { BatchItems } from '../../src/ingest/batch.js';
import type { IngestResult } from '../../src/ingest/ingest.js';
import { createLogger } from '../../src/log.js';
import type { OddsImage } from '../../src/odds/image.js';
import type { WireOddsImage } from '../../src/odds/messages.js';
import type { Feeder } from '../../src/relay/freshness.js';

class SlowIngest implements SimIngest {
  /** The items of each batch taken, as read. */
  readonly batches: unknown[][] = [];
  private answers: (() => void)[] = [];

  read(data: unknown): BatchItems {
    this.batches.push(data as unknown[]);
    return { count: (data as unknown[]).length, reference: [], odds: [] };
  }

  accept(): Promise<IngestResult> {
    return new Promise((ok) => this.answers.push(() => ok({ count: 0, inserted: 0, updated: 0, refused: [] })));
  }

  /** Answers the batch in flight; resolves once the feed had its turn to send the next. */
  async answer(): Promise<void> {
    this.answers.shift()!();
    await new Promise((next) => setImmediate(next));
  }

  get inFlight(): number {
    return this.answers.length;
  }
}

const image = (mid: string, ts: number): OddsImage => ({ marketId: mid, sourceTime: ts, status: 'OPEN', inPlay: false, runners: [] });
/** What the feed sent, as the items a publisher sends. */
const sent = (batch: unknown[]) => batch.map((i) => `${(i as WireOddsImage).mid}@${(i as WireOddsImage).ts}`);

t.test('one batch at a time; a market\'s newest image waits in its place; batches of at most the items allowed', async (t) => {
  const ingest = new SlowIngest();
  const warnings: string[] = [];
  const feed = new SimFeed({ ingest, feeder: {} as Feeder, maxItems: 2, log: createLogger('warn', false, (l) => warnings.push(l)) });
  feed.publish([image('1.1', 1), image('1.2', 1)]);
  t.same(ingest.batches.map(sent), [['1.1@1', '1.2@1']], 'the first tick goes at once');
  // Three more ticks while it is in flight: 1.1 and 1.2 move twice, 1.3 and 1.4 appear.
  feed.publish([image('1.1', 2), image('1.3', 2)]);
  feed.publish([image('1.1', 3), image('1.2', 3), image('1.4', 3)]);
  t.equal(ingest.inFlight, 1, 'nothing more while one is in flight');
  t.equal(feed.size, 4, 'one image a market waits');
  await ingest.answer();
  t.same(ingest.batches.map(sent).slice(1), [['1.1@3', '1.3@2']], 'then the newest image of each, in the order the markets first waited, two a batch');
  await ingest.answer();
  t.same(ingest.batches.map(sent).slice(2), [['1.2@3', '1.4@3']]);
  await ingest.answer();
  t.equal(ingest.inFlight, 0);
  t.equal(feed.size, 0);
  t.same(warnings, []);
});

t.test('a refused batch is logged and the next goes; stopped, what waits is dropped', async (t) => {
  const warnings: string[] = [];
  let calls = 0;
  const ingest: SimIngest = {
    read: (data) => ({ count: (data as unknown[]).length, reference: [], odds: [] }),
    accept: () => (++calls === 1 ? Promise.reject(new Error('the database is unavailable')) : new Promise<IngestResult>(() => undefined)),
  };
  const feed = new SimFeed({ ingest, feeder: {} as Feeder, maxItems: 10, log: createLogger('warn', false, (l) => warnings.push(l)) });
  feed.publish([image('1.1', 1)]);
  feed.publish([image('1.2', 2)]);
  await new Promise((next) => setImmediate(next));
  t.equal(calls, 2, 'the next batch went after the refusal');
  t.match(warnings, [/simulator batch refused.*the database is unavailable/]);
  feed.publish([image('1.3', 3)]);
  t.equal(feed.size, 1);
  feed.stop();
  t.equal(feed.size, 0);
});
