/**
 * Clients whose network can go away in silence. A network namespace joined to this one by veth
 * pairs, each a path: the clients' side holds the path's client addresses, this side its host
 * address, and a server listening on every address here (0.0.0.0) is reached over the path.
 * `cut` puts a blackhole qdisc on both ends of a path, so every packet either way is lost, as on a
 * dead link: no FIN, no RST, and the server's sockets stay open until its own liveness check ends
 * them. Loopback cannot do this: a socket closed there tells its peer at once.
 *
 * Needs root (CAP_NET_ADMIN), `ip` and `tc`. Addresses come from 198.18.0.0/15 (set aside for
 * benchmarking networks): a /24 not in use on this machine per namespace, a /26 per path.
 */
import { execFileSync } from 'node:child_process';
import { randomInt } from 'node:crypto';

export interface NetPath {
  /** This side's address: where the clients connect. */
  host: string;
  /** Addresses in the namespace to connect from (distinct sources for per-address limits and ports). */
  clients: string[];
}

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();

/** Namespaces are named for the process that made them: `odds-od<pid base 36><3 random>`. */
const NAME = /^odds-(od([0-9a-z]+)[0-9a-z]{3})$/;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class Netns {
  private constructor(readonly name: string, readonly paths: NetPath[], private readonly links: string[]) {}

  /** A namespace with `paths` paths (at most 4) of `clients` client addresses each (at most 60). */
  static open(paths: number, clients: number): Netns {
    Netns.sweep();
    const used = execFileSync('ip', ['-4', '-o', 'addr', 'show']).toString();
    let net: string;
    do {
      const r = randomInt(512);
      net = `198.${18 + (r >> 8)}.${r & 255}`;
    } while (used.includes(` ${net}.`));
    // Interface names are at most 15 characters: the tag and `h0`.
    const tag = `od${process.pid.toString(36)}${randomInt(36 ** 3).toString(36).padStart(3, '0')}`;
    const ns = new Netns(`odds-${tag}`, [], []);
    ip('netns', 'add', ns.name);
    try {
      for (let k = 0; k < paths; k++) {
        const [here, there] = [`${tag}h${k}`, `${tag}n${k}`];
        ip('link', 'add', here, 'type', 'veth', 'peer', 'name', there, 'netns', ns.name);
        ns.links.push(here);
        const path = { host: `${net}.${64 * k + 1}`, clients: Array.from({ length: clients }, (_, i) => `${net}.${64 * k + 2 + i}`) };
        ip('addr', 'add', `${path.host}/26`, 'dev', here);
        for (const a of path.clients) ip('-n', ns.name, 'addr', 'add', `${a}/26`, 'dev', there);
        ip('link', 'set', here, 'up');
        ip('-n', ns.name, 'link', 'set', there, 'up');
        ns.paths.push(path);
      }
    } catch (err) {
      ns.close();
      throw err;
    }
    return ns;
  }

  /** Where root can run commands in the namespace from: `ip netns exec <name>`, then the command. */
  get exec(): string[] {
    return ['ip', 'netns', 'exec', this.name];
  }

  /** Path `k` goes dead both ways: every packet on it from now on is lost. */
  cut(k: number): void {
    const tag = this.links[k].slice(0, -2);
    execFileSync('tc', ['qdisc', 'replace', 'dev', this.links[k], 'root', 'blackhole']);
    ip('netns', 'exec', this.name, 'tc', 'qdisc', 'replace', 'dev', `${tag}n${k}`, 'root', 'blackhole');
  }

  /** Removes namespaces (and their paths) left by processes that died before closing them. */
  private static sweep(): void {
    for (const line of ip('netns', 'list').split('\n')) {
      const m = NAME.exec(line.split(' ')[0]);
      if (m && !alive(parseInt(m[2], 36))) new Netns(line.split(' ')[0], [], [0, 1, 2, 3].map((k) => `${m[1]}h${k}`)).close();
    }
  }

  /** Removes the paths and the namespace (sockets still open in it keep it until they close). */
  close(): void {
    for (const l of this.links) {
      try {
        ip('link', 'del', l);
      } catch {
        // already gone with its peer
      }
    }
    ip('netns', 'del', this.name);
  }
}
