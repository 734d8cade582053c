/**
 * The odds client's connection: a silent peer found within two heartbeats,
 * a quiet live connection kept by the server's heartbeats, the API key as a
 * query parameter, a revoked key ending the client, and what the package
 * exports for browsers (both builds: the server's and odds-service-client's).
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { WebSocketServer } from 'ws';
import { keyLive, startTestService } from '../helpers/service.js';
import { createKey, revokeKey } from '../../src/auth/keys.js';
import { next, startClient, until, wsUrl } from './helpers.js';

const ROOT = new URL('../../../', import.meta.url).pathname;
const FORMATS = ['json', 'proto'] as const;
const HB = 500;

for (const format of FORMATS) {
  t.test(`${format}: a peer that accepts and then never sends is found dead after two heartbeats, and the client reconnects`, async (t) => {
    let connections = 0;
    const silent = new WebSocketServer({ host: '127.0.0.1', port: 0, handleProtocols: (offered) => [...offered][0] ?? false });
    silent.on('connection', () => connections++);
    t.teardown(() => new Promise((ok) => silent.close(ok)));
    await new Promise((ok) => silent.once('listening', ok));
    const { port } = silent.address() as { port: number };

    const { client } = startClient(t, { url: `ws://127.0.0.1:${port}/ws`, format, hb: HB });
    const [protocol] = await next(client, 'open');
    t.equal(protocol, `odds.v1.${format}`);
    const pending = client.subscribe({ mids: ['1.1'] });
    // A client that waited for the socket to notice would never close (a silent peer sends no FIN):
    // this wait's bound fails it. How soon after two heartbeats is judged on a clock in client/silence.test.ts.
    const [info] = await next(client, 'close', () => true, 2 * HB + 20_000);
    t.equal(info.code, 1006);
    const silence = Number(/^no frame for (\d+) ms .*dead peer$/.exec(info.reason)?.[1]);
    t.ok(silence >= 2 * HB, `not before two heartbeats of silence (${info.reason})`);
    t.ok(info.reconnectInMs !== undefined, 'it will reconnect');
    t.ok(await until(() => connections === 2), 'and does');
    t.same(client.subscriptions.map((s) => s.mids), [['1.1']], 'the unanswered subscribe is still wanted');
    client.close();
    await t.rejects(pending, /the client was closed/, 'close() rejects what still waits');
  });
}

t.test('a quiet connection to the live service stays up on its heartbeats', async (t) => {
  const svc = await startTestService(t);
  const { client, frames } = startClient(t, { url: wsUrl(svc.url), hb: HB });
  await next(client, 'open');
  let closed = false;
  client.on('close', () => (closed = true));
  // Through five heartbeats, however late a busy machine sends them, and stopped early by a close.
  const heartbeats = () => frames.filter((f) => f.op === 'hb').length;
  t.ok(await until(() => heartbeats() >= 5 || closed, 20 * HB), `five heartbeats or a close (${heartbeats()} heartbeats)`);
  t.notOk(closed, 'no dead peer declared');
  t.ok(frames.filter((f) => f.op === 'hb').length >= 3, 'heartbeats arrived');
});

t.test('AUTH=on: the key goes in the query; without one the client keeps trying; a revoked key ends it', async (t) => {
  const svc = await startTestService(t, { AUTH: 'on', REST_RATE_LIMIT: '0' });
  const { id, token } = await createKey(svc.pool, 'acme', 'subscriber');
  await keyLive(svc.url, token);
  const keyed = startClient(t, { url: wsUrl(svc.url), key: token }).client;
  t.match(await keyed.subscribe({ mids: ['1.200001001'] }), { status: 1 }, 'a subscriber key is let in');

  const keyless = startClient(t, { url: wsUrl(svc.url) }, false);
  const refused = next(keyless.client, 'close');
  keyless.client.connect();
  const [info] = await refused;
  t.equal(info.opened, false);
  t.match(info.error, /401/);
  t.ok(info.reconnectInMs !== undefined, 'it will try again');
  keyless.client.close();

  const ended = next(keyed, 'close');
  t.ok(await revokeKey(svc.pool, id));
  const [revoked] = await ended;
  t.equal(revoked.code, 4003);
  t.equal(revoked.reconnectInMs, undefined, 'no reconnect with a revoked key');
});

t.test('the client package: importable as odds-service/client, and using no Node-only API', async (t) => {
  const specifier = 'odds-service/client';
  const mod = (await import(specifier)) as Record<string, unknown>;
  t.type(mod.OddsClient, 'function', 'OddsClient is exported');
  const server = new URL('../../src/client/index.js', import.meta.url).pathname;
  t.ok(readFileSync(server.replace(/\.js$/, '.d.ts'), 'utf8').includes('OddsClient'), 'with its types');

  // The server's build of the client and the package's (client/dist) are compiled apart: both are scanned.
  for (const entry of [server, join(ROOT, 'client/dist/client/index.js')]) {
    t.test(entry.slice(ROOT.length), async (t) => {
      // Every module the client loads, followed from its entry point through relative imports.
      const files = new Set<string>();
      const bare = new Set<string>();
      const visit = (file: string) => {
        if (files.has(file)) return;
        files.add(file);
        // Comments dropped: the entry point's usage example imports `ws` in one.
        const code = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
        // `from` only in an import or export statement: a delta's `from` key is no import.
        for (const [, from, bareImport] of code.matchAll(/^\s*(?:import|export)\b[^;'"]*\bfrom\s*['"]([^'"]+)['"]|\bimport\s*\(?\s*['"]([^'"]+)['"]/gm)) {
          const spec = from ?? bareImport;
          if (spec.startsWith('.')) visit(resolve(dirname(file), spec));
          else bare.add(spec);
        }
        t.notMatch(code, /\bBuffer\b|\bprocess\b|\brequire\(/, `${file.split('/dist/')[1]} uses no Node global`);
      };
      visit(entry);
      t.ok(files.has(join(dirname(entry), '../odds/codec.js')), 'the codecs are followed');
      t.notOk([...files].some((f) => f.endsWith('/odds/book.js')), 'the server book (node:crypto) is not loaded');
      t.same([...bare], ['protobufjs/minimal.js'], 'the only package it needs is protobufjs');
    });
  }
});
