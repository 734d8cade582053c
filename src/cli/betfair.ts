/**
 * `npm run betfair -- --app-key KEY --session TOKEN (--markets IDS | --event-types IDS [--market-types TYPES]) ...`:
 * subscribes to markets on Betfair's Exchange Stream API (src/exchange/live) and publishes every
 * change through the service's `/ingest`, translated as `npm run replay` does. Connection events
 * go to stderr; a summary goes to stdout when it stops. Exit code 0 after SIGINT/SIGTERM with
 * nothing refused, 1 when the exchange refused the credentials or filter, the first connection
 * failed, the service refused a batch or a change was refused, 2 for bad usage.
 */
import { readFile } from 'node:fs/promises';
import type { Catalogue } from '../exchange/catalogue.js';
import { DEFAULT_HOST, DEFAULT_PORT, ExchangeStream, type ExchangeStreamOptions } from '../exchange/live/client.js';
import { Forwarder } from '../exchange/live/forward.js';
import { CONFLATE_MS, HEARTBEAT_MS, type MarketFilter } from '../exchange/live/protocol.js';
import { Publisher } from '../exchange/publisher.js';
import { Translator } from '../exchange/translate.js';
import { POSITIVE_ID } from '../refdata/ids.js';
import { parseCommandLine, refuseStart, UsageError } from './args.js';
import { loadCatalogue } from './replay.js';
import { runsAsTool } from './fresh.js';

const USAGE = `usage: npm run betfair -- --app-key KEY --session TOKEN (--markets IDS | --event-types IDS [--market-types TYPES])
                          [--host ${DEFAULT_HOST}] [--port ${DEFAULT_PORT}] [--ca FILE] [--heartbeat MS] [--conflate MS]
                          [--url URL] [--key KEY] [--catalogue FILE]
  --app-key       Betfair application key (enabled for streaming)
  --session       Betfair session token (from a login)
  --markets       market IDs, comma-separated, e.g. 1.230000001,1.230000002
  --event-types   event type IDs, comma-separated, e.g. 1 (soccer),2 (tennis),4 (cricket)
  --market-types  market types with --event-types or --markets, e.g. MATCH_ODDS,OVER_UNDER_25
  --host, --port  the stream server (default ${DEFAULT_HOST}:${DEFAULT_PORT}, TLS)
  --ca            a PEM file of extra CA certificates to trust (a private stream server); certificates are always verified
  --heartbeat     ms between the exchange's heartbeats on a quiet stream, ${HEARTBEAT_MS.min} to ${HEARTBEAT_MS.max} (default ${HEARTBEAT_MS.default})
  --conflate      ms the exchange may conflate changes over, ${CONFLATE_MS.min} to ${CONFLATE_MS.max} (default: the exchange's)
  --url           the service's publisher socket (default ws://127.0.0.1:8080/ingest)
  --key           API key with the publisher role, sent in the x-api-key header (needed with AUTH=on)
  --catalogue     a saved listMarketCatalogue answer (JSON): names and competitions the stream lacks`;

/** More than the exchange lets one connection subscribe to; keeps a pasted list from being unbounded. */
const MAX_FILTER_ENTRIES = 1000;
const NAMES = ['app-key', 'session', 'markets', 'event-types', 'market-types', 'host', 'port', 'ca', 'heartbeat', 'conflate', 'url', 'key', 'catalogue'];

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
}

function list(value: string | undefined, option: string, ok: (s: string) => boolean, rule: string): string[] | undefined {
  if (value === undefined) return undefined;
  const parts = [...new Set(value.split(','))];
  if (parts.length > MAX_FILTER_ENTRIES) throw new UsageError(`${option} takes at most ${MAX_FILTER_ENTRIES} entries, got ${parts.length}`);
  const bad = parts.find((p) => !ok(p));
  if (bad !== undefined) throw new UsageError(`${option} takes ${rule}, got "${bad}"`);
  return parts;
}

function whole(value: string | undefined, option: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = /^\d{1,6}$/.test(value) ? Number(value) : NaN;
  if (!(n >= min && n <= max)) throw new UsageError(`${option} must be a whole number from ${min} to ${max}, got ${value}`);
  return n;
}

function required(value: string | undefined, option: string): string {
  if (!value) throw new UsageError(`${option} is required`);
  return value;
}

export function parseArgs(argv: string[]): BetfairArgs | 'help' {
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
  const url = o.url ?? 'ws://127.0.0.1:8080/ingest';
  if (!/^wss?:\/\/[^/]/.test(url)) throw new UsageError(`--url must be a ws:// or wss:// URL, got ${url}`);
  if (o.key !== undefined && !o.key) throw new UsageError('--key must not be empty');
  if (o.host !== undefined && !/^[A-Za-z0-9.:-]{1,253}$/.test(o.host)) throw new UsageError(`--host must be a host name or IP address, got "${o.host}"`);
  return {
    appKey: required(o['app-key'], '--app-key'),
    session: required(o.session, '--session'),
    filter,
    host: o.host ?? DEFAULT_HOST,
    port: whole(o.port, '--port', 1, 65535) ?? DEFAULT_PORT,
    ca: o.ca,
    heartbeatMs: whole(o.heartbeat, '--heartbeat', HEARTBEAT_MS.min, HEARTBEAT_MS.max) ?? HEARTBEAT_MS.default,
    conflateMs: whole(o.conflate, '--conflate', CONFLATE_MS.min, CONFLATE_MS.max),
    url,
    key: o.key,
    catalogue: o.catalogue,
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

async function main(argv: string[]): Promise<number> {
  let args: BetfairArgs | 'help';
  let opts: Awaited<ReturnType<typeof options>>;
  try {
    args = parseArgs(argv);
    if (args === 'help') {
      process.stdout.write(`${USAGE}\n`);
      return 0;
    }
    opts = await options(args);
  } catch (err) {
    return refuseStart('betfair', USAGE, err);
  }
  let publisher: Publisher;
  try {
    publisher = await Publisher.connect({ url: args.url, key: args.key });
  } catch (err) {
    say((err as Error).message);
    return 1;
  }
  const translator = new Translator({ catalogue: opts.catalogue });
  const forwarder = new Forwarder(translator, publisher, say);
  const stream = new ExchangeStream(opts.stream);
  const where = `${args.host}:${args.port}`;
  let reconnects = 0;
  let everSubscribed = false;
  /** Set before stopping the stream for a reason of our own, so the stop counts as a failure. */
  let failed = false;
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
    void forwarder.failed.then((err) => {
      say(`stopped: ${err.message}`);
      failed = true;
      stream.stop();
    });
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => stream.stop());
  });
  stream.start();
  let code = await done;
  await forwarder.flush().catch(() => (code = 1));
  await publisher.close();
  const s = forwarder.stats;
  process.stdout.write(`${s.changes} changes, ${translator.marketsSeen} markets, ${s.images} images, ${s.refused} refused, ${s.batches} batches, ${reconnects} reconnects\n`);
  return code || (s.refused ? 1 : 0);
}

if (runsAsTool(import.meta.url)) {
  main(process.argv.slice(2)).then((code) => (process.exitCode = code), (err: unknown) => {
    say((err as Error).stack ?? String(err));
    process.exitCode = 1;
  });
}
