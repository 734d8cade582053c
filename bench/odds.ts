/**
 * What the service's own names for an odds image cost (`npm run bench:odds`; alone: `node
 * dist/bench/odds.js` after a build). The wire's keys are read into an `OddsImage` where an ingest
 * item is decoded and written back where a frame is encoded (src/odds/image.ts); this times both
 * translations against the same work without them, in one process and one run, on real-shaped
 * markets (`lib/ladders.ts`: 10 runners, 10 levels a side):
 *
 * 1. Ingest: a batch of ODDS_BATCH images decoded (JSON text, protobuf bytes) with nothing more,
 *    then decoded and translated (the wire's keys copied into the image's, no checks), then
 *    decoded and read as ingest reads it (`validateOddsItem`: every check, and the translation).
 * 2. Fan-out: an image's frame encoded (JSON, protobuf; full depth and depth 3) from a message
 *    built beforehand in the wire's keys, then from the image, as the book encodes it
 *    (`oddsMessage`, then the codec), once per variant whatever the subscribers.
 * 3. Each translation alone (the keys copied from decoded items; messages built from images),
 *    as a share of the decode or encode it is part of: too small for the steps above to tell
 *    apart from the machine's noise.
 *
 * Garbage is collected before each timed step; the steps take turns, round after round
 * (ODDS_ROUNDS), in a new order each round, so a busy spell of the machine falls on all of them, and each reports its
 * median round in ns of this process's CPU per image (CPU, not wall time: on a shared machine the
 * time a step waits for a core is not its cost), and against the same work without the
 * translation the median of the ratios of the two, round by round. The machine's load (load average, and the CPU other processes
 * used during the run) is reported beside the figures.
 */
import { readFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { validateOddsItem } from '../src/ingest/validate-odds.js';
import { encodeJson, encodeProto } from '../src/odds/codec.js';
import { oddsMessage, type OddsImage, type RunnerPrices } from '../src/odds/image.js';
import { decodeIngestProto, encodeIngestProto } from '../src/odds/ingest-codec.js';
import type { OddsMessage, RunnerOdds, WireOddsImage } from '../src/odds/messages.js';
import { envNumber } from './lib/env.js';
import { LadderMarket } from './lib/ladders.js';
import { machine } from './lib/proc.js';
import { Noise } from './lib/quiet.js';
import { fmt, mdTable, writeResults } from './lib/report.js';
import { log, runMain } from './lib/run.js';

/** Every setting (env), read once; the header lists them with their defaults. */
const SETTINGS = Object.freeze({
  batch: Math.round(envNumber('ODDS_BATCH', 50)),
  batches: Math.round(envNumber('ODDS_BATCHES', 40)),
  rounds: Math.round(envNumber('ODDS_ROUNDS', 21)),
});
const RUNNERS = 10;
const HEAD = { epoch: 'mbench', seq: 1, publishTime: 1_700_000_000_000 };

// A real gc() without --expose-gc on the command line: the flag can be set at run time.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Whatever a step produced, summed, so no step's work can be left out as unused. */
let sink = 0;

/** The wire's keys copied into the image's and nothing checked: the translation alone, as validate-odds.ts does it beside its checks. */
function translate(w: WireOddsImage): OddsImage {
  const runners = w.r.map((x: RunnerOdds) => {
    const out: RunnerPrices = { runnerId: x.rid, status: x.st, back: x.b, lay: x.l };
    if (x.ltp !== undefined) out.lastTraded = x.ltp;
    if (x.tv !== undefined) out.tradedVolume = x.tv;
    return out;
  });
  const image: OddsImage = { marketId: w.mid, sourceTime: w.ts, status: w.st, inPlay: w.ip, runners };
  if (w.sr !== undefined) image.suspensionReason = w.sr;
  if (w.tv !== undefined) image.tradedVolume = w.tv;
  return image;
}

interface Inputs {
  json: Buffer[];
  proto: Uint8Array[];
  images: OddsImage[];
  /** The same images' messages, built beforehand: what encoding costs without the translation. */
  messages: Map<number, OddsMessage[]>;
}

/** Batches of real-shaped changes in both formats, and the images they carry with their messages at each depth. */
function inputs(): Inputs {
  const markets = Array.from({ length: SETTINGS.batch }, (_, i) => new LadderMarket(`1.${900000 + i}`, RUNNERS, i + 1));
  const json: Buffer[] = [];
  const proto: Uint8Array[] = [];
  const images: OddsImage[] = [];
  for (let b = 0; b < SETTINGS.batches; b++) {
    const data = markets.map((m) => m.next());
    json.push(Buffer.from(JSON.stringify({ id: b + 1, data })));
    proto.push(encodeIngestProto(data));
    for (const item of data) {
      const read = validateOddsItem(item);
      if ('error' in read) throw new Error(read.error);
      images.push(read.image);
    }
  }
  const messages = new Map([0, 3].map((depth) => [depth, images.map((image) => oddsMessage(image, HEAD, depth))]));
  return { json, proto, images, messages };
}

type Items = Record<string, unknown>[];
const fromJson = (b: Buffer): Items => (JSON.parse(b.toString('utf8')) as { data: Items }).data;
function fromProto(b: Uint8Array): Items {
  const d = decodeIngestProto(b, SETTINGS.batch);
  if ('error' in d) throw new Error(d.error);
  return d.data as Items;
}

interface Step {
  what: string;
  /** The step it is put against: the same work without the translation, or, for the translation alone, the work it is part of. */
  base?: string;
  images: number;
  run: () => void;
}

/** Decode only, decode and translate, decode and read, in one format. */
function ingestSteps<B>(format: 'JSON' | 'protobuf', batches: B[], decode: (b: B) => Items): Step[] {
  const images = batches.length * SETTINGS.batch;
  const each = (f: (items: Items) => void) => () => {
    for (const b of batches) f(decode(b));
  };
  const base = `${format} decode`;
  return [
    { what: base, images, run: each((items) => (sink += items.length)) },
    { what: `${format} decode + translate`, base, images, run: each((items) => { for (const o of items) sink += translate(o as unknown as WireOddsImage).runners.length; }) },
    { what: `${format} decode + read (checks and translation)`, base, images, run: each((items) => { for (const o of items) sink += 'image' in validateOddsItem(o) ? 1 : 0; }) },
  ];
}

/** Encoding a frame from a prebuilt message, then from the image, per format and depth. */
function encodeSteps(input: Inputs): Step[] {
  const out: Step[] = [];
  const images = input.images.length;
  for (const [format, encode] of [['JSON', (m: OddsMessage) => encodeJson(m).length], ['protobuf', (m: OddsMessage) => encodeProto(m).byteLength]] as const) {
    for (const depth of [0, 3]) {
      const prebuilt = input.messages.get(depth)!;
      const base = `${format} encode, depth ${depth || 'all'}, from the message`;
      out.push(
        { what: base, images, run: () => { for (const m of prebuilt) sink += encode(m); } },
        { what: `${format} encode, depth ${depth || 'all'}, from the image`, base, images, run: () => { for (const i of input.images) sink += encode(oddsMessage(i, HEAD, depth)); } },
      );
    }
  }
  return out;
}

/** The translations alone, each put against the step it is part of: its share of it. */
function aloneSteps(input: Inputs): Step[] {
  const images = input.images.length;
  const decoded = input.json.map(fromJson);
  return [
    { what: 'translate alone (items already decoded)', base: 'JSON decode', images, run: () => { for (const items of decoded) for (const o of items) sink += translate(o as unknown as WireOddsImage).runners.length; } },
    ...[0, 3].map((depth): Step => ({
      what: `message from the image alone, depth ${depth || 'all'}`, base: `JSON encode, depth ${depth || 'all'}, from the message`, images,
      run: () => { for (const i of input.images) sink += oddsMessage(i, HEAD, depth).r.length; },
    })),
  ];
}

interface Row { step: Step; nsPerImage: number; ratio?: number }

/**
 * Every step once to warm up, then ODDS_ROUNDS rounds of all of them in turn, each after a full
 * collection: the median round per step, and against its base the median of the rounds' ratios.
 */
function measure(steps: Step[]): Row[] {
  for (const s of steps) s.run();
  const rounds = steps.map((): number[] => []);
  let seed = 1;
  for (let r = 0; r < SETTINGS.rounds; r++) {
    // A new order each round, so no step always runs after the same one (the garbage and caches it leaves).
    const order = steps.map((_, i) => i).sort(() => ((seed = (seed * 1664525 + 1013904223) >>> 0) / 2 ** 32) - 0.5);
    for (const i of order) {
      const s = steps[i];
      gc();
      const t0 = process.cpuUsage();
      s.run();
      const used = process.cpuUsage(t0);
      rounds[i].push(((used.user + used.system) * 1000) / s.images);
    }
  }
  // A step against its base round by round (they ran moments apart), then the median of those ratios.
  return steps.map((step, i) => {
    const base = steps.findIndex((x) => x.what === step.base);
    const ratio = base < 0 ? undefined : median(rounds[i].map((ns, r) => ns / rounds[base][r]));
    return { step, nsPerImage: median(rounds[i]), ratio };
  });
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const loadAverage = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

function report(rows: Row[], load: { before: string; after: string; foreignPct: number }): string {
  const table = mdTable(
    ['step', 'CPU ns per image', 'against its base'],
    rows.map((r) => [r.step.what, fmt(r.nsPerImage), r.ratio === undefined ? '' : `${fmt(r.ratio, 2)}x`]),
    ['l', 'r', 'r'],
  );
  const m = machine();
  return [
    `Odds image translation, ${SETTINGS.batches} batches of ${SETTINGS.batch} images (${RUNNERS} runners, 10 levels a side), median of ${SETTINGS.rounds} rounds`,
    '',
    table,
    '',
    'Base: the same work without the translation; for a translation alone, the decode or encode it is part of.',
    '',
    `Machine: ${String(m.cpu)}, ${String(m.cores)} cores, Node ${String(m.node)}; load average ${load.before} before, ${load.after} after; other processes used ${fmt(load.foreignPct)}% of a core during the run.`,
  ].join('\n');
}

runMain('odds', async () => {
  log(`settings ${JSON.stringify(SETTINGS)}`);
  const input = inputs();
  const steps = [...ingestSteps('JSON', input.json, fromJson), ...ingestSteps('protobuf', input.proto, fromProto), ...encodeSteps(input), ...aloneSteps(input)];
  const before = loadAverage();
  const noise = new Noise(() => []);
  const rows = measure(steps);
  const load = { before, after: loadAverage(), foreignPct: noise.foreignPct() };
  const md = report(rows, load);
  process.stdout.write(md + '\n');
  const files = writeResults('odds', { settings: SETTINGS, machine: machine(), load, sink, rows: rows.map((r) => ({ step: r.step.what, nsPerImage: r.nsPerImage, ratio: r.ratio })) }, md);
  log(`written ${files.md}`);
});
