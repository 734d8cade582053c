/** The package ships no types: it exports one function returning an old-style through stream. */
declare module 'unbzip2-stream' {
  import type { Duplex } from 'node:stream';
  export default function unbzip2(): Duplex;
}
