/** A loopback port that was free a moment ago: for a server to take, or for a connection to be refused. */
export { freePort } from '../../src/db/embedded.js';
