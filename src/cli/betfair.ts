/**
 * `npm run betfair -- (--markets IDS | --event-types IDS [--market-types TYPES]) ...`: subscribes
 * to markets on Betfair's Exchange Stream API (src/exchange/live) and publishes every change
 * through the service's `/ingest`, translated as `npm run replay` does. Credentials come from
 * arguments, files or environment variables (docs/exchange-live.md). Connection events go to
 * stderr; a summary by market goes to stdout when it stops. Bad data never stops it: it costs
 * only its market, until a fresh image. Exit code 0 after SIGINT/SIGTERM, 1 when the exchange
 * refused the credentials or filter, the first connection failed, or the service's socket failed;
 * 2 for bad usage.
 */
import { readFile } from 'node:fs/promises';
import type { Catalogue } from '../exchange/catalogue.js';
import { Ledger } from '../exchange/ledger.js';
import { DEFAULT_HOST, DEFAULT_PORT, ExchangeStream, type ExchangeStreamOptions } from '../exchange/live/client.js';
import { Forwarder, REFRESH_MS } from '../exchange/live/forward.js';
import { CONFLATE_MS, HEARTBEAT_MS, type MarketFilter } from '../exchange/live/protocol.js';
import { Outbox, OUTBOX_DEFAULTS } from '../exchange/outbox.js';
import { Publisher } from '../exchange/publisher.js';
import { Translator } from '../exchange/translate.js';
import { POSITIVE_ID } from '../refdata/ids.js';
import { parseCommandLine, refuseStart, secret, serviceUrl, UsageError, wholeNumber } from './args.js';
import { loadCatalogue, printSummary } from './replay.js';
import { runsAsTool } from './fresh.js';

/** A resubscription sends a fresh image of every market: not more than once a second, and not left for hours. */
const REFRESH_BOUNDS = { min: 1000, max: 600_000 } as const;

const USAGE = `usage: npm run betfair -- (--markets IDS | --event-types IDS [--market-types TYPES])
                          [--app-key KEY | --app-key-file FILE] [--session TOKEN | --session-file FILE]
                          [--host ${DEFAULT_HOST}] [--port ${DEFAULT_PORT}] [--ca FILE] [--heartbeat MS] [--conflate MS]
                          [--url URL] [--key KEY | --key-file FILE] [--catalogue FILE] [--queue-bytes N] [--refresh MS]
  --app-key       Betfair application key (enabled for streaming); or --app-key-file, BETFAIR_APP_KEY, BETFAIR_APP_KEY_FILE
  --session       Betfair session token (from a login); or --session-file, BETFAIR_SESSION, BETFAIR_SESSION_FILE
  --markets       market IDs, comma-separated, e.g. 1.230000001,1.230000002
  --event-types   event type IDs, comma-separated, e.g. 1 (soccer),2 (tennis),4 (cricket)
  --market-types  market types with --event-types or --markets, e.g. MATCH_ODDS,OVER_UNDER_25
  --host, --port  the stream server (default ${DEFAULT_HOST}:${DEFAULT_PORT}, TLS)
  --ca            a PEM file of extra CA certificates to trust (a private stream server); certificates are always verified
  --heartbeat     ms between the exchange's heartbeats on a quiet stream, ${HEARTBEAT_MS.min} to ${HEARTBEAT_MS.max} (default ${HEARTBEAT_MS.default})
  --conflate      ms the exchange may conflate changes over, ${CONFLATE_MS.min} to ${CONFLATE_MS.max} (default: the exchange's)
  --url           the service (http://HOST:PORT, as npm start prints it) or its publisher socket (ws://HOST:PORT/ingest);
                  default: the variable URL, the same, else the service's HOST and PORT as npm start reads them
                  (127.0.0.1:8080 when unset; --host and --port are the stream server's)
  --key           API key with the publisher role (needed with AUTH=on); or --key-file, ODDS_INGEST_KEY, ODDS_INGEST_KEY_FILE
  --catalogue     a saved listMarketCatalogue answer (JSON): names and competitions the stream lacks
  --queue-bytes   bytes waiting for the service before the stream is paused (default ${OUTBOX_DEFAULTS.maxBytes})
  --refresh       ms a market whose change could not be applied waits for a fresh image before the subscription is asked for one, ${REFRESH_BOUNDS.min} to ${REFRESH_BOUNDS.max} (default ${REFRESH_MS})`;

/** More than the exchange lets one connection subscribe to; keeps a pasted list from being unbounded. */
const MAX_FILTER_ENTRIES = 1000;
const NAMES = [
  'app-key', 'app-key-file', 'session', 'session-file', 'markets', 'event-types', 'market-types', 'host', 'port', 'ca', 'heartbeat', 'conflate',
  'url', 'key', 'key-file', 'catalogue', 'queue-bytes', 'refresh',
];
/** The queue's bounds: room for one batch at least, and no more than a pod's memory should hold. */
const QUEUE_BYTES = { min: 64 * 1024, max: 1024 * 1024 * 1024 } as const;

