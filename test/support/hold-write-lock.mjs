// A worker thread that holds SQLite's write lock: it takes BEGIN IMMEDIATE, says so (flags[1]), waits until the
// test says it has started its own write (flags[0]), then keeps the lock holdMs longer and commits. The test's
// write therefore waits, in BEGIN IMMEDIATE, at least holdMs after the moment it recorded.
import { workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

const { path, flags: buffer, holdMs } = workerData;
const flags = new Int32Array(buffer);
const db = new Database(path);
db.exec('BEGIN IMMEDIATE');
Atomics.store(flags, 1, 1);
Atomics.notify(flags, 1);
Atomics.wait(flags, 0, 0);
Atomics.wait(flags, 2, 0, holdMs);
db.exec('COMMIT');
db.close();
