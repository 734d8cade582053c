/**
 * `npm run replay -- FILE|FOLDER... [--speed N|max] [--from T] [--to T] [--sequential] ...`: publishes
 * recorded Betfair stream files through `/ingest` (src/exchange), merged by publish time. Bad
 * input is reported on stderr and counted, and costs only its market; the summary on stdout says
 * by market what was published and what was not. Exit code 0 when everything was published, 1
 * when anything was not (or the service's socket failed), 2 for bad usage or unreadable paths.
 */
import { readFile } from 'node:fs/promises';
import { Catalogue } from '../exchange/catalogue.js';
import { expand, READ_LIMITS } from '../exchange/files.js';
import { Ledger } from '../exchange/ledger.js';
import { DEFAULT_MAX_OPEN } from '../exchange/merge.js';
import { Outbox } from '../exchange/outbox.js';
import { Publisher, PublishError } from '../exchange/publisher.js';
import { newStats, replay, type ReplayStats } from '../exchange/replay.js';
import { Translator } from '../exchange/translate.js';
import { parseCommandLine, refuseStart, secret, serviceUrl, UsageError, wholeNumber } from './args.js';
import { runsAsTool } from './fresh.js';

const USAGE = `usage: npm run replay -- FILE|FOLDER... [--speed N|max] [--from TIME] [--to TIME] [--sequential] [--open N]
                         [--url URL] [--key KEY | --key-file FILE] [--catalogue FILE] [--progress S] [--max-file-bytes N]
  FILE        Betfair stream recordings, one message a line: plain, .gz or .bz2; folders are read whole
  --speed     N times the recorded pace (default 1), or max: as fast as the service acks
  --from      replay from this publish time (ISO 8601, or ms since 1970); what comes before only builds the books
  --to        replay up to this publish time
  --sequential  the files one after another in the order given, instead of merged by publish time
  --open      files read at once while merging (default ${DEFAULT_MAX_OPEN})
  --url       the service (http://HOST:PORT, as npm start prints it) or its publisher socket (ws://HOST:PORT/ingest);
              default: the variable URL, the same, else HOST and PORT as npm start reads them (127.0.0.1:8080 when unset)
  --key       API key with the publisher role (needed with AUTH=on); or --key-file, ODDS_INGEST_KEY, ODDS_INGEST_KEY_FILE
  --catalogue a saved listMarketCatalogue answer (JSON): names and competitions the stream lacks
  --progress  seconds between progress lines on stderr (default: every 0.5 s on a terminal, none otherwise)
  --max-file-bytes  decompressed bytes a file may hold (default ${READ_LIMITS.maxFileBytes})`;

interface ReplayArgs {
  paths: string[];
  speed: number | 'max';
  from?: number;
  to?: number;
  order: 'time' | 'files';
  maxOpen: number;
  url: string;
  key?: string;
  catalogue?: string;
  progressS?: number;
  maxFileBytes: number;
}

/** Why a path cannot be read, in words rather than the system's codes. */
const UNREADABLE: Readonly<Record<string, string>> = {
  ENOENT: 'no such file or folder', EACCES: 'permission denied', ENOTDIR: 'a part of the path is not a folder', ELOOP: 'too many symbolic links',
};

/** Problems shown on stderr; the rest are counted only, so a damaged file cannot flood a terminal. */
const SHOWN_PROBLEMS = 100;
const MAX_SPEED = 1_000_000;
const MAX_OPEN = 4096;

function time(value: string | undefined, option: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = /^\d{1,16}$/.test(value) ? Number(value) : /^\d{4}-\d\d-\d\d/.test(value) ? Date.parse(value) : NaN;
  if (!Number.isFinite(ms)) throw new UsageError(`${option} must be an ISO 8601 time (2026-05-01T14:00:00Z) or ms since 1970, got ${value}`);
  return ms;
}

export function parseArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): ReplayArgs | 'help' {
  const line = parseCommandLine(argv, ['speed', 'from', 'to', 'open', 'url', 'key', 'key-file', 'catalogue', 'progress', 'max-file-bytes'], ['sequential']);
  if (line.help) return 'help';
  const { speed = '1', catalogue, progress } = line.options;
  if (!line.positionals.length) throw new UsageError('give at least one file or folder');
  const n = /^\d+(\.\d+)?$/.test(speed) ? Number(speed) : NaN;
  if (speed !== 'max' && !(n > 0 && n <= MAX_SPEED)) throw new UsageError(`--speed must be a number above 0 and at most ${MAX_SPEED}, or max; got ${speed}`);
  const url = serviceUrl(line.options.url, env, '/ingest');
  const from = time(line.options.from, '--from');
  const to = time(line.options.to, '--to');
  if (from !== undefined && to !== undefined && to < from) throw new UsageError('--to must not be before --from');
  const progressS = progress === undefined ? undefined : /^\d+(\.\d+)?$/.test(progress) && Number(progress) >= 0.1 ? Number(progress) : NaN;
  if (Number.isNaN(progressS)) throw new UsageError(`--progress must be a number of seconds, at least 0.1, got ${progress}`);
  return {
    paths: [...line.positionals], speed: speed === 'max' ? 'max' : n, from, to, order: line.flags.sequential ? 'files' : 'time',
    maxOpen: wholeNumber(line.options.open, '--open', 1, MAX_OPEN) ?? DEFAULT_MAX_OPEN, url, key: secret(line.options, 'key', 'ODDS_INGEST_KEY'),
    catalogue, progressS, maxFileBytes: wholeNumber(line.options['max-file-bytes'], '--max-file-bytes', 1, Number.MAX_SAFE_INTEGER) ?? READ_LIMITS.maxFileBytes,
  };
}

