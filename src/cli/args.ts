import { parseArgs } from 'node:util';
import { ConfigError } from '../config.js';

/** A command line the tool cannot run: said with the usage, exit 2. */
export class UsageError extends Error {}

interface CommandLine {
  readonly help: boolean;
  readonly options: Readonly<Record<string, string | undefined>>;
  readonly positionals: readonly string[];
}

/** The tools' one parser: strict, the given `--name VALUE` options, positionals, and -h/--help. */
export function parseCommandLine(argv: string[], names: readonly string[] = []): CommandLine {
  const options = Object.fromEntries(names.map((n) => [n, { type: 'string' as const }]));
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, strict: true, options: { ...options, help: { type: 'boolean', short: 'h' } } });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const { help, ...values } = parsed.values;
  return { help: help === true, options: values as Record<string, string | undefined>, positionals: parsed.positionals };
}

/** Says why a tool could not begin (bad usage or setting) and returns its exit code, 2; anything else is rethrown. */
export function refuseStart(tool: string, usage: string, err: unknown): 2 {
  if (err instanceof UsageError) process.stderr.write(`${tool}: ${err.message}\n${usage}\n`);
  else if (err instanceof ConfigError) process.stderr.write(`configuration error: ${err.message}\n`);
  else throw err;
  return 2;
}
