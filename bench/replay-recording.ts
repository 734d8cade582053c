/**
 * `node dist/bench/replay-recording.js FILE [STEPS]`: writes a recorded Betfair stream of one
 * soccer match odds market (full-depth ladders, trades, in play, suspensions, settlement) in the
 * historic data format, from the test suite's seeded generator: STEPS market changes (default
 * 20000) plus the definitions around them. Plain, .gz or .bz2 by FILE's ending. For timing
 * `npm run replay -- FILE --speed max` (docs/exchange.md shows the figures and the commands).
 */
import { dirname, basename } from 'node:path';
import { matchOdds, writeRecording } from '../test/exchange/fixtures.js';

const [file, steps = '20000'] = process.argv.slice(2);
if (!file || !/^\d+$/.test(steps)) {
  process.stderr.write('usage: node dist/bench/replay-recording.js FILE [STEPS]\n');
  process.exit(2);
}
const messages = matchOdds(Number(steps));
await writeRecording(dirname(file), basename(file), messages);
process.stdout.write(`${file}: ${messages.length} messages\n`);
