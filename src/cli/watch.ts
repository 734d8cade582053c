/**
 * `npm run watch -- [options] [<mid>...]`: subscribes on the odds WebSocket through the client
 * (src/client) and prints every frame as one line, for eyeballing the live feed during
 * development. It reconnects and resumes as the client does, saying so on stderr.
 */
import { parseArgs as parseOptions } from 'node:util';
import { AGE_SINCE_MS, OddsClient, RefusedError, formatAge, formatVolume, type MarketFreshness, type ReceiptDelay, type Subscription } from '../client/index.js';
import { CONFLATE, MAX_DEPTH } from '../odds/client-codec.js';
import { HEARTBEAT, parseHeartbeat, type DeltaMessage, type PriceSize, type ResultMessage, type RunnerOdds, type ServerMessage, type WireTerms } from '../odds/messages.js';
import { POSITIVE_ID } from '../refdata/ids.js';
import { UsageError, refuseStart, serviceUrl } from './args.js';
import { runsAsTool } from './fresh.js';
import { toolSocket } from './socket.js';
import { HANDSHAKE_TIMEOUT_MS } from '../exchange/publisher.js';

const USAGE = `usage: npm run watch -- [--url http://127.0.0.1:8080] [--key KEY] [--format json|proto] [--hb 5000] [--raw]
                        [--event EID[,EID...]]... [--sport SI[,SI...]]... [--depth N] [--conflate MS] [<mid>...]
  --url       the service (http://HOST:PORT, as npm start prints it) or its socket (ws://HOST:PORT/ws);
              default: the variable URL, the same, else HOST and PORT as npm start reads them
              (127.0.0.1:8080 when unset)
  --key       API key, with AUTH=on (sent in the x-api-key header; ?key= in --url works too)
  --format    wire format: json (default) or proto
  --hb        heartbeat after this many ms of silence, 500 to 30000
  --raw       print each message as one JSON line instead of a summary line; odds as the client
              holds them: it subscribes with deltas, and each arrives as the whole image it
              leads to ("op":"odds"), never as a "delta" frame; an image sent again prints once
  --event     every market of these events, and markets created later (repeatable, or a comma list)
  --sport     every market of these sports' events, and markets created later (repeatable, or a comma list)
  --depth     ladder levels a side, 1 to ${MAX_DEPTH}
  --conflate  at most one frame per market per this many ms: 0, or ${CONFLATE.min} to ${CONFLATE.max}
  -h, --help  this text
Market IDs are optional when --event or --sport is given; a market the service does not know is
named on stderr, and watched in case it is created. Exit 0 on Ctrl-C; 1 when the server cannot be
reached, refuses the connection (its reason is printed) or leaves the handshake unanswered for
${HANDSHAKE_TIMEOUT_MS / 1000} s; 2 for a bad command line or when the server refuses the subscribe
(every market, event and sport asked for).`;

interface WatchOptions {
  url: string;
  key?: string;
  format: 'json' | 'proto';
  hb?: number;
  raw: boolean;
  mids: string[];
  eids: number[];
  sis: number[];
  depth?: number;
  conflate?: number;
}

/** Repeated options and comma lists, as one list of positive integers. */
function ids(values: string[] | undefined, option: string): number[] {
  const out: number[] = [];
  for (const part of (values ?? []).flatMap((v) => v.split(','))) {
    const id = POSITIVE_ID(part, 0, part.length);
    if (id === undefined) throw new UsageError(`${option} takes positive integer IDs, got "${part}"`);
    if (!out.includes(id)) out.push(id);
  }
  return out;
}

function whole(value: string | undefined, option: string, ok: (n: number) => boolean, rule: string): number | undefined {
  if (value === undefined) return undefined;
  const n = /^\d{1,6}$/.test(value) ? Number(value) : NaN;
  if (!ok(n)) throw new UsageError(`${option} must be ${rule}, got ${value}`);
  return n;
}

