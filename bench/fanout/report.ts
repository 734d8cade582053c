/**
 * The fan-out report: one table per socket count, format and server (the highest rate held, CPU
 * and bytes per delivery at the reference rate, memory per socket), the ratios of the service
 * against each other server, bandwidth per encoding, the firehose, mixed subscriptions, the
 * targets, the profiles and every step; as Markdown (printed and written) and JSON.
 */
import { type Pinning } from '../lib/cores.js';
import { fmt, mdTable } from '../lib/report.js';
import type { Database } from '../lib/data.js';
import { profileMarkdown } from '../lib/profile.js';
import type { RunResult } from './run.js';
import { FIREHOSE_TARGET, FOREIGN_LIMIT, MIXED_TARGET, MIXED_WARM_SECONDS, NAMES, sampledFor, settings, type Format, type Impl } from './settings.js';

/** Everything a fan-out benchmark measured, with what the report says about where. */
export interface Measured {
  started: number;
  host: Record<string, unknown>;
  pinning: Pinning;
  db: Database;
  notes: string[];
  /** The socket counts run (those the open-file limit allowed). */
  counts: number[];
  results: RunResult[];
  mixedRuns: RunResult[];
  profiles: RunResult[];
}

/** The highest step target every one of these runs held (the ramps share their targets). */
export function commonHeld(rs: RunResult[]): number | undefined {
  const targets = [...new Set(rs.flatMap((r) => r.steps.map((s) => s.targetPerSec)))].sort((a, b) => b - a);
  return rs.length ? targets.find((t) => rs.every((r) => r.steps.some((s) => s.pass && Math.abs(s.targetPerSec - t) < 1))) : undefined;
}

/** What every part of the report looks up: the counts shown, each run by server, format and count, the reference rates. */
interface Context {
  m: Measured;
  shown: number[];
  refRates: Map<number, number>;
  refNote: string;
  find(impl: Impl, format: Format, n: number): RunResult | undefined;
  refRate(n: number): number;
}

const x = (a: number | undefined, b: number | undefined) => (a !== undefined && b !== undefined && Number.isFinite(a / b) ? `${(a / b).toFixed(1)}x` : '–');
const pct = (a: number | undefined, b: number | undefined) => (a !== undefined && b !== undefined && Number.isFinite(a / b) ? `${((100 * a) / b).toFixed(0)}%` : '–');

/** Sets each result's reference step, and returns the report. */
export function report(m: Measured): { md: string; json: unknown } {
  const ctx = context(m);
  const ratios = ratiosOf(ctx);
  const bandwidth = bandwidthOf(ctx);
  const firehoses = firehosesOf(m.results);
  const mixed = m.mixedRuns.filter((r) => r.mixedSubs).map((r) => ({ sockets: r.sockets, ...r.mixedSubs! }));
  const targets = targetsOf(ctx);
  const svcFirehoses = firehoses.filter((f) => f.impl === 'service');
  const firehoseMet = svcFirehoses.length > 0 && svcFirehoses.every((f) => f.ofBestHeld >= FIREHOSE_TARGET && f.newestStale === 0 && f.closedSockets === 0);
  const mixedMet = mixed.length > 0 && mixed.every((x) => x.cpuRatio <= MIXED_TARGET && x.refused === 0);
  const { results, profiles, notes } = m;
  const md = [
    '## Odds fan-out: service vs baseline, Socket.IO and ceiling',
    '',
    method(ctx),
    ...notes.map((n) => `Note: ${n}.`),
    ...results.filter((r) => r.warnings.length).map((r) => `Note: the ${NAMES[r.impl]} (${r.format}, ${fmt(r.sockets)} sockets) logged: ${r.warnings.slice(0, 3).join(' | ')}`),
    '',
    runsTable(ctx),
    '',
    `Ratios (service against each, same run; throughput by the highest rate held, CPU per delivery at the reference rate, ${ctx.refNote}):`,
    '',
    ratioTable(ctx, ratios),
    '',
    `Bandwidth (the service, at the reference rate, ${ctx.refNote}; permessage-deflate with uWS's SHARED_COMPRESSOR, which deflates each frame once per socket):`,
    '',
    bandwidthTable(bandwidth),
    '',
    ...(firehoses.length ? firehoseSection(results, svcFirehoses, firehoseMet) : []),
    ...(mixed.length ? mixedSection(mixed, mixedMet) : []),
    ...(settings.fixedRate ? [] : [targetsLine(targets), '']),
    ...(profiles.length ? ['CPU profiles of the service during fan-out:', '', ...profiles.filter((p) => p.profile).map((p) => profileMarkdown(`fan-out, ${fmt(p.sockets)} sockets`, p.profile!)), ''] : []),
    ...(results.some((r) => r.firehose?.profile) ? ['CPU profiles of the service during the firehose:', '',
      ...results.filter((r) => r.firehose?.profile).map((r) => profileMarkdown(`firehose, ${fmt(r.sockets)} sockets`, r.firehose!.profile!)), ''] : []),
    '<details><summary>Every step</summary>',
    '',
    stepsTable(results),
    '',
    '</details>',
  ].join('\n');
  const { x3, met } = targets;
  const json = {
    benchmark: 'fanout', at: new Date().toISOString(), machine: m.host, pinning: m.pinning.note, database: m.db.where, notes,
    settings: settingsJson(m.counts, ctx.refRates),
    met: { ...met, firehose: firehoseMet, mixed: mixedMet }, x3, ratios, bandwidth, firehoses, mixed, results, mixedRuns: m.mixedRuns, profiles, elapsedSeconds: (Date.now() - m.started) / 1000,
  };
  return { md, json };
}

