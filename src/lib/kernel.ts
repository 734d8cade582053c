import { readFileSync } from 'node:fs';

/** The kernel's default: no bound on what a socket may hold unsent. */
const UNBOUNDED = 4294967295;

/**
 * What this process's network namespace lets a TCP socket hold unsent beyond what is in flight
 * (`net.ipv4.tcp_notsent_lowat`), in bytes; 0 when unbounded (the default) or not Linux. A
 * small bound keeps data meant for a slow reader in the service, where it is counted and
 * skipped, rather than in the kernel, where it can only arrive late.
 */
export function notsentLowat(path = '/proc/sys/net/ipv4/tcp_notsent_lowat'): number {
  try {
    const value = Number(readFileSync(path, 'utf8').trim());
    return Number.isSafeInteger(value) && value > 0 && value < UNBOUNDED ? value : 0;
  } catch {
    return 0;
  }
}
