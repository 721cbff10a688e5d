// Loaded with `node --import` into the throughput bench's PostgreSQL workers (bench/throughput-postgres.ts):
// counts the queries node-postgres sends, each one round trip to the server (pg sends one query at a time per
// connection and waits for its answer), and answers the bench's `round-trips?` message over the IPC channel
// with the count so far. A counter and nothing else: the worker is the product, unchanged.
import pg from 'pg';

let sent = 0;
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function countedQuery(...args) {
  sent += 1;
  return query.apply(this, args);
};

if (process.send) {
  process.on('message', (message) => {
    if (message === 'round-trips?') process.send?.({ roundTrips: sent });
  });
  // The channel must not keep a drained worker alive: it exits when its work is done, as it would alone.
  process.channel?.unref();
}
