/**
 * The soak run's settings, read once from its arguments into one frozen object: what the load
 * asks for (--minutes, --sockets, --rps, --images, --markets) and the fixed rhythm and bounds of
 * the run and its verdict. A bad argument stops the run with exit 2, naming it.
 */

const USAGE = `usage: npm run soak [-- --minutes N] [--sockets N] [--rps N] [--images N] [--markets N]
  --minutes   run length, default 3 (any positive number; 30+ for slow leaks)
  --sockets   subscriber sockets held open, default 500
  --rps       REST requests per second, default 300
  --images    odds images ingested per second, default 200
  --markets   markets per subscriber socket, default 5`;

export interface SoakArgs {
  minutes: number;
  sockets: number;
  rps: number;
  images: number;
  markets: number;
}

function parseArgs(argv: string[]): SoakArgs {
  const out: SoakArgs = { minutes: 3, sockets: 500, rps: 300, images: 200, markets: 5 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') {
      process.stdout.write(USAGE + '\n');
      process.exit(0);
    }
    const m = /^--(minutes|sockets|rps|images|markets)(?:=(.*))?$/.exec(a);
    const raw = m ? (m[2] ?? argv[++i]) : undefined;
    const n = Number(raw);
    if (!m || raw === undefined || !Number.isFinite(n) || n <= 0) {
      process.stderr.write(`bad argument ${a}${raw !== undefined ? ' ' + raw : ''}\n${USAGE}\n`);
      process.exit(2);
    }
    out[m[1] as keyof SoakArgs] = m[1] === 'minutes' ? n : Math.round(n);
  }
  return out;
}

const args = Object.freeze(parseArgs(process.argv.slice(2)));
const durationS = args.minutes * 60;
const sampleS = 10;

export const SETTINGS = Object.freeze({
  /** What the load asks for, as given on the command line. */
  args,
  durationS,
  /** A sample of the gauges and memory every this many seconds. */
  sampleS,
  /** The heap is probed this often between samples; a sample keeps the window's floor. */
  probeS: 2,
  /** Samples before this are not judged: max(60 s, 30% of the run), leaving at least 3 samples. */
  warmupS: Math.max(0, Math.min(Math.max(60, 0.3 * durationS), durationS - 3 * sampleS)),
  churnEveryS: 5,
  /** Share of the sockets closed and opened again at each churn. */
  churnShare: 0.05,
  movesPerChurn: 20,
  restSubEveryS: 15,
  restSubHoldMs: 1000,
  toggleEveryS: 5,
  /** Sockets left open when the service is stopped, to see their close codes. */
  keepForShutdown: 10,
  /** Memory bounds: both must be passed for a failure. */
  memSlopeMBPerMin: 2,
  memGrowthRatio: 1.25,
  otherSocketsGrowth: 50,
});