function context(m: Measured): Context {
  const { counts, results } = m;
  const shown = settings.profile.only ? [] : counts;
  // CPU per delivery is compared at one rate per socket count: FANOUT_RATE, or the highest step of the
  // ramp (the same targets for every run) that every run held; at the highest rate each held, the
  // servers would be compared at different loads.
  const refRates = new Map(shown.map((n) => {
    const atN = results.filter((r) => r.sockets === n);
    const ramped = atN.filter((r) => r.ramped);
    return [n, settings.fixedRate ?? (ramped.length ? commonHeld(ramped) : atN[0]?.steps[0]?.targetPerSec) ?? settings.start];
  }));
  for (const r of results) r.reference = r.steps.find((s) => Math.abs(s.targetPerSec - (refRates.get(r.sockets) ?? settings.start)) < 1);
  const refRate = (n: number) => refRates.get(n) ?? settings.start;
  return {
    m, shown, refRates, refRate,
    refNote: shown.map((n) => `${fmt(refRate(n))} deliveries/s at ${fmt(n)} sockets`).join(', '),
    find: (impl, format, n) => results.find((r) => r.impl === impl && r.format === format && r.sockets === n),
  };
}

/** How the runs were made, as the report's opening paragraph. */
function method({ m, refNote }: Context): string {
  const { host, pinning, counts, db } = m;
  return `${host.cpu}, ${host.cores} cores, Node ${process.version}; ${pinning.note}. Each socket subscribes to ${settings.marketsPerSocket} of ${settings.markets} markets ` +
    `(so each market has sockets/${settings.markets / settings.marketsPerSocket} subscribers); the publisher sends full images (3 runners x 3 back + 3 lay levels) through ` +
    `the \`/ingest\` socket, one message per 5 ms, acked per message. ` +
    (settings.fixedRate
      ? `One measured step of ${settings.stepSeconds} s per run at ${fmt(settings.fixedRate)} deliveries/s (after a 1 s warm-up), the same for every server; `
      : `Rates double per step of ${settings.stepSeconds} s from ${fmt(settings.start)} deliveries/s, then one step at √2 between the last held and the first not held` +
        (settings.halfMax ? ', and one at exactly half the highest held; ' : '; ') +
        (settings.formats.some((f) => !settings.rampFormats.includes(f)) ? `${settings.formats.filter((f) => !settings.rampFormats.includes(f)).join(' and ')}: one step at the highest rate every ramped run held; ` : '')) +
    `a step is held when every frame arrived within 2 s (counted on every socket; seq and \`con\` checked on ${counts.map((n) => sampledFor(n)).join('/')} sampled sockets) and the sampled ` +
    `publish-to-receive p99 (receive time minus the publisher's \`ts\`) is under ${settings.p99Limit} ms; a narrow failure is retried once, ` +
    `and a step disturbed by other processes (over ${FOREIGN_LIMIT}% of a core) is repeated. CPU per delivery: the server process's CPU time over the step ` +
    `divided by the frames delivered, compared at one reference rate per socket count, the highest every server held (${refNote}). Bytes per delivery: what the counting clients read ` +
    `(WebSocket headers and payload) per frame. Socket.IO runs JSON only (its default parser), permessage-deflate the service only. ` +
    (settings.memory ? 'KiB/socket: server RSS growth after connecting the idle subscribed sockets, divided by their number. ' : '') + `${db.where}.`;
}

