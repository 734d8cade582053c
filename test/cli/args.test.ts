/**
 * What every tool's command line means, read without running a tool: options, switches and
 * positionals; a bad one a usage error; secrets from an argument, a file or the environment; whole
 * numbers in range; and the one way each tool finds the service.
 */
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseCommandLine, secret, serviceUrl, UsageError, wholeNumber } from '../../src/cli/args.js';

/** The message of the usage error `fn` throws; undefined when it throws none. */
function usageError(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    if (err instanceof UsageError) return err.message;
    throw err;
  }
  return undefined;
}

t.test('options, switches, positionals and help; an unknown option is a usage error', async (t) => {
  t.same(parseCommandLine(['a', '--url', 'ws://x', '--sequential', 'b'], ['url'], ['sequential']),
    { help: false, options: { url: 'ws://x' }, flags: { sequential: true }, positionals: ['a', 'b'] });
  t.same(parseCommandLine(['-h'], ['url']).help, true);
  t.same(parseCommandLine([], [], ['dry']).flags, { dry: false }, 'a switch not given is false');
  t.match(usageError(() => parseCommandLine(['--nope'])), /Unknown option '--nope'/);
  t.match(usageError(() => parseCommandLine(['--url'], ['url'])), /'--url <value>' argument missing/, 'an option without its value');
});

t.test('a secret from --NAME, --NAME-file, ENV or ENV_FILE, in that order; empty ones refused', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'args-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'key');
  writeFileSync(file, '  from-file\n');
  const saved = { ...process.env };
  t.teardown(() => {
    delete process.env.T_KEY;
    delete process.env.T_KEY_FILE;
    Object.assign(process.env, saved);
  });
  process.env.T_KEY = 'from-env';
  t.equal(secret({ key: 'given' }, 'key', 'T_KEY'), 'given');
  t.equal(secret({ 'key-file': file }, 'key', 'T_KEY'), 'from-file', 'a file\'s content, trimmed');
  t.equal(secret({}, 'key', 'T_KEY'), 'from-env');
  delete process.env.T_KEY;
  process.env.T_KEY_FILE = file;
  t.equal(secret({}, 'key', 'T_KEY'), 'from-file');
  delete process.env.T_KEY_FILE;
  t.equal(secret({}, 'key', 'T_KEY'), undefined, 'none given');
  t.throws(() => secret({ key: '' }, 'key', 'T_KEY'), { message: '--key must not be empty' });
  writeFileSync(file, '\n');
  t.throws(() => secret({ 'key-file': file }, 'key', 'T_KEY'), { message: `--key-file ${file} is empty` });
  t.throws(() => secret({ 'key-file': join(dir, 'none') }, 'key', 'T_KEY'), /--key-file .*none: ENOENT/);
});

t.test('a whole number in range, or a usage error naming the option and what it got', async (t) => {
  t.equal(wholeNumber(undefined, '--port', 1, 65535), undefined);
  t.equal(wholeNumber('8080', '--port', 1, 65535), 8080);
  for (const bad of ['0', '65536', '1.5', '-1', '1e3', ' 1', '']) {
    t.throws(() => wholeNumber(bad, '--port', 1, 65535), { message: `--port must be a whole number from 1 to 65535, got ${bad}` }, JSON.stringify(bad));
  }
});

t.test('the service\'s socket: --url, else URL, else HOST and PORT as npm start reads them', async (t) => {
  t.equal(serviceUrl('http://odds:9000', {}, '/ingest'), 'ws://odds:9000/ingest', 'the address npm start prints, given the socket\'s path');
  t.equal(serviceUrl('https://odds', {}, '/ws'), 'wss://odds/ws');
  t.equal(serviceUrl('ws://odds:9000/ingest?live=2000', {}, '/ingest'), 'ws://odds:9000/ingest?live=2000', 'a socket URL as it is');
  t.equal(serviceUrl(undefined, { URL: 'http://u:1' }, '/ws'), 'ws://u:1/ws');
  t.equal(serviceUrl(undefined, {}, '/ws'), 'ws://127.0.0.1:8080/ws', 'npm start\'s defaults');
  t.equal(serviceUrl(undefined, { HOST: '0.0.0.0', PORT: '81' }, '/ws'), 'ws://127.0.0.1:81/ws', 'every interface is dialled on loopback');
  t.equal(serviceUrl(undefined, { HOST: '::' }, '/ws'), 'ws://[::1]:8080/ws');
  t.throws(() => serviceUrl(undefined, { PORT: 'x' }, '/ws'), /PORT must be the service's port/);
  t.throws(() => serviceUrl('ftp://x', {}, '/ws'), { message: '--url must be an http(s):// or ws(s):// address, got ftp://x' });
  t.throws(() => serviceUrl(undefined, { URL: 'nope' }, '/ws'), /^URL must be the service's address/);
});