export async function loadCatalogue(file: string): Promise<Catalogue> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    throw new UsageError(`--catalogue ${file}: ${(err as Error).message}`);
  }
  const catalogue = Catalogue.parse(json);
  if (typeof catalogue === 'string') throw new UsageError(`--catalogue ${file}: ${catalogue}`);
  return catalogue;
}

const clock = (pt: number | undefined) => (pt === undefined ? '-' : new Date(pt).toISOString().replace('T', ' ').slice(0, 19));

/**
 * The adapters' summary on stdout: one line of totals (what was published and what was not, the
 * process's peak memory, the time taken), then one line a market, those with a problem first.
 */
export function printSummary(head: string, ledger: Ledger, tail: string, ms: number): void {
  const t = ledger.totals;
  const sent = t.published + t.refused;
  const peak = Math.round(process.resourceUsage().maxRSS / 1024);
  process.stdout.write(
    `${head}, ${sent} images sent: ${t.published} published, ${t.refused} refused by the service; ${t.withheld} withheld, `
    + `${t.unapplied} changes not applied, ${tail}, peak memory ${peak} MiB, ${(ms / 1000).toFixed(2)} s\n`
    + `by market (${ledger.troubled} with anything not published):\n${ledger.lines().map((l) => `  ${l}\n`).join('')}`,
  );
}

function progressLine(stats: ReplayStats, markets: number, seconds: number): string {
  return `${clock(stats.clock)} (recording)  ${stats.messages} messages  ${markets} markets  ${Math.round(stats.messages / seconds)} msg/s`;
}

async function main(argv: string[]): Promise<number> {
  let args: ReplayArgs | 'help';
  let files: string[];
  let catalogue: Catalogue | undefined;
  try {
    args = parseArgs(argv);
    if (args === 'help') {
      process.stdout.write(`${USAGE}\n`);
      return 0;
    }
    files = await expand(args.paths).catch((err: NodeJS.ErrnoException) => {
      throw new UsageError(`cannot read ${err.path ?? 'a file'}: ${UNREADABLE[err.code ?? ''] ?? err.message}`);
    });
    if (args.catalogue) catalogue = await loadCatalogue(args.catalogue);
  } catch (err) {
    return refuseStart('replay', USAGE, err);
  }
  let shown = 0;
  const problem = (text: string) => {
    shown++;
    if (shown <= SHOWN_PROBLEMS) process.stderr.write(`replay: ${text}\n`);
    else if (shown === SHOWN_PROBLEMS + 1) process.stderr.write(`replay: more problems: counted in the summary, not shown\n`);
  };
  let publisher: Publisher;
  try {
    publisher = await Publisher.connect({ url: args.url, key: args.key, replay: true });
  } catch (err) {
    process.stderr.write(`replay: ${(err as Error).message}\n`);
    return 1;
  }
  const ledger = new Ledger();
  const translator = new Translator({ catalogue, ledger });
  const outbox = new Outbox({ publisher, translator, ledger, problem });
  const stats = newStats();
  const started = performance.now();
  const seconds = () => (performance.now() - started) / 1000;
  const tty = process.stderr.isTTY && args.progressS === undefined;
  const every = args.progressS ?? (process.stderr.isTTY ? 0.5 : undefined);
  const progress = every === undefined ? undefined : setInterval(() => {
    const text = progressLine(stats, translator.marketsSeen, seconds());
    process.stderr.write(tty ? `\r${text}   ` : `replay: ${text}\n`);
  }, every * 1000);
  let failed = false;
  try {
    await replay({
      files, speed: args.speed, from: args.from, to: args.to, order: args.order, maxOpen: args.maxOpen,
      limits: { ...READ_LIMITS, maxFileBytes: args.maxFileBytes }, translator, outbox, stats, problem,
    });
  } catch (err) {
    if (!(err instanceof PublishError)) throw err;
    failed = true;
    process.stderr.write(`${tty ? '\n' : ''}replay: stopped: the service's socket failed: ${err.message}\n`);
  } finally {
    clearInterval(progress);
    await publisher.close();
  }
  if (tty && !failed) process.stderr.write('\n');
  const before = stats.before ? ` (and ${stats.before} before --from)` : '';
  printSummary(`${stats.messages} messages${before}, ${translator.marketsSeen} markets`, ledger, `${stats.problems} problems`, performance.now() - started);
  const t = ledger.totals;
  return failed || stats.problems || t.withheld || t.refused || t.unapplied ? 1 : 0;
}

if (runsAsTool(import.meta.url)) {
  main(process.argv.slice(2)).then((code) => (process.exitCode = code), (err: unknown) => {
    process.stderr.write(`replay: ${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  });
}
