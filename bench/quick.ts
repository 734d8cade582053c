/**
 * `npm run bench`: the headline ratios in under three minutes. Runs short forms of `rest.ts` (one
 * round of 1 s per server on a cached and a cache-miss route) and `fanout.ts` (1,000 sockets: the
 * ramp on JSON for the service, the baseline, Socket.IO and the ceiling, the firehose after the
 * service's, the baseline's and the ceiling's; then protobuf and JSON with permessage-deflate on
 * the service, one step at the highest rate all of those held; then mixed subscriptions against
 * plain ones on the service, 10,000 sockets at 100,000 deliveries/s), each in its own process as
 * `npm run bench:rest` and `npm run bench:fanout` would, `deltas.ts` (delta frames against
 * images: bytes per change and CPU per delivery) and `delay.ts` (exchange-to-socket delay for
 * 1,000 subscribers of a recorded-shape market, 15 s per server) and `age.ts` (the age of prices
 * at the screen for readers at full speed and on a 40 KB/s link), then writes one table of ratios to
 * bench/results/bench.md (and bench.json), beside the two runs' own reports (rest-quick.*,
 * fanout-quick.*).
 *
 * Every setting of the two runs can still be given in the environment (see bench/README.md);
 * the quick defaults apply only where it sets none. Without DATABASE_URL one embedded Postgres
 * serves both runs.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DIST, RESULTS } from './lib/paths.js';
import { machine } from './lib/proc.js';
import { fmt, mdTable, writeResults } from './lib/report.js';
import { log, runMain } from './lib/run.js';
import { prepareDatabase } from './lib/data.js';

const REST_DEFAULTS: Record<string, string> = {
  BENCH_SECONDS: '1', BENCH_ROUNDS: '1', BENCH_WARMUP: '0.5', BENCH_ROUTES: 'markets,markets-miss', BENCH_PROFILE: 'off',
  BENCH_QUIET_MS: '3000', BENCH_ATTEMPTS: '2', BENCH_RESULTS_NAME: 'rest-quick',
};
const FANOUT_DEFAULTS: Record<string, string> = {
  BENCH_SECONDS: '1', BENCH_SOCKETS: '1000', BENCH_FORMATS: 'json,proto,deflate', FANOUT_PEER_FORMATS: 'json', FANOUT_RAMP_FORMATS: 'json', FANOUT_MEMORY: 'off',
  FANOUT_HALF_MAX: 'off', BENCH_PROFILE: 'off', BENCH_QUIET_MS: '3000', BENCH_ATTEMPTS: '2', BENCH_RESULTS_NAME: 'fanout-quick',
  FANOUT_FIREHOSE_SERVERS: 'service,baseline,ceiling', FANOUT_FIREHOSE_SECONDS: '1', FANOUT_MIXED_RATE: '100000',
};

/** The environment for a run: the caller's settings win over the quick defaults. */
function envFor(defaults: Record<string, string>, databaseUrl: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: databaseUrl };
  for (const [k, v] of Object.entries(defaults)) if (!env[k]) env[k] = v;
  return env;
}

function run(script: string, env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, [join(DIST, 'bench', script)], { env, stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('exit', (code) => (code === 0 ? ok() : fail(new Error(`${script} exited with ${code}`))));
    child.on('error', fail);
  });
}

const readJson = (name: string): any => JSON.parse(readFileSync(join(RESULTS, `${name}.json`), 'utf8'));
const x = (v: number, suffix = 'x') => (Number.isFinite(v) ? `${v.toFixed(1)}${suffix}` : '–');
const pct = (v: number) => (Number.isFinite(v) ? `${(100 * v).toFixed(0)}%` : '–');
/** A ratio to a run's best held rate; the JSON keeps one no paced step held as null. */
const held = (v: number | null) => (v !== null && Number.isFinite(v) ? `${v.toFixed(2)}x` : '–');

/** The headline table as it is built: a row per measure, and notes on what went wrong. */
interface Table {
  rows: string[][];
  notes: string[];
}

