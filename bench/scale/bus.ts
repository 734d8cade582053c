/**
 * bench:scale's measure of the bus's cost per image, in the same run as the rest: the same feed
 * (SCALE_BUS_RATE images/s for SCALE_BUS_SECONDS, the recorded rhythm) into one service on
 * BUS=memory, then into pods of 2 and of 3 shards on BUS=nats (the feed reaching the first, the
 * bus carrying each image to the others), with no subscriber anywhere: what is measured is taking
 * an image in and passing it on. The publishing shard's CPU per image less the memory bus's is what
 * sending to NATS adds; a receiving shard's is what every further pod pays to take an image off the
 * bus; the NATS server's at 2 and at 3 shards splits into a part per image and a part per pod it
 * fans out to. Everything on the server core, the NATS server too.
 */
import { type Pinning } from '../lib/cores.js';
import { cpuMicros } from '../lib/proc.js';
import { Noise, waitQuiet } from '../lib/quiet.js';
import { log, sleep } from '../lib/run.js';
import type { Nats } from '../lib/nats.js';
import { Ingest, MARKETS, image, post, publish, reference } from './market.js';
import { Pod } from './pod.js';
import { SETTINGS } from './settings.js';

export interface BusCost {
  /** Images a second the feed sent (mean of the three). */
  rate: number;
  /** Service CPU per image, ns: one process on the memory bus. */
  memoryNs: number;
  /** The shard the feed reaches, on NATS (mean of the 2- and 3-shard pods). */
  publisherNs: number;
  /** A shard taking every image off the bus (mean over the receiving shards). */
  receiverNs: number;
  /** NATS server CPU per image, ns, with the pod's shard count. */
  nats: { pods: number; ns: number }[];
  /** The NATS server's per-image cost split: a fixed part, and a part per pod it delivers to. */
  natsBaseNs: number;
  natsPerPodNs: number;
  /** Bytes of one image as the feed sends it (JSON), mean over the market set. */
  imageBytes: number;
  /** CPU other jobs used meanwhile, % of one core (the worst of the three). */
  noisePct: number;
}

interface Probe { perShardNs: number[]; natsNs: number; noisePct: number; rate: number }

async function probe(dbUrl: string, pinning: Pinning, shards: number, nats: Nats | undefined): Promise<Probe> {
  const pod = await Pod.start(dbUrl, pinning, shards, nats && { url: nats.url, prefix: `busprobe${shards}${Date.now()}` });
  try {
    await post(pod.url, reference());
    await sleep(1500);
    const tick = { n: 0 };
    await post(pod.url, MARKETS.map((m) => image(m, tick.n++)));
    const to = await Ingest.open(pod.url);
    const ours = () => [...pod.pids, ...(nats ? [nats.pid] : [])];
    // Warm-up: the JIT and the first messages over the bus are no part of the cost.
    await publish(to, SETTINGS.busRate, 1, tick);
    await waitQuiet(ours, 25, 10_000);
    const noise = new Noise(ours);
    const cpu0 = pod.pids.map(cpuMicros);
    const nats0 = nats ? cpuMicros(nats.pid) : 0;
    const t0 = Date.now();
    const sent = await publish(to, SETTINGS.busRate, SETTINGS.busSeconds, tick);
    const rate = sent / ((Date.now() - t0) / 1000);
    await sleep(300);
    const perShardNs = pod.pids.map((pid, i) => ((cpuMicros(pid) - cpu0[i]) * 1000) / sent);
    const natsNs = nats ? ((cpuMicros(nats.pid) - nats0) * 1000) / sent : 0;
    to.close();
    return { perShardNs, natsNs, noisePct: noise.foreignPct(), rate };
  } finally {
    await pod.stop();
  }
}

export async function busCost(dbUrl: string, pinning: Pinning, nats: Nats): Promise<BusCost> {
  const memory = await probe(dbUrl, pinning, 1, undefined);
  const two = await probe(dbUrl, pinning, 2, nats);
  const three = await probe(dbUrl, pinning, 3, nats);
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  // Two points fit the line; noise can make 3 shards the cheaper, and a pod never costs NATS less
  // than nothing: then the whole cost is taken as fixed per image, at the larger figure.
  const natsPerPodNs = Math.max(0, three.natsNs - two.natsNs);
  const natsBaseNs = natsPerPodNs > 0 ? two.natsNs - 2 * natsPerPodNs : Math.max(two.natsNs, three.natsNs);
  const cost: BusCost = {
    rate: mean([memory.rate, two.rate, three.rate]), memoryNs: memory.perShardNs[0], publisherNs: mean([two.perShardNs[0], three.perShardNs[0]]),
    receiverNs: mean([...two.perShardNs.slice(1), ...three.perShardNs.slice(1)]),
    nats: [{ pods: 2, ns: two.natsNs }, { pods: 3, ns: three.natsNs }], natsBaseNs, natsPerPodNs,
    imageBytes: mean(MARKETS.map((m) => JSON.stringify(image(m, 1)).length)), noisePct: Math.max(memory.noisePct, two.noisePct, three.noisePct),
  };
  log(`bus: ${Math.round(cost.memoryNs)} ns/image on the memory bus, ${Math.round(cost.publisherNs)} publishing and ${Math.round(cost.receiverNs)} receiving on NATS; NATS server ${Math.round(two.natsNs)} ns/image to 2 shards, ${Math.round(three.natsNs)} to 3`);
  return cost;
}
