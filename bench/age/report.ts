/** bench:age's figures from what its reader processes and its feed report, and its tables. */
import { fmt, mdTable } from '../lib/report.js';
import { Histogram } from '../lib/statistics.js';
import type { FeedRun } from './feed.js';
import { SETTINGS, type Phase, type ReaderReport, type Screens } from './settings.js';

/** A kind of screen and what its process reported. */
export interface GroupReport {
  name: string;
  screens: Screens;
  report: ReaderReport;
}

const KINDS: Phase['kind'][] = ['steady', 'burst'];
type Spread = { p50: number; p99: number; max: number };
const spread = (h: Histogram): Spread => ({ p50: h.pMs(50), p99: h.pMs(99), max: h.count ? h.max / 1000 : NaN });
/** p50 and max of a few values (ms). */
function few(xs: number[]): { n: number; p50: number; max: number } {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return { n: s.length, p50: s.length ? s[Math.ceil(s.length / 2) - 1] : NaN, max: s.length ? s[s.length - 1] : NaN };
}

export interface PhaseRow {
  group: string;
  kind: Phase['kind'];
  live: number;
  liveAge: Spread;
  pastBound: number;
  notLive: number;
  notLiveAge: Spread;
}

export interface NoticeRow {
  group: string;
  /** Markets turned not live on a screen for another reason than `behind` (there should be none), by why. */
  others: Record<string, number>;
  /** Markets told `behind`: from when the server (or the client) says the screen fell behind to the screen reading it, ms. */
  toldAfter: ReturnType<typeof few>;
  /** How old the screen's price was when it was told: since the image that superseded it was published, ms. */
  priceAge: ReturnType<typeof few>;
  lives: number;
  closes: string[];
}

/** When the image after `seq` of `mid` was published, as the full-speed screens read it: the moment the screen's price stopped being the newest. */
function supersededAt(published: ReaderReport['published'], mid: string, seq: number): number {
  return published[mid]?.[seq + 1] ?? NaN;
}

export function phaseRows(groups: GroupReport[]): PhaseRow[] {
  return groups.flatMap((g) => KINDS.flatMap((kind) => {
    const f = g.report.phases[kind];
    if (!f) return [];
    const live = Histogram.from(f.live);
    const notLive = Histogram.from(f.notLive);
    return [{ group: g.name, kind, live: live.count, liveAge: spread(live), pastBound: f.pastBound, notLive: notLive.count, notLiveAge: spread(notLive) }];
  }));
}

/** `published`: when each image was published, from screens that read them all (the full-speed ones). */
export function noticeRows(groups: GroupReport[], published: ReaderReport['published']): NoticeRow[] {
  return groups.map((g) => {
    const others: Record<string, number> = {};
    for (const n of g.report.notices) if (n.why !== 'behind') others[n.why] = (others[n.why] ?? 0) + 1;
    const behind = g.report.notices.filter((n) => n.why === 'behind');
    return {
      group: g.name, others, lives: g.report.lives, closes: g.report.closes,
      toldAfter: few(behind.map((n) => n.readAt - n.since)),
      priceAge: few(behind.map((n) => n.readAt - supersededAt(published, n.mid, n.heldSeq))),
    };
  });
}

/** The server's CPU per frame delivered and its share of its core, per phase kind. */
export function cpuRows(rows: PhaseRow[], feed: FeedRun): { kind: Phase['kind']; deliveries: number; perSecond: number; cpuNsPerDelivery: number; corePct: number }[] {
  return KINDS.filter((k) => feed.seconds[k] > 0).map((kind) => {
    const deliveries = rows.filter((r) => r.kind === kind).reduce((a, r) => a + r.live + r.notLive, 0);
    return {
      kind, deliveries, perSecond: deliveries / feed.seconds[kind],
      cpuNsPerDelivery: (1000 * feed.cpuMicros[kind]) / deliveries, corePct: feed.cpuMicros[kind] / (10_000 * feed.seconds[kind]),
    };
  });
}

const ms = (v: number) => (Number.isFinite(v) ? (v < 10 ? v.toFixed(1) : fmt(v)) : '–');
const trio = (s: Spread) => `${ms(s.p50)} · ${ms(s.p99)} · ${ms(s.max)}`;

export function tables(phases: PhaseRow[], notices: NoticeRow[], cpu: ReturnType<typeof cpuRows>): string {
  const rate = (k: Phase['kind']) => `${k} (${fmt(k === 'burst' ? SETTINGS.burstRate : SETTINGS.rate)} batches/s)`;
  const ages = mdTable(
    ['screens', 'feed', 'frames read live', 'age while live p50 · p99 · max (ms)', 'read past the bound while live', 'frames read not live', 'age not live p50 · p99 · max (ms)'],
    phases.map((r) => [r.group, rate(r.kind), fmt(r.live), trio(r.liveAge), `${fmt(r.pastBound)} (${r.live ? ((100 * r.pastBound) / r.live).toFixed(2) : '0'}%)`, fmt(r.notLive), trio(r.notLiveAge)]),
  );
  const told = mdTable(
    ['screens', 'markets told behind', 'fell behind to told p50 · max (ms)', 'price\'s age when told p50 · max (ms)', 'live again', 'not live for other reasons', 'closed'],
    notices.map((n) => [n.group, fmt(n.toldAfter.n), `${ms(n.toldAfter.p50)} · ${ms(n.toldAfter.max)}`, `${ms(n.priceAge.p50)} · ${ms(n.priceAge.max)}`, fmt(n.lives),
      Object.entries(n.others).map(([w, c]) => `${w} ${c}`).join(', ') || '0', n.closes.length ? n.closes.slice(0, 3).join('; ') : '0']),
  );
  const server = mdTable(
    ['feed', 'frames delivered', 'per second', 'server CPU ns per delivery', 'server core busy'],
    cpu.map((c) => [rate(c.kind), fmt(c.deliveries), fmt(c.perSecond), fmt(c.cpuNsPerDelivery), `${c.corePct.toFixed(0)}%`]),
  );
  return [ages, '', told, '', server].join('\n');
}
