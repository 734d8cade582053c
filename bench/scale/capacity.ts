/**
 * bench:scale's capacity on paper: pods and NATS for 100,000, 1,000,000 and 5,000,000
 * subscribers, from what this run measured (RSS per socket and CPU per delivery at the largest N,
 * the bus's cost per image) and the assumptions printed under the table.
 */
import { fmt, mdTable } from '../lib/report.js';
import type { BusCost } from './bus.js';

/** What one pod costs, as measured. */
export interface Measured {
  sockets: number;
  kibPerSocket: number;
  nsPerDelivery: number;
  /** Whether that step held (else it delivered every frame but its p99 was over 50 ms). */
  held: boolean;
}

const POD_CORES = 1;
const POD_SOCKET_GIB = 2;
/** Of a core, what a pod may use in steady state: the rest is the storm's headroom. */
const CPU_TARGET = 0.6;
const SUBSCRIBERS = [100_000, 1_000_000, 5_000_000];
/** Each subscriber takes one event, its five markets, as in the benchmark. */
const MARKETS_PER_SOCKET = 5;

interface Load {
  name: string;
  markets: number;
  /** Changes a second of one market. */
  perMarket: number;
}

export function capacity(m: Measured, bus: BusCost, recordedPerMarket: number): string {
  const loads: Load[] = [
    { name: `200 markets at the recordings' pace (${fmt(recordedPerMarket, 2)} changes/s each)`, markets: 200, perMarket: recordedPerMarket },
    { name: `1,000 markets at 5× that (${fmt(5 * recordedPerMarket, 1)}/s each: a busy in-play evening)`, markets: 1000, perMarket: 5 * recordedPerMarket },
  ];
  const socketsByMemory = Math.floor((POD_SOCKET_GIB * 1024 * 1024) / m.kibPerSocket);
  const budgetNs = POD_CORES * CPU_TARGET * 1e9;
  const rows: string[][] = [];
  for (const load of loads) {
    const images = load.markets * load.perMarket;
    const intakeNs = images * bus.receiverNs;
    for (const s of SUBSCRIBERS) {
      const deliveries = s * MARKETS_PER_SOCKET * load.perMarket;
      const left = budgetNs - intakeNs;
      const byCpu = left > 0 ? Math.ceil((deliveries * m.nsPerDelivery) / left) : Infinity;
      const byMemory = Math.ceil(s / socketsByMemory);
      const pods = Math.max(byCpu, byMemory);
      const natsCores = (images * (bus.natsBaseNs + bus.natsPerPodNs * pods)) / 1e9;
      rows.push([load.name, fmt(s), fmt(images), fmt(deliveries), Number.isFinite(pods) ? `${fmt(pods)} (${byCpu >= byMemory ? 'CPU' : 'memory'})` : 'no pod keeps up with the bus alone',
        fmt(Number.isFinite(pods) ? s / pods : NaN), fmt(natsCores, 2), fmt((images * bus.imageBytes * (Number.isFinite(pods) ? pods : 0)) / 1e6, 1)]);
    }
  }
  return [
    mdTable(['update rate', 'subscribers', 'images/s into NATS', 'deliveries/s', 'pods (bound by)', 'sockets / pod', 'NATS cores', 'NATS out MB/s'], rows),
    '',
    `Assumptions: a pod is ${POD_CORES} core like the one measured here, with ${POD_SOCKET_GIB} GiB of RSS for sockets (${fmt(socketsByMemory)} sockets at the measured ${fmt(m.kibPerSocket, 2)} KiB each, at ${fmt(m.sockets)} sockets) ` +
      `and ${fmt(CPU_TARGET * 100)}% of its core in steady state (the rest is headroom for a storm); a delivery costs the measured ${fmt(m.nsPerDelivery)} ns of pod CPU (at ${fmt(m.sockets)} sockets, ${m.held ? 'at the highest held rate' : 'at a step that delivered every frame but missed the 50 ms p99'}); ` +
      `every pod takes every image off the bus at the measured ${fmt(bus.receiverNs)} ns each, whoever subscribes; each subscriber takes one event (${MARKETS_PER_SOCKET} markets); ` +
      `the NATS server spends ${fmt(bus.natsBaseNs)} ns per image plus ${fmt(bus.natsPerPodNs)} ns per pod it delivers it to (measured at 2 and 3 shards, ${fmt(bus.rate)} images/s), and sends ${fmt(bus.imageBytes)} bytes per image per pod (the JSON image; the bus's own encoding differs). ` +
      'Linear in everything: no pod-local conflation, which would only lower the delivery count at the busier rate. ' +
      `Whatever its subscribers, a pod can take at most ${fmt(budgetNs / bus.receiverNs)} images a second off the bus within that share of its core: the total update rate a cluster can carry is bounded there, not by pods.`,
  ].join('\n');
}