/** REST: req/s and CPU per request of each route, against each other server. */
function restRows(rest: any, { rows, notes }: Table): void {
  for (const route of rest.settings.routes as string[]) {
    const r = rest.summary[route];
    const what = `REST \`${route}\` (${route.endsWith('-miss') ? 'cache miss' : route === 'health' ? 'no data' : 'cached'})`;
    rows.push([`${what}: req/s`, fmt(r.service.reqPerSec), x(r.xBaseline), x(r.xFastify), pct(r.ofCeiling)]);
    rows.push([`${what}: CPU µs/request`, r.service.cpuUsPerReq.toFixed(1), x(r.cpuXBaseline), x(r.cpuXFastify), pct(r.cpuOfCeiling)]);
    for (const [peer, same] of Object.entries(r.identical as Record<string, string>)) {
      if (!same.startsWith('10/10')) notes.push(`${peer} did not answer \`${route}\` with the service's bytes: ${same}`);
    }
  }
}

/** Fan-out ramps: the highest rate held and the CPU per delivery, at one rate and each at its own best. */
function rampRows(fanout: any, { rows }: Table): void {
  type Ratio = {
    sockets: number; format: string; vs: string; present: boolean; referenceRate: number; heldRatio: number; cpuRatio: number; cpuAtMaxRatio: number; serviceCpuNs: number;
  };
  const ratios = fanout.ratios as Ratio[];
  const held = (impl: string, format: string, n: number) => fanout.results.find((r: any) => r.impl === impl && r.format === format && r.sockets === n)?.maxHeld;
  for (const n of fanout.settings.sockets as number[]) {
    for (const format of [...new Set(ratios.filter((r) => r.sockets === n && r.present).map((r) => r.format))]) {
      const of = (vs: string) => ratios.find((r) => r.sockets === n && r.format === format && r.vs === vs && r.present);
      const any = ratios.find((r) => r.sockets === n && r.format === format)!;
      const m = held('service', format, n);
      const what = `fan-out ${format}, ${fmt(n)} sockets`;
      rows.push([`${what}: max held deliveries/s`, m ? fmt(m.deliveriesPerSec) : 'none', x(of('baseline')?.heldRatio ?? NaN), x(of('socketio')?.heldRatio ?? NaN), pct(of('ceiling')?.heldRatio ?? NaN)]);
      rows.push([`${what}: CPU ns/delivery at ${fmt(any.referenceRate)}/s`, fmt(any.serviceCpuNs), x(of('baseline')?.cpuRatio ?? NaN), x(of('socketio')?.cpuRatio ?? NaN), pct(of('ceiling')?.cpuRatio ?? NaN)]);
      rows.push([`${what}: CPU ns/delivery, each at its max held`, m ? fmt(m.cpuNsPerDelivery) : '–', x(of('baseline')?.cpuAtMaxRatio ?? NaN), x(of('socketio')?.cpuAtMaxRatio ?? NaN), pct(of('ceiling')?.cpuAtMaxRatio ?? NaN)]);
    }
  }
}

/** The firehose: deliveries/s against each server's, as a share of its own best held rate, and the newest-image check. */
function firehoseRows(fanout: any, { rows, notes }: Table): void {
  type Firehose = {
    sockets: number; impl: string; format: string; deliveriesPerSec: number; ofBestHeld: number | null; framesPerWrite: number | null; acksPerSec: number; refused: number;
    ackMeanMs: number; newestStale: number; newestChecked: number; closedSockets: number;
  };
  const firehoses = (fanout.firehoses ?? []) as Firehose[];
  for (const n of [...new Set(firehoses.map((f) => f.sockets))]) {
    for (const format of [...new Set(firehoses.filter((f) => f.sockets === n).map((f) => f.format))]) {
      const of = (impl: string) => firehoses.find((f) => f.sockets === n && f.format === format && f.impl === impl);
      const s = of('service');
      if (!s) continue;
      const vs = (impl: string) => (of(impl) ? s.deliveriesPerSec / of(impl)!.deliveriesPerSec : NaN);
      const what = `fan-out firehose ${format}, ${fmt(n)} sockets`;
      rows.push([`${what}: deliveries/s`, fmt(s.deliveriesPerSec), x(vs('baseline')), x(vs('socketio')), pct(vs('ceiling'))]);
      rows.push([`${what}: of its own best held rate (target ≥ 0.9x for the service)`, held(s.ofBestHeld),
        ...['baseline', 'socketio', 'ceiling'].map((impl) => (of(impl) ? `${held(of(impl)!.ofBestHeld)} (its own)` : '–'))]);
      rows.push([`${what}: frames per write system call · acks/s (refused) · mean ack delay · newest image`,
        `${s.framesPerWrite === null ? '–' : s.framesPerWrite.toFixed(1)} · ${fmt(s.acksPerSec)} (${fmt(s.refused)}) · ${s.ackMeanMs.toFixed(0)} ms · ` +
          (s.newestStale || s.closedSockets ? `${fmt(s.newestStale)} of ${fmt(s.newestChecked)} stale, ${fmt(s.closedSockets)} sockets closed` : 'newest everywhere'), '', '', '']);
      for (const impl of ['baseline', 'socketio', 'ceiling']) {
        const o = of(impl);
        if (o && (o.newestStale || o.closedSockets)) notes.push(`in the firehose at ${fmt(n)} sockets, ${impl} left ${fmt(o.newestStale)} of ${fmt(o.newestChecked)} (socket, market) pairs on an old image (${fmt(o.closedSockets)} sockets closed)`);
      }
    }
  }
}

