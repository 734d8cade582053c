/**
 * Runs inside a network namespace (dialer.ts starts it there): dials each connection asked for and
 * hands the connected socket to the parent, whose traffic then takes that namespace's path.
 */
import net from 'node:net';

process.on('message', (m: { id: number; host: string; port: number; localAddress: string }) => {
  const sock = net.connect({ host: m.host, port: m.port, localAddress: m.localAddress });
  // Sent, the socket is the parent's: Node closes this process's copy.
  sock.once('connect', () => process.send!({ id: m.id }, sock));
  sock.once('error', (err) => process.send!({ id: m.id, error: err.message }));
});
process.on('disconnect', () => process.exit(0));