/** One row per socket count, format and server: the highest rate held, CPU and bytes per delivery, memory. */
function runsTable({ shown, find }: Context): string {
  const rows: (string | number)[][] = [];
  for (const n of shown) {
    for (const format of settings.formats) {
      for (const impl of settings.servers) {
        const r = find(impl, format, n);
        if (!r) continue;
        const m = r.maxHeld;
        const ref = r.reference;
        rows.push([
          fmt(n), format, NAMES[impl], !r.ramped ? '–' : m ? fmt(m.deliveriesPerSec) : 'none',
          !r.ramped || !m ? '–' : `${m.p50.toFixed(1)} / ${m.p99.toFixed(1)}`, r.halfMax && r.ramped ? r.halfMax.p99.toFixed(1) : '–',
          !r.ramped || !m ? '–' : m.cpuNsPerDelivery.toFixed(0), ref ? `${ref.cpuNsPerDelivery.toFixed(0)}` : '–', ref ? `${ref.p99.toFixed(1)}${ref.pass ? '' : ' (not held)'}` : '–',
          // The Socket.IO clients count events, not bytes.
          ref && impl !== 'socketio' ? ref.bytesPerDelivery.toFixed(0) : '–',
          settings.memory ? `${r.memPerSocketKiB.toFixed(1)} (${r.heapPerSocketKiB.toFixed(1)})` : '–', settings.memory ? r.idleCpuPct.toFixed(1) : '–',
          !r.ramped ? '–' : r.firstFail ? `${fmt(r.firstFail.deliveriesPerSec)}/s: ${r.firstFail.why}` : `none up to ${fmt(r.steps[r.steps.length - 1]?.targetPerSec ?? 0)}/s`,
        ]);
      }
    }
  }
  return mdTable(
    ['sockets', 'format', 'server', 'max held deliveries/s', 'p50 / p99 ms at max', 'p99 ms at half max', 'CPU ns/delivery at max', 'CPU ns/delivery at the reference rate', 'p99 ms at the reference rate', 'bytes/delivery',
      'KiB/socket (JS heap)', 'idle CPU %', 'first step not held'],
    rows,
  );
}

const othersRun = (): Impl[] => (['baseline', 'socketio', 'ceiling'] as Impl[]).filter((i) => settings.servers.includes(i));

/** Service against each other server: throughput by the highest rate held, CPU at the same rate. */
function ratiosOf({ shown, find, refRate }: Context) {
  return shown.flatMap((n) => settings.formats.filter((f) => f !== 'deflate').flatMap((format) => {
    const s = find('service', format, n);
    return s ? othersRun().map((impl) => {
      const o = find(impl, format, n);
      return {
        sockets: n, format, vs: impl, present: o !== undefined, referenceRate: refRate(n),
        heldRatio: s.ramped && o?.ramped && s.maxHeld && o.maxHeld ? s.maxHeld.deliveriesPerSec / o.maxHeld.deliveriesPerSec : NaN,
        /** The other's CPU per delivery over the service's, at the reference rate: above 1, the service is cheaper. */
        cpuRatio: s.reference && o?.reference ? o.reference.cpuNsPerDelivery / s.reference.cpuNsPerDelivery : NaN,
        /** The same, each at its highest rate held (where per-update and idle costs weigh least). */
        cpuAtMaxRatio: s.ramped && o?.ramped && s.maxHeld && o.maxHeld ? o.maxHeld.cpuNsPerDelivery / s.maxHeld.cpuNsPerDelivery : NaN,
        serviceCpuNs: s.reference?.cpuNsPerDelivery ?? NaN, otherCpuNs: o?.reference?.cpuNsPerDelivery ?? NaN,
        serviceP99: s.reference?.p99 ?? NaN, otherP99: o?.reference?.p99 ?? NaN,
        serviceHeld: s.reference?.pass === true, otherHeld: o?.reference?.pass === true,
      };
    }) : [];
  }));
}

