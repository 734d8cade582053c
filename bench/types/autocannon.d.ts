// The parts of autocannon's API the benchmarks use (the package ships no typings).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  export interface Request {
    method?: string;
    path: string;
    headers?: Record<string, string>;
    body?: string;
    /** Called before each request; returns the request to send. */
    setupRequest?: (req: Request, context: Record<string, unknown>) => Request;
  }

  export interface Options {
    url: string;
    connections?: number;
    pipelining?: number;
    duration?: number;
    timeout?: number;
    requests?: Request[];
    headers?: Record<string, string>;
  }

  export interface Histogram {
    average: number;
    mean: number;
    total: number;
    p50: number;
    p99: number;
    p99_9?: number;
  }

  export interface Result {
    requests: Histogram;
    latency: Histogram;
    throughput: Histogram;
    errors: number;
    timeouts: number;
    non2xx: number;
    resets: number;
    mismatches: number;
    duration: number;
    '2xx': number;
  }

  export interface Instance extends EventEmitter, PromiseLike<Result> {
    stop(): void;
  }

  function autocannon(opts: Options): Instance;
  export default autocannon;
}
