/** The service's own seeded PRNG, so every test run sees the same sequence of choices. */
export { seeded } from '../../src/lib/random.js';