function ratioTable({ shown }: Context, ratios: ReturnType<typeof ratiosOf>): string {
  const others = othersRun();
  const ratioOf = (n: number, format: Format, vs: Impl) => ratios.find((r) => r.sockets === n && r.format === format && r.vs === vs);
  return mdTable(
    ['sockets', 'format', ...others.flatMap((o) => o === 'ceiling'
      ? ['max held: service of ceiling', 'CPU/delivery at the reference rate: ceiling ÷ service', 'at max held']
      : [`max held: service ÷ ${NAMES[o]}`, `CPU/delivery at the reference rate: ${NAMES[o]} ÷ service`, 'at max held'])],
    shown.flatMap((n) => settings.formats.filter((f) => ratios.some((r) => r.sockets === n && r.format === f && r.present)).map((format) => [fmt(n), format, ...others.flatMap((o) => {
      const r = ratioOf(n, format, o);
      if (!r?.present) return ['–', '–', '–'];
      const f = o === 'ceiling' ? pct : x;
      return [f(r.heldRatio, 1), f(r.cpuRatio, 1), f(r.cpuAtMaxRatio, 1)];
    })])),
  );
}

/** Bandwidth: the service's bytes and CPU per delivery per encoding, at the reference rate. */
function bandwidthOf({ shown, find, refRate }: Context) {
  return shown.flatMap((n) => (['json', 'proto', 'deflate'] as Format[]).flatMap((format) => {
    const ref = find('service', format, n)?.reference;
    const run = find('service', format, n);
    return ref ? [{ sockets: n, format, referenceRate: refRate(n), maxHeld: run?.ramped ? run.maxHeld?.deliveriesPerSec ?? 0 : null, bytesPerDelivery: ref.bytesPerDelivery, cpuNsPerDelivery: ref.cpuNsPerDelivery, p99: ref.p99, held: ref.pass }] : [];
  }));
}

function bandwidthTable(bandwidth: ReturnType<typeof bandwidthOf>): string {
  return mdTable(
    ['sockets', 'encoding', 'bytes/delivery', 'of JSON', 'CPU ns/delivery', 'vs JSON', 'p99 ms'],
    bandwidth.map((b) => {
      const json = bandwidth.find((j) => j.sockets === b.sockets && j.format === 'json');
      return [fmt(b.sockets), b.format === 'deflate' ? 'JSON + permessage-deflate' : b.format === 'proto' ? 'protobuf' : 'JSON', b.bytesPerDelivery.toFixed(0),
        pct(b.bytesPerDelivery, json?.bytesPerDelivery), b.cpuNsPerDelivery.toFixed(0), x(b.cpuNsPerDelivery, json?.cpuNsPerDelivery), `${b.p99.toFixed(1)}${b.held ? '' : ' (not held)'}`];
    }),
  );
}

/** Firehose: each server's delivered rate against its own best held paced rate, the publisher's acks, the newest check. */
function firehosesOf(results: RunResult[]) {
  return results.filter((r) => r.firehose).map((r) => {
    const f = r.firehose!;
    return {
      sockets: r.sockets, impl: r.impl, format: r.format, deliveriesPerSec: f.deliveriesPerSec, bestHeld: f.bestHeld, ofBestHeld: f.ofBestHeld, cpuNsPerDelivery: f.cpuNsPerDelivery,
      framesPerWrite: f.framesPerWrite, acksPerSec: f.acksPerSec, refused: f.refused, ackMeanMs: f.ackMeanMs, ackP99Ms: f.ackP99Ms, updatesAcceptedPerSec: f.updatesAcceptedPerSec,
      deliveredShare: f.deliveredShare, p50: f.p50, p99: f.p99, newestChecked: f.newest.checked, newestStale: f.newest.stale, closedSockets: f.newest.closedSockets, drained: f.drained,
    };
  });
}

function firehoseTable(results: RunResult[]): string {
  return mdTable(
    ['sockets', 'format', 'server', 'firehose deliveries/s', 'of best held', 'best held deliveries/s', 'CPU ns/delivery', 'frames/write', 'updates/batch', 'acks/s (refused)', 'ack delay mean / p99 ms',
      'updates accepted/s', 'delivered of accepted', 'p50 / p99 ms', 'newest image', 'drained in', 'RSS MiB', 'server process / core 0', 'clients / core 1'],
    results.filter((r) => r.firehose).map((r) => {
      const f = r.firehose!;
      const newest = f.newest.stale ? `${fmt(f.newest.stale)} of ${fmt(f.newest.checked)} stale` : `all ${fmt(f.newest.checked)} newest`;
      return [fmt(r.sockets), r.format, NAMES[r.impl], fmt(f.deliveriesPerSec), Number.isFinite(f.ofBestHeld) ? `${f.ofBestHeld.toFixed(2)}x` : '–', fmt(f.bestHeld),
        fmt(f.cpuNsPerDelivery), f.framesPerWrite === null ? '–' : f.framesPerWrite.toFixed(1), fmt(f.batch), `${fmt(f.acksPerSec)} (${fmt(f.refused)})`, `${f.ackMeanMs.toFixed(1)} / ${f.ackP99Ms.toFixed(1)}`,
        fmt(f.updatesAcceptedPerSec), `${(100 * f.deliveredShare).toFixed(0)}%`, `${f.p50.toFixed(1)} / ${f.p99.toFixed(1)}`,
        newest + (f.newest.closedSockets ? `, ${fmt(f.newest.closedSockets)} sockets closed` : ''), `${f.drainSeconds.toFixed(1)} s${f.drained ? '' : ' (not drained)'}`,
        `${f.rssMiB.toFixed(0)}${f.rssLimitHit ? ' (limit: stopped)' : ''}`, `${f.serverBusyPct.toFixed(0)}% / ${f.core0Pct.toFixed(0)}%`, `${f.clientBusyPct.toFixed(0)}% / ${f.core1Pct.toFixed(0)}%`];
    }),
  );
}