export function parseArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): WatchOptions | 'help' {
  let parsed;
  try {
    parsed = parseOptions({
      args: argv, allowPositionals: true, strict: true,
      options: {
        url: { type: 'string' }, key: { type: 'string' }, format: { type: 'string' }, hb: { type: 'string' }, raw: { type: 'boolean' },
        event: { type: 'string', multiple: true }, sport: { type: 'string', multiple: true }, depth: { type: 'string' }, conflate: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) return 'help';
  const format = values.format ?? 'json';
  if (format !== 'json' && format !== 'proto') throw new UsageError(`--format must be json or proto, got ${format}`);
  let hb: number | undefined;
  if (values.hb !== undefined) {
    hb = parseHeartbeat(values.hb);
    if (hb === undefined) throw new UsageError(`--hb must be a whole number from ${HEARTBEAT.min} to ${HEARTBEAT.max}, got ${values.hb}`);
  }
  const url = serviceUrl(values.url, env, '/ws');
  const eids = ids(values.event, '--event');
  const sis = ids(values.sport, '--sport');
  if (positionals.length === 0 && !eids.length && !sis.length) throw new UsageError('give at least one market ID, --event or --sport');
  const depth = whole(values.depth, '--depth', (n) => n >= 1 && n <= MAX_DEPTH, `a whole number from 1 to ${MAX_DEPTH}`);
  const conflate = whole(values.conflate, '--conflate', (n) => n === 0 || (n >= CONFLATE.min && n <= CONFLATE.max), `0 or a whole number from ${CONFLATE.min} to ${CONFLATE.max}`);
  if (values.key !== undefined && !/^[\x21-\x7e]{1,200}$/.test(values.key)) throw new UsageError('--key must be the key as `npm run key -- create` printed it');
  return { url, key: values.key, format, hb, raw: values.raw ?? false, mids: positionals, eids, sis, depth, conflate };
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** Local wall-clock time with milliseconds: frames arrive many per second. */
function clock(ms: number): string {
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

const best = (levels: PriceSize[]) => (levels.length ? `${levels[0][0].toFixed(2)}@${levels[0][1].toFixed(2)}` : '-');
/** What last traded and how much, each only when the publisher said. */
const traded = (r: RunnerOdds) => `${r.ltp === undefined ? '' : ` ltp ${r.ltp.toFixed(2)}`}${r.tv === undefined ? '' : ` tv ${formatVolume(r.tv)}`}`;

/**
 * A market's terms in one run of words: `bd=5s tip ODDS nw=3 ewd=4 bsp GB Ascot Flat mbr=5% reg=GBR`
 * and each runner with terms of its own (a factor, not active): `67003 REMOVED af=13.6% at 13:55:12.000`.
 */
export function formatTerms(t: WireTerms): string {
  const words = [
    t.bd === undefined ? '' : `bd=${t.bd}s`, t.tip ? 'tip' : '', t.bt ?? '', t.nw === undefined ? '' : `nw=${t.nw}`, t.ewd === undefined ? '' : `ewd=${t.ewd}`,
    t.bsp ? 'bsp' : '', t.cc ?? '', t.ven ?? '', t.race ?? '', t.mbr === undefined ? '' : `mbr=${t.mbr}%`, t.reg?.length ? `reg=${t.reg.join(',')}` : '',
    t.lmin === undefined && t.lmax === undefined ? '' : `line ${t.lmin ?? '?'}..${t.lmax ?? '?'} by ${t.lint ?? '?'}`,
  ].filter(Boolean);
  const runners = (t.r ?? []).filter((r) => r.st !== 'ACTIVE' || r.af !== undefined || r.hc !== undefined).map((r) =>
    [r.rid, r.st === 'ACTIVE' ? '' : r.st, r.af === undefined ? '' : `af=${r.af}%`, r.rd === undefined ? '' : `at ${clock(r.rd)}`, r.hc === undefined ? '' : `hc=${r.hc}`].filter(Boolean).join(' '));
  return [...words, ...(runners.length ? [`| ${runners.join(' | ')}`] : [])].join(' ');
}

/** A result's settlement beyond its REST keys: `cert=confirmed dh 101:0.5,104:0.5 void 103`. */
function formatSettlement(r: ResultMessage): string {
  const dh = (r.rs ?? []).filter((x) => x.dh !== undefined).map((x) => `${x.rid}:${x.dh}`);
  const voids = (r.rs ?? []).filter((x) => (x.vf ?? (x.st === 'REMOVED' ? 1 : 0)) > 0).map((x) => (x.vf === undefined || x.vf === 1 ? String(x.rid) : `${x.rid}:${x.vf}`));
  return [r.cert ? `cert=${r.cert}` : '', dh.length ? `dh ${dh.join(',')}` : '', voids.length ? `void ${voids.join(',')}` : ''].filter(Boolean).map((w) => ` ${w}`).join('');
}

/**
 * How late an odds frame arrived, from the source's time and from the service's publish time (the
 * client's receipt delay); past a day, since when the source has sent nothing.
 */
const late = (d: ReceiptDelay | undefined) => {
  if (!d) return '';
  if (d.source >= AGE_SINCE_MS) {
    const published = d.publish >= AGE_SINCE_MS ? formatAge(d.publish, d.at).replace('no data since', 'published') : `${Math.round(d.publish)} ms from publish`;
    return `  ${formatAge(d.source, d.at)} by the source's time, ${published}`;
  }
  return `  delay ${Math.round(d.source)} ms from source, ${Math.round(d.publish)} ms from publish`;
};

/**
 * One line per frame (a delta arrives as the image the client rebuilt); `now` is the receive time, passed in so the function
 * stays pure, and `delay` how late an odds frame arrived.
 */
/** A market's freshness as the client holds it: `live`, or `STALE <why> since <time>`. */
export function formatFreshness(state: MarketFreshness, now = Date.now()): string {
  return `${clock(now)} freshness ${state.mid} ${state.live ? 'live' : `STALE ${state.why} since ${clock(state.since)}`}`;
}

export function formatFrame(msg: Exclude<ServerMessage, DeltaMessage>, raw: boolean, now = Date.now(), delay?: ReceiptDelay, lateness?: number): string {
  if (raw) return JSON.stringify(msg);
  const at = clock(now);
  switch (msg.op) {
    case 'odds': {
      const flags = `${msg.st}${msg.sr ? ` (${msg.sr})` : ''}${msg.ip ? ' ip' : ''}${msg.con ? ' con' : ''}${msg.cf ? ' cf' : ''}${msg.tv === undefined ? '' : ` matched ${formatVolume(msg.tv)}`}`;
      const runners = msg.r.map((r) => `${r.rid}${r.st === 'ACTIVE' ? '' : ` ${r.st}`} back ${best(r.b)} lay ${best(r.l)}${traded(r)}`);
      return `${at} ${msg.mid} seq=${msg.seq} ${flags}  ${runners.join(' | ')}${late(delay)}`;
    }
    case 'ack': return `${at} ack id=${msg.id} ${msg.status === 1 ? 'ok' : 'REFUSED'} ${msg.message}`;
    case 'market': return `${at} market ${msg.mid} s=${msg.s} go=${msg.go} rt=${msg.rt}${msg.terms ? ` terms ${formatTerms(msg.terms)}` : ''}`;
    case 'result': return `${at} result ${msg.mid} mt=${msg.mt} res=${msg.res} rt=${msg.rt} ia=${msg.ia}${formatSettlement(msg)}`;
    case 'unsubscribed': return `${at} unsubscribed ${msg.mids.join(',')}`;
    case 'hb': return `${at} hb`;
    case 'clock': return `${at} clock ${clock(msg.ts)}${lateness === undefined ? '' : `, read ${Math.round(lateness)} ms later than the quickest`}`;
    case 'feed': return `${at} feed ${msg.status}`;
    case 'freshness': return formatFreshness(msg.live ? { mid: msg.mid, live: true } : { mid: msg.mid, live: false, why: msg.why!, since: msg.at }, now);
    case 'notice': return `${at} notice ${msg.message}`;
  }
}

/** REST's market lookup beside the socket: the result lookup leaves unknown markets out. */
export function resultsUrl(wsUrl: string, mids: readonly string[]): string {
  const url = new URL(wsUrl);
  url.protocol = url.protocol.replace('ws', 'http');
  url.pathname = '/api/v1/markets/result';
  url.search = `?mid=${mids.join(',')}`;
  return url.toString();
}

/** REST's limit on one ID list. */
const IDS_PER_LOOKUP = 50;
const LOOKUP_TIMEOUT_MS = 5000;

/** The market IDs asked for that the service does not know; none when it cannot be asked (it is only a hint). */
async function unknownMarkets(opts: WatchOptions): Promise<string[]> {
  const key = opts.key ?? new URL(opts.url).searchParams.get('key') ?? undefined;
  const unknown: string[] = [];
  try {
    for (let i = 0; i < opts.mids.length; i += IDS_PER_LOOKUP) {
      const mids = opts.mids.slice(i, i + IDS_PER_LOOKUP);
      const res = await fetch(resultsUrl(opts.url, mids), { headers: key ? { 'x-api-key': key } : {}, signal: AbortSignal.timeout(LOOKUP_TIMEOUT_MS) });
      if (!res.ok) return [];
      const known = new Set(((await res.json()) as { mid: string }[]).map((r) => r.mid));
      unknown.push(...mids.filter((mid) => !known.has(mid)));
    }
  } catch {
    return [];
  }
  return unknown;
}

/** The one subscribe a command line asks for; deltas, since the client rebuilds every image from them. */
export function subscriptionOf(opts: WatchOptions): Subscription {
  const sub: Subscription = { delta: true };
  if (opts.mids.length) sub.mids = opts.mids;
  if (opts.eids.length) sub.eids = opts.eids;
  if (opts.sis.length) sub.sis = opts.sis;
  if (opts.depth !== undefined) sub.depth = opts.depth;
  if (opts.conflate !== undefined) sub.conflate = opts.conflate;
  return sub;
}

function main(argv: string[]): void {
  // `npm run watch -- 1.1 | head` closes our stdout: that is the user being done, not an error.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
  let opts: WatchOptions;
  try {
    const parsed = parseArgs(argv);
    if (parsed === 'help') {
      process.stdout.write(`${USAGE}\n`);
      return;
    }
    opts = parsed;
  } catch (err) {
    process.exitCode = refuseStart('watch', USAGE, err);
    return;
  }
  const client = new OddsClient({ url: opts.url, format: opts.format, hb: opts.hb, WebSocket: toolSocket(opts.key) });
  let everOpened = false;
  client.on('open', () => (everOpened = true));
  const print = (msg: Exclude<ServerMessage, DeltaMessage>, delay?: ReceiptDelay) => process.stdout.write(formatFrame(msg, opts.raw, Date.now(), delay, client.lateness) + '\n');
  // Odds lines come from the client's book, so an image the server sends again (the client's stored
  // set attaches a market at connect, the subscribe sends its image once more) prints once. Summary
  // freshness lines come from the client too, which also says when markets are stale for want of a
  // connection; --raw prints the server's frames as they are.
  client.on('message', (msg) => msg.op !== 'odds' && msg.op !== 'delta' && (opts.raw || msg.op !== 'freshness') && print(msg, undefined));
  client.on('odds', (frame) => print(frame, client.book.delay(frame.mid)));
  if (!opts.raw) client.on('freshness', (state) => process.stdout.write(formatFreshness(state) + '\n'));
  // One bad frame is worth reporting, not worth dropping the whole session over.
  client.on('error', (err) => process.stderr.write(`watch: undecodable frame: ${err.message}\n`));
  client.on('close', (info) => {
    if (info.code === 1000 && info.reason === 'client closed') return;
    if (!everOpened) {
      // Never connected at all: most likely a wrong URL, so say so and stop rather than retry forever.
      process.stderr.write(`watch: cannot connect to ${opts.url}: ${info.error ?? `code ${info.code}`}\n`);
      process.exitCode = 1;
      return client.close();
    }
    const why = info.opened ? `connection closed unexpectedly: code ${info.code} reason "${info.reason}"` : `cannot connect: ${info.error ?? `code ${info.code}`}`;
    if (info.reconnectInMs === undefined) {
      process.stderr.write(`watch: ${why}\n`);
      process.exitCode = 1;
    } else {
      process.stderr.write(`watch: ${why}; reconnecting in ${Math.round(info.reconnectInMs)} ms\n`);
    }
  });
  // A refusal is printed as its ack line. It refuses the one subscribe, so everything asked for:
  // nothing is left to watch.
  client.subscribe(subscriptionOf(opts)).then(async () => {
    // The service takes a subscribe of a market it does not know (it may be created later) and
    // sends nothing for it: say so rather than wait in silence.
    const unknown = await unknownMarkets(opts);
    if (unknown.length) process.stderr.write(`watch: the service knows no market ${unknown.join(', ')}; watching in case it is created\n`);
  }, (err: unknown) => {
    if (!(err instanceof RefusedError)) return;
    process.exitCode = 2;
    client.close();
  });
  client.connect();
  // Ctrl-C, and what timeout, a supervisor or a closed terminal send: the socket closes with 1000,
  // so the server (and its record of the socket) sees a client that left, not a dropped link.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => {
    process.exitCode = 0;
    client.close();
    // A server that never answers the close frame must not keep the user waiting.
    setTimeout(() => process.exit(0), 2000).unref();
  });
}

if (runsAsTool(import.meta.url)) main(process.argv.slice(2));