/** Mixed subscriptions against plain ones, CPU per frame delivered. */
function mixedRows(fanout: any, { rows, notes }: Table): void {
  type Mixed = { sockets: number; cpuRatio: number; refused: number; plain: { cpuNsPerDelivery: number; deliveriesPerSec: number }; mixed: { cpuNsPerDelivery: number; deliveriesPerSec: number } };
  for (const m of (fanout.mixed ?? []) as Mixed[]) {
    rows.push([`mixed subscriptions, ${fmt(m.sockets)} sockets: CPU ns per frame delivered, mixed ÷ plain (target ≤ 1.3x)`,
      `${fmt(m.mixed.cpuNsPerDelivery)} ÷ ${fmt(m.plain.cpuNsPerDelivery)} = ${m.cpuRatio.toFixed(2)}x (${fmt(m.mixed.deliveriesPerSec)} and ${fmt(m.plain.deliveriesPerSec)} deliveries/s)`, '', '', '']);
    if (m.refused) notes.push(`the service refused ${m.refused} mixed subscribe requests`);
  }
}

/** Bytes and CPU per delivery of each encoding. */
function bandwidthRows(fanout: any, { rows }: Table): void {
  type Band = { sockets: number; format: string; referenceRate: number; maxHeld: number | null; bytesPerDelivery: number; cpuNsPerDelivery: number };
  const bands = fanout.bandwidth as Band[];
  const encoding: Record<string, string> = { json: 'JSON', proto: 'protobuf', deflate: 'JSON + permessage-deflate' };
  for (const b of bands) {
    const json = bands.find((j) => j.sockets === b.sockets && j.format === 'json');
    const versus = json && b.format !== 'json'
      ? ` (${pct(b.bytesPerDelivery / json.bytesPerDelivery)} of JSON's bytes, ${x(b.cpuNsPerDelivery / json.cpuNsPerDelivery)} its CPU)` : '';
    rows.push([`bandwidth, ${encoding[b.format]}, ${fmt(b.sockets)} sockets: bytes · CPU ns per delivery at ${fmt(b.referenceRate)}/s`,
      `${b.bytesPerDelivery.toFixed(0)} B · ${fmt(b.cpuNsPerDelivery)} ns${versus}`, '', '', '']);
  }
}

/** Deltas against images: bytes per change and CPU per delivery. */
function deltaRows({ rows }: Table): void {
  type DeltaBytes = { runners: number; format: string; depth: number; ratio: number };
  type DeltaCpu = { format: string; delta: boolean; cpuNsPerDelivery: number };
  const deltas = readJson('deltas') as { bytes: DeltaBytes[]; cpu: DeltaCpu[] };
  const encodings: Record<string, string> = { json: 'JSON', proto: 'protobuf' };
  for (const format of ['json', 'proto']) {
    for (const depth of [10, 3]) {
      const shapes = deltas.bytes.filter((b) => b.format === format && b.depth === depth).map((b) => `${b.ratio.toFixed(3)}x (${b.runners} runners)`);
      rows.push([`deltas, ${encodings[format]}, depth ${depth}: bytes per change, delta ÷ image (target ≤ ${depth === 10 ? '0.15' : '0.25'}x)`, shapes.join(' · '), '', '', '']);
    }
    const of = (delta: boolean) => deltas.cpu.find((c) => c.format === format && c.delta === delta)!;
    rows.push([`deltas, ${encodings[format]}: server CPU ns per delivery, deltas ÷ images at one rate (target ≤ 1x)`,
      `${fmt(of(true).cpuNsPerDelivery)} ÷ ${fmt(of(false).cpuNsPerDelivery)} = ${(of(true).cpuNsPerDelivery / of(false).cpuNsPerDelivery).toFixed(2)}x`, '', '', '']);
  }
}

