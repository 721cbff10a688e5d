/**
 * A process that delivers keys into a shared outbox: `node --import tsx test/workflows/outbox-child.ts '<json>'`.
 *
 * stdout: `READY pid=<pid>`; after a `GO` line on stdin it delivers every key (in its own random order, so
 * processes collide on keys and on the lock), then prints `REPORT <json>`. With `blockAt`, the delivery of
 * that key prints `LOCKED <key>` from inside the lock and blocks synchronously until the process is killed.
 */
import { writeSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { Outbox } from '../../lib/engine/workflows/outbox';

export interface OutboxChildArgs {
  outbox: string;
  keys: string[];
  blockAt?: string;
}

const args = JSON.parse(process.argv[2] ?? '{}') as OutboxChildArgs;
const say = (line: string) => writeSync(1, `${line}\n`);

const outbox = new Outbox(args.outbox, {
  insideLock(key) {
    if (key !== args.blockAt) return;
    say(`LOCKED ${key}`);
    // Frozen holding the lock, as if the kernel stopped it there: only SIGKILL ends it.
    const cell = new Int32Array(new SharedArrayBuffer(4));
    for (;;) Atomics.wait(cell, 0, 0);
  },
});

say(`READY pid=${process.pid}`);
const lines = createInterface({ input: process.stdin });
for await (const line of lines) if (line.trim() === 'GO') break;
lines.close();
process.stdin.destroy();

const order = [...args.keys];
for (let i = order.length - 1; i > 0; i--) {
  const j = Math.floor(Math.random() * (i + 1));
  [order[i], order[j]] = [order[j]!, order[i]!];
}
const report = { pid: process.pid, delivered: 0, duplicates: 0 };
for (const key of order) {
  const { status } = await outbox.deliver({ key, worker: `child-${process.pid}` });
  if (status === 'delivered') report.delivered++;
  else report.duplicates++;
}
say(`REPORT ${JSON.stringify(report)}`);
