import t from 'tap';
import { postJson, startTestService } from '../helpers/service.js';
import { Client, image } from '../helpers/ws.js';
import { CLOSE } from '../../src/errors.js';
import { scrape, value } from '../helpers/metrics.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Slow consumers and feed status over real sockets. Backpressure needs the
 * kernel's buffers full first, so the publisher pushes large images fast.
 */
const M = '1.200001007';
const RUNNERS = Array.from({ length: 150 }, (_, i) => i + 1);

t.test('a socket that stops reading ends with the server\'s latest image, and the others never wait', async (t) => {
  // The skip threshold is well above one round's frames (50 proto images of
  // 150 runners, about 0.4 MiB), and each round waits for the reading socket,
  // so it falls behind only if it waits on the stopped one, not because a busy
  // machine starved this test's own reader. The stopped socket is sent about
  // 11 MiB of JSON, twice what the kernel's buffers (on Linux's defaults a send buffer of at
  // most 4 MiB, and a receive buffer that stays small while nothing is read) and the threshold
  // hold. It is never closed here (WS_SLOW_CLOSE_MS at its most), nor ended as idle for not
  // answering pings while paused (WS_IDLE_TIMEOUT_S at its most): on a loaded machine the
  // rounds can outlast shorter bounds.
  const svc = await startTestService(t, { WS_SLOW_BYTES: '1048576', WS_MAX_BACKPRESSURE: '268435456', WS_SLOW_CLOSE_MS: '3600000', WS_IDLE_TIMEOUT_S: '960' });
  const slow = await Client.connect(svc.url);
  const fast = await Client.connect(svc.url, { format: 'proto' });
  t.teardown(() => { slow.close(); fast.close(); });
  await slow.request({ op: 'subscribe', mids: [M] });
  await fast.request({ op: 'subscribe', mids: [M] });
  const raw = slow.ws;
  raw.pause();
  let sent = 0;
  for (let round = 0; round < 12; round++) {
    const batch = Array.from({ length: 50 }, (_, i) => image(M, 2 + ((round * 50 + i) % 90) / 100, RUNNERS));
    const r = await postJson(svc.url, '/api/v1/ingest', { data: batch });
    t.equal(r.status, 200);
    sent += batch.length;
    const seq = svc.book.get(M)!.seq;
    await fast.next((f) => f.op === 'odds' && f.mid === M && f.seq === seq, 20000);
  }
  const latest = svc.book.get(M)!.seq;
  await fast.settled();
  const fastSeqs = fast.oddsOf(M).map((f) => f.seq);
  t.equal(fastSeqs.length, sent, 'the reading socket got every frame');
  t.equal(fastSeqs[fastSeqs.length - 1], latest);

  // It resumes reading while behind, off its topic: what it missed comes as one catch-up frame.
  await waitFor(() => [...svc.hub.subscribers()].some((s) => s.format === 'json' && s.behind), 'the paused socket fell behind', 10000);
  raw.resume();
  const last = await slow.next((f) => f.op === 'odds' && f.mid === M && f.seq === latest, 20000);
  t.equal(last.op === 'odds' && last.con, true, 'the catch-up frame is marked con');
  const seqs = slow.oddsOf(M).map((f) => f.seq);
  t.ok(seqs.length < sent, `frames were skipped for the slow socket (${seqs.length} of ${sent})`);
  t.ok(seqs.every((s, i) => i === 0 || s > seqs[i - 1]), 'seq never goes backwards');
  await slow.settled();
  t.equal(slow.oddsOf(M).at(-1)!.seq, latest, 'its book ends equal to the server\'s');
  // The stopped socket's kernel buffers can drain a little mid-burst, so it may
  // fall behind and catch up more than once; each catch-up that found the
  // market moved sent exactly one con frame and counted one resync.
  const cons = slow.oddsOf(M).filter((f) => f.con).length;
  const m = await scrape(svc.url);
  t.ok(value(m, 'odds_resyncs_total') >= cons, `every resync counted (${value(m, 'odds_resyncs_total')} for ${cons} con frames)`);
  t.equal(value(m, 'odds_frames_skipped_total'), sent - seqs.length + cons, 'every frame it did not get live is counted as skipped');
});

t.test('a socket that stays behind past the limit is closed with the slow-consumer code', async (t) => {
  const svc = await startTestService(t, { WS_SLOW_BYTES: '65536', WS_MAX_BACKPRESSURE: '262144', WS_SLOW_CLOSE_MS: '300', WS_IDLE_TIMEOUT_S: '960' });
  const slow = await Client.connect(svc.url);
  t.teardown(() => slow.close());
  await slow.request({ op: 'subscribe', mids: [M] });
  const raw = slow.ws;
  raw.pause();
  // Resumed the moment the server ends it, from the hub's own close (this process runs the service):
  // a peer that reads nothing for seconds after its close was sent is cut off by uWS without one
  // (1006), and on a busy machine the posts below can outlast that.
  let over = false;
  const ended = waitFor(() => [...svc.hub.subscribers()].length === 0, 'the server closed the stopped socket', 120_000, 5).then(() => {
    over = true;
    raw.resume();
  });
  // Posting stops once it is closed: what follows would be sent to no one.
  for (let round = 0; round < 40 && !over; round++) {
    await postJson(svc.url, '/api/v1/ingest', { data: Array.from({ length: 50 }, () => image(M, 2, RUNNERS)) });
  }
  await ended;
  t.same(await slow.closed, CLOSE.SLOW);
  t.equal(value(await scrape(svc.url), 'odds_slow_consumer_closes_total'), 1);
});