/** Exchange-to-socket delay, the service against the ceiling. */
function delayRow({ rows }: Table): void {
  type DelayRow = { impl: string; fromSource: { p50: number; p99: number; max: number } };
  const delay = readJson('delay') as { settings: { sockets: number }; shape: { changesPerSecond: number }; rows: DelayRow[]; adds: { p50: number; p99: number } };
  const at = (impl: string) => delay.rows.find((r) => r.impl === impl)!.fromSource;
  const ms = (r: { p50: number; p99: number; max: number }) => `${r.p50.toFixed(1)} · ${r.p99.toFixed(1)} · ${r.max.toFixed(1)} ms`;
  rows.push([`exchange-to-socket delay, ${fmt(delay.settings.sockets)} subscribers, a recorded-shape market at its pace (${delay.shape.changesPerSecond} changes/s): p50 · p99 · max`,
    ms(at('service')), '', '', `ceiling ${ms(at('ceiling'))}; the service adds ${delay.adds.p50.toFixed(1)} ms at p50, ${delay.adds.p99.toFixed(1)} ms at p99`]);

}

/** The age of prices at the screen: per kind of screen, the age while live at the steady rate and in bursts, past the bound, and how soon a slow one is told. */
function ageRows({ rows, notes }: Table): void {
  type Spread = { p50: number; p99: number; max: number };
  type PhaseRow = { group: string; kind: 'steady' | 'burst'; live: number; liveAge: Spread; pastBound: number };
  type NoticeRow = { group: string; toldAfter: { n: number; p50: number; max: number }; priceAge: { n: number; max: number }; others: Record<string, number>; closes: string[] };
  type CpuRow = { kind: string; perSecond: number; cpuNsPerDelivery: number };
  const age = readJson('age') as { settings: { rate: number; burstRate: number }; phases: PhaseRow[]; notices: NoticeRow[]; cpu: CpuRow[] };
  const ms = (v: number) => (Number.isFinite(v) ? (v < 10 ? v.toFixed(1) : fmt(v)) : '–');
  const trio = (r: PhaseRow | undefined) => (r?.live ? `${ms(r.liveAge.p50)} · ${ms(r.liveAge.p99)} · ${ms(r.liveAge.max)} ms` : 'none read live');
  for (const n of age.notices) {
    const of = (kind: string) => age.phases.find((p) => p.group === n.group && p.kind === kind);
    const live = age.phases.filter((p) => p.group === n.group).reduce((a, p) => [a[0] + p.pastBound, a[1] + p.live], [0, 0]);
    const told = n.toldAfter.n ? `; told behind ${n.toldAfter.n}x, ${ms(n.toldAfter.p50)} · ${ms(n.toldAfter.max)} ms after falling behind (its price then at most ${ms(n.priceAge.max)} ms old)` : '; never told behind';
    rows.push([`age at the screen, ${n.group}: p50 · p99 · max while live, steady and in bursts; read past the bound while live; told behind`,
      `${age.settings.rate} batches/s ${trio(of('steady'))}, ${age.settings.burstRate}/s ${trio(of('burst'))}; past the bound ${fmt(live[0])} of ${fmt(live[1])}${told}`, '', '', '']);
    for (const [why, count] of Object.entries(n.others)) notes.push(`in the age run, ${n.group} held markets not live for \`${why}\` ${count} times`);
    if (n.closes.length) notes.push(`in the age run, ${n.group}: ${n.closes.slice(0, 3).join('; ')}`);
  }
  rows.push(['age at the screen: server CPU ns per delivery at the steady rate · in bursts', age.cpu.map((c) => `${fmt(c.cpuNsPerDelivery)} (${fmt(c.perSecond)}/s)`).join(' · '), '', '', '']);
}