interface BetfairArgs {
  appKey: string;
  session: string;
  filter: MarketFilter;
  host: string;
  port: number;
  ca?: string;
  heartbeatMs: number;
  conflateMs?: number;
  url: string;
  key?: string;
  catalogue?: string;
  queueBytes: number;
  refreshMs: number;
}

function list(value: string | undefined, option: string, ok: (s: string) => boolean, rule: string): string[] | undefined {
  if (value === undefined) return undefined;
  const parts = [...new Set(value.split(','))];
  if (parts.length > MAX_FILTER_ENTRIES) throw new UsageError(`${option} takes at most ${MAX_FILTER_ENTRIES} entries, got ${parts.length}`);
  const bad = parts.find((p) => !ok(p));
  if (bad !== undefined) throw new UsageError(`${option} takes ${rule}, got "${bad}"`);
  return parts;
}

function required(value: string | undefined, what: string): string {
  if (!value) throw new UsageError(`${what} is required`);
  return value;
}

export function parseArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): BetfairArgs | 'help' {
  const line = parseCommandLine(argv, NAMES);
  if (line.help) return 'help';
  if (line.positionals.length) throw new UsageError(`unexpected argument "${line.positionals[0]}"`);
  const o = line.options;
  const filter: MarketFilter = {};
  const marketIds = list(o.markets, '--markets', (s) => /^\d{1,3}\.\d{1,15}$/.test(s), 'market IDs like 1.230000001');
  const eventTypeIds = list(o['event-types'], '--event-types', (s) => POSITIVE_ID(s, 0, s.length) !== undefined, 'positive integer IDs');
  const marketTypes = list(o['market-types'], '--market-types', (s) => /^[A-Z0-9_]{1,64}$/.test(s), 'market type codes like MATCH_ODDS');
  if (!marketIds && !eventTypeIds) throw new UsageError('give --markets or --event-types: the subscription needs a market filter');
  if (marketIds) filter.marketIds = marketIds;
  if (eventTypeIds) filter.eventTypeIds = eventTypeIds;
  if (marketTypes) filter.marketTypes = marketTypes;
  const url = serviceUrl(o.url, env, '/ingest');
  if (o.host !== undefined && !/^[A-Za-z0-9.:-]{1,253}$/.test(o.host)) throw new UsageError(`--host must be a host name or IP address, got "${o.host}"`);
  return {
    appKey: required(secret(o, 'app-key', 'BETFAIR_APP_KEY'), '--app-key (or --app-key-file, BETFAIR_APP_KEY, BETFAIR_APP_KEY_FILE)'),
    session: required(secret(o, 'session', 'BETFAIR_SESSION'), '--session (or --session-file, BETFAIR_SESSION, BETFAIR_SESSION_FILE)'),
    filter,
    host: o.host ?? DEFAULT_HOST,
    port: wholeNumber(o.port, '--port', 1, 65535) ?? DEFAULT_PORT,
    ca: o.ca,
    heartbeatMs: wholeNumber(o.heartbeat, '--heartbeat', HEARTBEAT_MS.min, HEARTBEAT_MS.max) ?? HEARTBEAT_MS.default,
    conflateMs: wholeNumber(o.conflate, '--conflate', CONFLATE_MS.min, CONFLATE_MS.max),
    url,
    key: secret(o, 'key', 'ODDS_INGEST_KEY'),
    catalogue: o.catalogue,
    queueBytes: wholeNumber(o['queue-bytes'], '--queue-bytes', QUEUE_BYTES.min, QUEUE_BYTES.max) ?? OUTBOX_DEFAULTS.maxBytes,
    refreshMs: wholeNumber(o.refresh, '--refresh', REFRESH_BOUNDS.min, REFRESH_BOUNDS.max) ?? REFRESH_MS,
  };
}

async function options(args: BetfairArgs): Promise<{ stream: ExchangeStreamOptions; catalogue?: Catalogue }> {
  let ca: string | undefined;
  if (args.ca) ca = await readFile(args.ca, 'utf8').catch((err: Error) => {
    throw new UsageError(`--ca ${args.ca}: ${err.message}`);
  });
  const catalogue = args.catalogue ? await loadCatalogue(args.catalogue) : undefined;
  const { appKey, session, filter: marketFilter, host, port, heartbeatMs, conflateMs } = args;
  return { stream: { appKey, session, marketFilter, host, port, heartbeatMs, conflateMs, ca }, catalogue };
}

const say = (text: string) => process.stderr.write(`betfair: ${text}\n`);

/** Problems shown on stderr; the rest are counted only, so a burst of bad data cannot flood the log. */
const SHOWN_PROBLEMS = 100;