function firehoseSection(results: RunResult[], svcFirehoses: ReturnType<typeof firehosesOf>, met: boolean): string[] {
  return [
    `Firehose (each server after its ramp; the publisher keeps ${settings.firehose.pipeline} batches in flight on \`/ingest\`, sending the next as each ack arrives, ` +
      `${settings.firehose.batch ? `${settings.firehose.batch} updates each` : 'each batch as large as the paced publisher\'s at the best held rate (the updates due per 5 ms)'}; measured for ${settings.firehose.seconds} s after ${settings.firehose.warmSeconds} s of warm-in. Of best held: the firehose's ` +
      'deliveries/s over the run\'s highest held paced rate. Frames/write: frames the clients received over the server\'s socket-write system calls ' +
      '(`perf stat` on the sendto, sendmsg, write and writev tracepoints). Delivered of accepted: over the whole firehose, frames received once drained over the frames ' +
      'its accepted updates would make (updates x subscribers); the rest were skipped for sockets behind. Newest image: after the firehose stops and the backlog drains, ' +
      'whether every socket\'s last frame of each of its markets carries the newest seq the server accepted):',
    '',
    firehoseTable(results),
    '',
    `Firehose target: ${met ? 'MET' : 'MISSED'} the service delivers at least ${FIREHOSE_TARGET}x its best held rate past saturation, and every socket ends on the newest image ` +
      `(${svcFirehoses.map((f) => `${fmt(f.sockets)} sockets ${f.ofBestHeld.toFixed(2)}x, ${f.newestStale ? `${fmt(f.newestStale)} stale` : 'newest everywhere'}`).join('; ')}).`,
    '',
  ];
}

type Mixed = { sockets: number } & NonNullable<RunResult['mixedSubs']>;

/** Mixed subscriptions: CPU per frame delivered, mixed against plain, same sockets and publish rate. */
function mixedSection(mixed: Mixed[], met: boolean): string[] {
  const table = mdTable(
    ['sockets', 'subscriptions', 'updates/s', 'deliveries/s', 'CPU ns per frame delivered', 'vs plain', 'p50 / p99 ms', 'server process / core 0'],
    mixed.flatMap((m) => (['plain', 'mixed'] as const).map((k) => [fmt(m.sockets), k, fmt(m[k].rate), fmt(m[k].deliveriesPerSec), fmt(m[k].cpuNsPerDelivery),
      k === 'plain' ? '1x' : `${m.cpuRatio.toFixed(2)}x`, `${m[k].p50.toFixed(1)} / ${m[k].p99.toFixed(1)}`, `${m[k].serverBusyPct.toFixed(0)}% / ${m[k].core0Pct.toFixed(0)}%`])),
  );
  return [
    `Mixed subscriptions (the service; each socket's markets in two subscribe requests taking the nine mixes of depth all, 1 and 3 and conflation 0, 250 and 1000 ms in turn, ` +
      `against the same sockets with plain subscriptions, at the same publish rate; ${settings.mixed.seconds} s each after ${MIXED_WARM_SECONDS} s of warm-up. Conflated sockets get ` +
      'fewer frames by design: CPU is divided by the frames actually delivered. Latency of the mixed step includes the conflation intervals):',
    '',
    table,
    '',
    `Mixed target: ${met ? 'MET' : 'MISSED'} mixed within ${MIXED_TARGET}x of plain CPU per frame delivered (${mixed.map((m) => `${fmt(m.sockets)} sockets ${m.cpuRatio.toFixed(2)}x` +
      (m.refused ? `, ${m.refused} subscribe requests refused` : '')).join('; ')}).`,
    '',
  ];
}

