/**
 * The benchmarks' shared pieces used to live here; each now sits in a file named for what it
 * holds. This file only re-exports them, for code written against the old path.
 */
export * from './cores.js';
export * from './env.js';
export * from './paths.js';
export * from './proc.js';
export * from './quiet.js';
export * from './report.js';
export * from './run.js';
export * from './server.js';
export * from './statistics.js';