async function main(): Promise<void> {
  const started = Date.now();
  // One database server for both runs; each run re-creates its database on it.
  const db = process.env.DATABASE_URL ? undefined : await prepareDatabase();
  const databaseUrl = process.env.DATABASE_URL ?? db!.url;
  const restEnv = envFor(REST_DEFAULTS, databaseUrl);
  const fanoutEnv = envFor(FANOUT_DEFAULTS, databaseUrl);
  const deltaEnv = envFor({ BENCH_SECONDS: '3' }, databaseUrl);
  const delayEnv = envFor({ DELAY_SECONDS: '15' }, databaseUrl);
  const ageEnv = envFor({ BENCH_QUIET_MS: '3000', BENCH_ATTEMPTS: '2' }, databaseUrl);
  try {
    log('REST (npm run bench:rest, short form)');
    await run('rest.js', restEnv);
    log('fan-out (npm run bench:fanout, short form)');
    await run('fanout.js', fanoutEnv);
    log('deltas against images');
    await run('deltas.js', deltaEnv);
    log('exchange-to-socket delay');
    await run('delay.js', delayEnv);
    log('the age of prices at the screen');
    await run('age.js', ageEnv);
  } finally {
    await db?.stop();
  }

  const rest = readJson(restEnv.BENCH_RESULTS_NAME!);
  const fanout = readJson(fanoutEnv.BENCH_RESULTS_NAME!);
  const table: Table = { rows: [], notes: [] };
  restRows(rest, table);
  rampRows(fanout, table);
  firehoseRows(fanout, table);
  mixedRows(fanout, table);
  bandwidthRows(fanout, table);
  deltaRows(table);
  delayRow(table);
  ageRows(table);
  const { rows, notes } = table;

  const host = machine();
  const elapsed = (Date.now() - started) / 1000;
  const ratios = mdTable(['measure', 'service', 'vs baseline (node:http / ws)', 'vs peer (fastify / Socket.IO)', 'vs ceiling (bare uWS)'], rows);
  const md = [
    '## Headline ratios (npm run bench)',
    '',
    `${host.cpu}, ${host.cores} cores, Node ${process.version}; ${rest.pinning}; ${rest.database}; both runs took ${elapsed.toFixed(0)} s. ` +
      'Every server ran in the same run, one at a time on core 0, the load generators on core 1. ' +
      'Throughput (req/s, deliveries/s): service ÷ other. CPU: other ÷ service, so above 1x the service uses less (the baseline\'s and ' +
      'fastify\'s Postgres backends count, the service reads memory). Against the ceiling: the service\'s throughput as a share of ' +
      'the ceiling\'s, and the ceiling\'s CPU as a share of the service\'s (100% = as cheap as bare uWS). Fan-out CPU is compared at ' +
      'the highest ramp rate every server held, and with each at its own highest rate held. The firehose rows: the publisher ' +
      'pipelines batches on `/ingest` without waiting for acks, and each server\'s delivered rate is set against its own best held ' +
      'paced rate; mixed subscriptions: the service\'s CPU per frame delivered with depths and conflation mixed against plain ' +
      'subscriptions, same sockets and publish rate. Absolute figures drift on a shared machine; the ratios are the result.',
    ...notes.map((n) => `Note: ${n}.`),
    '',
    ratios,
    '',
    `Details: \`bench/results/${restEnv.BENCH_RESULTS_NAME}.md\`, \`bench/results/${fanoutEnv.BENCH_RESULTS_NAME}.md\`, \`bench/results/deltas.md\`, \`bench/results/delay.md\` and \`bench/results/age.md\`.`,
  ].join('\n');
  const files = writeResults('bench', { benchmark: 'quick', at: new Date().toISOString(), machine: host, elapsedSeconds: elapsed, rows, notes }, md);
  process.stdout.write('\n' + md + '\n\n');
  log(`wrote ${files.md} in ${elapsed.toFixed(0)} s`);
}

runMain('bench', main);