/** The ramp's targets: 3x the baseline, p99 at half the highest rate, memory per socket. */
function targetsOf({ m, find }: Context) {
  const svc = m.results.filter((r) => r.impl === 'service' && r.format !== 'deflate');
  const x3 = m.counts.filter((n) => n >= 1000).flatMap((n) => settings.formats.filter((f) => f !== 'deflate').map((f) => {
    const s = find('service', f, n);
    const b = find('baseline', f, n);
    return { n, f, x: s?.maxHeld && b?.maxHeld ? s.maxHeld.deliveriesPerSec / b.maxHeld.deliveriesPerSec : NaN };
  }));
  const met = {
    x3: x3.length > 0 && x3.every((e) => e.x >= 3),
    halfP99: svc.length > 0 && svc.every((r) => r.halfMax !== undefined && r.halfMax.p99 < 20),
    memory: svc.filter((r) => r.sockets >= 1000).every((r) => r.memPerSocketKiB <= 10),
  };
  return { svc, x3, met };
}

function targetsLine({ svc, x3, met }: ReturnType<typeof targetsOf>): string {
  return 'Targets: ' + (x3.length ? `${met.x3 ? 'MET' : 'MISSED'} ≥3x baseline deliveries/s at 1,000 and 10,000 sockets (${x3.map((e) => `${fmt(e.n)} ${e.f} ${e.x.toFixed(1)}x`).join(', ')}); ` : '') +
    `${met.halfP99 ? 'MET' : 'MISSED'} service p99 < 20 ms at half the max rate (${svc.map((r) => `${fmt(r.sockets)} ${r.format} ${r.halfMax ? r.halfMax.p99.toFixed(1) + ' ms' : 'n/a'}`).join(', ')}); ` +
    (settings.memory && svc.some((r) => r.sockets >= 1000) ? `${met.memory ? 'MET' : 'MISSED'} ≤ 10 KiB per idle subscribed socket (${svc.filter((r) => r.sockets >= 1000).map((r) => `${fmt(r.sockets)} ${r.format} ${r.memPerSocketKiB.toFixed(1)}`).join(', ')}).` : '');
}

function stepsTable(results: RunResult[]): string {
  return mdTable(
    ['sockets', 'format', 'server', 'updates/s', 'deliveries/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'lost / late', 'CPU ns/delivery', 'bytes/delivery', 'server process / core 0', 'clients / core 1', 'held'],
    results.flatMap((r) => r.steps.map((s) => [fmt(r.sockets), r.format, NAMES[r.impl], fmt(s.rate), fmt(s.deliveriesPerSec), s.p50.toFixed(2), s.p99.toFixed(2), s.p999.toFixed(2),
      `${fmt(s.lost)} / ${fmt(s.late)}`, s.cpuNsPerDelivery.toFixed(0), r.impl === 'socketio' ? '–' : s.bytesPerDelivery.toFixed(0), `${s.serverBusyPct.toFixed(0)}% / ${s.core0Pct.toFixed(0)}%`, `${s.clientBusyPct.toFixed(0)}% / ${s.core1Pct.toFixed(0)}%`, s.pass ? 'yes' : `no: ${s.why}`])),
  );
}

function settingsJson(counts: number[], refRates: Map<number, number>) {
  const { firehose: fh, mixed: mx } = settings;
  return {
    stepSeconds: settings.stepSeconds, sockets: counts, formats: settings.formats, servers: settings.servers, marketsPerSocket: settings.marketsPerSocket, markets: settings.markets, sampled: counts.map((n) => sampledFor(n)),
    start: settings.start, fixedRate: settings.fixedRate ?? null, referenceRates: Object.fromEntries(refRates), peerFormats: settings.peerFormats, p99LimitMs: settings.p99Limit,
    firehose: fh.on ? {
      warmSeconds: fh.warmSeconds, seconds: fh.seconds, pipeline: fh.pipeline, drainSeconds: fh.drainSeconds, maxRssBytes: fh.maxRssBytes,
      batch: fh.batch ?? null, sockets: fh.sockets, servers: fh.servers, formats: fh.formats, target: FIREHOSE_TARGET,
    } : null,
    mixed: mx.on ? { sockets: mx.sockets, rate: mx.rate ?? null, seconds: mx.seconds, warmSeconds: MIXED_WARM_SECONDS, target: MIXED_TARGET } : null,
  };
}
