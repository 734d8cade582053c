/**
 * bench:delay's market: a recorded-shape Betfair market of our own making. The shapes are the
 * exchange adapter's test recordings' (test/exchange/fixtures.ts: a soccer match odds market,
 * full-depth ladders moving on the exchange's tick ladder, suspensions, traded volumes), put
 * through the adapter's own translation (src/exchange/translate.ts) into the ingest items a
 * publisher sends. The pacing is an in-play market's on the stream, drawn from a seed: most
 * changes 40 to 250 ms apart, some lulls to a second, a few of one to three seconds (the test
 * recordings space messages 0.1 to 3 s apart, a pre-play pace). The same recording every run.
 */
import { seeded } from '../../src/lib/random.js';
import { Translator } from '../../src/exchange/translate.js';
import type { IngestItemInput } from '../../src/odds/messages.js';
import { matchOdds } from '../../test/exchange/fixtures.js';

const STEPS = 6000;
const SEED = 29;

export interface Change {
  /** Recorded time since the change before. */
  gapMs: number;
  /** What the publisher sends for it: the market's image, and any reference item the message carried. */
  items: IngestItemInput[];
}

export interface Recording {
  mid: string;
  /** What a fresh service needs before the replay starts: the sport, league, event and market as the recording left them. */
  reference: IngestItemInput[];
  /** From the kick-off on. */
  changes: Change[];
}

/** An in-play gap between two changes, in ms. */
function gap(rand: () => number): number {
  const r = rand();
  if (r < 0.8) return 40 + rand() * 210;
  if (r < 0.97) return 250 + rand() * 750;
  return 1000 + rand() * 2000;
}

export function recording(): Recording {
  const rand = seeded(SEED);
  const translator = new Translator();
  const reference: IngestItemInput[] = [];
  const changes: Change[] = [];
  for (const [i, message] of matchOdds(STEPS, SEED).entries()) {
    const { items, problems } = translator.translate(message, `message ${i}`);
    if (problems.length) throw new Error(`the recording does not translate: ${problems.join('; ')}`);
    const inPlay = items.some((x) => x.kind === 'odds' && x.ip === true);
    if (!inPlay && !changes.length) {
      reference.push(...items.filter((x) => x.kind !== 'odds'));
      continue;
    }
    // The settlement ends the market; the replay stops by the clock well before it.
    if (items.some((x) => x.kind === 'result')) break;
    changes.push({ gapMs: changes.length ? gap(rand) : 0, items });
  }
  const mid = changes[0]?.items.find((x) => x.kind === 'odds')?.mid;
  if (typeof mid !== 'string') throw new Error('the recording has no in-play image');
  return { mid, reference, changes };
}

/** What the recording holds, for the report: changes a second at its pace, and levels per image. */
export function shapeOf(rec: Recording): Record<string, number> {
  const images = rec.changes.flatMap((c) => c.items.filter((x) => x.kind === 'odds')) as unknown as { r: { b: unknown[]; l: unknown[] }[] }[];
  const spanMs = rec.changes.reduce((a, c) => a + c.gapMs, 0);
  return {
    changes: rec.changes.length,
    changesPerSecond: Math.round((1000 * rec.changes.length * 100) / spanMs) / 100,
    runners: images[0].r.length,
    levelsPerImage: Math.round((images.reduce((a, x) => a + x.r.reduce((b, r) => b + r.b.length + r.l.length, 0), 0) / images.length) * 10) / 10,
  };
}
