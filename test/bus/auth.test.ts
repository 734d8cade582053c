/**
 * The bus is closed: the service proves itself to NATS (a password or an
 * nkey, optionally over TLS), refused credentials stop the start with a line
 * naming what to fix, and a client without the service's rights can neither
 * publish to the service's subjects nor read them.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode, Events, connect, nkeys, type NatsConnection } from 'nats';
import { postJson, startTestService } from '../helpers/service.js';
import { freshDatabase } from '../helpers/db.js';
import { eventually } from '../helpers/wait.js';
import { Client, image } from '../helpers/ws.js';
import { NATS_BINARY, NatsServer, USERS, authorizedNats } from '../helpers/nats.js';
import { scrape, value } from '../helpers/metrics.js';
import { envelope } from '../../src/bus/nats/stream.js';

if (!NATS_BINARY) {
  t.test('the bus is closed', { skip: 'nats-server is not installed here (.ci/run installs Debian\'s nats-server)' }, () => undefined);
} else {
  const user = nkeys.createUser();
  const nats = await authorizedNats(t, { users: [`{ nkey: "${user.getPublicKey()}", permissions: $ODDS_SERVICE_PERMISSIONS }`] });
  const db = await freshDatabase(t);
  const base = { BUS: 'nats', NATS_URL: nats.url };
  const M = '1.200001001';
  const connected = async (url: string) => value(await scrape(url), 'odds_bus_connected');
  /** The pod with the right user and password, for the file: joining the bus and holding it against an intruder are two looks at one pod. */
  const pod = await startTestService(t, { ...base, NATS_USER: 'odds', NATS_PASSWORD: USERS.odds }, db);

  t.test('with the right user and password the pod joins the bus', async (t) => {
    t.equal(await eventually(() => connected(pod.url), (v) => v === 1, 10000), 1);
  });

  t.test('with an nkey seed file the pod joins the bus', async (t) => {
    const seed = nats.file('odds.nk');
    writeFileSync(seed, new TextDecoder().decode(user.getSeed()) + '\n');
    const pod = await startTestService(t, { ...base, NATS_NKEY_FILE: seed }, db);
    t.equal(await eventually(() => connected(pod.url), (v) => v === 1, 10000), 1);
  });

  t.test('a wrong password stops the start, naming the variables to fix', async (t) => {
    await t.rejects(startTestService(t, { ...base, NATS_USER: 'odds', NATS_PASSWORD: 'wrong' }, db), {
      message: /nats refused this pod's credentials .*check NATS_USER \("odds"\) and NATS_PASSWORD/,
    });
  });

  t.test('no credentials against a server that wants them stops the start, naming the variables to set', async (t) => {
    await t.rejects(startTestService(t, base, db), { message: /nats refused .*set NATS_USER and NATS_PASSWORD, or NATS_NKEY_FILE/ });
  });

  t.test('a client with no credentials cannot connect at all', async (t) => {
    await t.rejects(connect({ servers: nats.url }), { code: ErrorCode.AuthorizationViolation });
  });

  t.test('a user without the service\'s rights can neither publish to its subjects nor read them', async (t) => {
    await eventually(() => connected(pod.url), (v) => v === 1, 10000);
    const sub = await Client.connect(pod.url);
    t.teardown(() => sub.close());
    await sub.request({ op: 'subscribe', mids: [M] });
    const intruder = await connect({ servers: nats.url, user: 'intruder', pass: USERS.intruder });
    t.teardown(() => intruder.close());
    const refusals = watchRefusals(intruder);

    const read = intruder.subscribe('odds.>');
    const got: string[] = [];
    void (async () => { for await (const m of read) got.push(m.subject); })().catch(() => undefined);
    const from = sub.frames.length;
    intruder.publish(`odds.img.${M}`, envelope(1, new Uint8Array([1, 2, 3])));
    intruder.publish('odds.ctl.client', new TextEncoder().encode(JSON.stringify({ op: 'detach', client: 'public', mids: [M] })));
    await intruder.flush();
    const bySubject = <T extends { subject: string }>(r: T[]) => [...r].sort((x, y) => x.subject.localeCompare(y.subject));
    t.same(bySubject(await eventually(async () => refusals.slice(), (r) => r.length >= 3, 5000)), bySubject([
      { operation: 'subscription', subject: 'odds.>' },
      { operation: 'publish', subject: `odds.img.${M}` },
      { operation: 'publish', subject: 'odds.ctl.client' },
    ]), 'the server refused the subscription and both publishes');

    await postJson(pod.url, '/api/v1/ingest', { data: [image(M, 4.2)] });
    await sub.next((f) => f.op === 'odds' && f.mid === M && f.r[0].b[0][0] === 4.2);
    t.same(sub.frames.slice(from).filter((f) => f.op === 'unsubscribed' || (f.op === 'odds' && f.r[0].b[0][0] !== 4.2)), [], 'the subscriber saw only the real image');
    t.same(got, [], 'and the intruder read nothing, the real image included');
    t.equal(value(await scrape(pod.url), 'odds_bus_rejected_total'), 0, 'nothing of theirs even reached the pod');
  });

  t.test('over TLS, with a client certificate, the pod joins the bus', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'odds-tls-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const [cert, key] = [join(dir, 'cert.pem'), join(dir, 'key.pem')];
    // One self-signed certificate: the CA, the server's and the client's. nats.js checks the server as localhost when dialling 127.0.0.1.
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert,
      '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'], { stdio: 'ignore' });
    const tls = await NatsServer.start(t, { config: `tls { cert_file: "${cert}", key_file: "${key}", ca_file: "${cert}", verify: true }\n`, scheme: 'tls' });
    const pod = await startTestService(t, { BUS: 'nats', NATS_URL: tls.url, NATS_TLS_CA: cert, NATS_TLS_CERT: cert, NATS_TLS_KEY: key }, db);
    t.equal(await eventually(() => connected(pod.url), (v) => v === 1, 10000), 1);
    await t.rejects(connect({ servers: tls.url, tls: { caFile: cert }, timeout: 2000 }), 'a client without a certificate is turned away');
  });
}

/** The server's refusals of this connection's operations, as they arrive. */
function watchRefusals(nc: NatsConnection): { operation: string; subject: string }[] {
  const out: { operation: string; subject: string }[] = [];
  void (async () => {
    for await (const s of nc.status()) if (s.type === Events.Error && s.permissionContext) out.push(s.permissionContext);
  })();
  return out;
}