/** Problems shown on stderr up to SHOWN_PROBLEMS; the rest only counted. */
function problems(): (text: string) => void {
  let shown = 0;
  return (text) => {
    if (++shown <= SHOWN_PROBLEMS) say(text);
    else if (shown === SHOWN_PROBLEMS + 1) say('more problems: counted in the summary, not shown');
  };
}

/** The adapter's run as the stream's events tell it: said on stderr, and the exit code once it stops. */
interface Run {
  readonly done: Promise<number>;
  readonly reconnects: number;
  /** The adapter closes the service's socket itself from here on: not a failure. */
  closing(): void;
}

function follow(stream: ExchangeStream, publisher: Publisher, forwarder: Forwarder, where: string): Run {
  let reconnects = 0;
  let everSubscribed = false;
  /** Set before stopping the stream for a reason of our own, so the stop counts as a failure. */
  let failed = false;
  let closing = false;
  const done = new Promise<number>((finish) => {
    stream.on('connected', (id) => say(`connected to ${where} (connection ${id})`));
    stream.on('subscribed', ({ resumed }) => {
      everSubscribed = true;
      say(resumed ? 'subscription resumed from the last clk' : 'subscribed');
    });
    stream.on('change', (msg) => forwarder.push(msg, `the change with clk ${msg.clk ?? '(none)'}`));
    stream.on('health', (status) => say(status === null ? 'the exchange says its data is current again' : `the exchange says its data is late or incomplete (status ${status})`));
    stream.on('reconnecting', (reason, delayMs) => {
      // Failing before ever subscribing is most likely a wrong host, port or CA: say so rather than retry forever.
      if (!everSubscribed && !reason.refusal) {
        failed = true;
        say(`cannot use the stream at ${where}: ${reason.message}`);
        return stream.stop();
      }
      reconnects++;
      say(`${reason.message}; reconnecting in ${Math.round(delayMs)} ms`);
    });
    stream.on('stopped', (reason) => {
      if (reason) say(`stopped: ${reason.message}`);
      finish(reason || failed ? 1 : 0);
    });
    void publisher.broken.then((err) => {
      if (failed || closing) return;
      say(`stopped: the service's socket failed: ${err.message}`);
      failed = true;
      stream.stop();
    });
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => {
      say(`${signal}: sending what is held, then stopping`);
      stream.stop();
    });
  });
  return {
    done,
    get reconnects() {
      return reconnects;
    },
    closing: () => (closing = true),
  };
}

/** The arguments and what they name read, or the exit code of a start refused (or of --help). */
async function begin(argv: string[]): Promise<{ args: BetfairArgs; opts: Awaited<ReturnType<typeof options>> } | number> {
  try {
    const args = parseArgs(argv);
    if (args === 'help') {
      process.stdout.write(`${USAGE}\n`);
      return 0;
    }
    return { args, opts: await options(args) };
  } catch (err) {
    return refuseStart('betfair', USAGE, err);
  }
}

async function main(argv: string[]): Promise<number> {
  const begun = await begin(argv);
  if (typeof begun === 'number') return begun;
  const { args, opts } = begun;
  const stream = new ExchangeStream(opts.stream);
  let publisher: Publisher;
  try {
    // Heartbeats only while the exchange's data comes as it should: silence then tells the service its markets are stale.
    publisher = await Publisher.connect({ url: args.url, key: args.key, source: stream });
  } catch (err) {
    say((err as Error).message);
    return 1;
  }
  const problem = problems();
  const ledger = new Ledger();
  const translator = new Translator({ catalogue: opts.catalogue, ledger });
  let pauses = 0;
  const outbox = new Outbox({
    publisher, translator, ledger, problem, maxBytes: args.queueBytes,
    pressure: (full) => {
      if (full) {
        pauses++;
        stream.pause();
      } else {
        stream.resume();
      }
    },
  });
  const forwarder = new Forwarder({ translator, outbox, problem, refresh: () => stream.resubscribe(), refreshMs: args.refreshMs });
  const run = follow(stream, publisher, forwarder, `${args.host}:${args.port}`);
  stream.start();
  const started = performance.now();
  let code = await run.done;
  forwarder.stop();
  await outbox.flush().catch(() => (code = 1));
  run.closing();
  await publisher.close();
  const s = forwarder.stats;
  printSummary(
    `${s.messages} messages, ${s.changes} market changes, ${translator.marketsSeen} markets`,
    ledger,
    `${s.problems} problems, ${outbox.stats.batches} batches, ${publisher.heartbeats} heartbeats, ${run.reconnects} reconnects, ${s.refreshes} resubscriptions, ${pauses} pauses`,
    performance.now() - started,
  );
  return code;
}

if (runsAsTool(import.meta.url)) {
  main(process.argv.slice(2)).then((code) => (process.exitCode = code), (err: unknown) => {
    say((err as Error).stack ?? String(err));
    process.exitCode = 1;
  });
}
