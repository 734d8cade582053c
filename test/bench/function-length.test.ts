import t from 'tap';
import { MAX_LINES, longFunctions } from '../helpers/function-length.js';

/**
 * bench/ is read by whoever has to trust its figures: no function in it runs longer than 80 lines,
 * not counting lines that are pure data, so each step of a benchmark can be read on one screen.
 */
const BENCH = new URL('../../../bench/', import.meta.url).pathname;

t.test(`no function in bench/ is longer than ${MAX_LINES} lines of code`, async (t) => {
  t.same(longFunctions(BENCH, 'bench'), [], 'split these into named steps');
});
