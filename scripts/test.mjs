#!/usr/bin/env node
/**
 * `npm test`: vitest and the browser suite side by side, each line of output prefixed with the suite it came
 * from. Most of both suites' time is spent waiting on other processes (a worker's fsync, a next server, a
 * killed child's restart), so on two cores the pair finishes in little more than the longer one alone. The
 * one thing both need, the production build, is made once under a lock (e2e/support/prepare.ts).
 *
 * Exits non-zero when either suite fails, after both have finished; Ctrl-C or a SIGTERM stops both.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const suites = [
  { name: 'unit', command: ['npx', 'vitest', 'run'] },
  { name: 'e2e', command: ['npx', 'playwright', 'test'] },
];
const width = Math.max(...suites.map((s) => s.name.length));
const started = Date.now();

const children = suites.map((suite) => {
  const child = spawn(suite.command[0], suite.command.slice(1), {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
    // Piped, the suites would drop their colours on a terminal; a log keeps none.
    env: process.stdout.isTTY ? { FORCE_COLOR: '1', ...process.env } : process.env,
  });
  const prefix = `${suite.name.padEnd(width)} │ `;
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (line) => process.stdout.write(`${prefix}${line}\n`));
  }
  const done = new Promise((resolve) => {
    child.once('error', (error) => resolve({ suite, code: null, error }));
    child.once('close', (code, signal) => resolve({ suite, code, signal, seconds: (Date.now() - started) / 1000 }));
  });
  return { suite, child, done };
});

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    for (const { child } of children) {
      try {
        process.kill(-child.pid, signal);
      } catch {
        // already gone
      }
    }
  });
}

const results = await Promise.all(children.map((c) => c.done));
process.stdout.write('\n');
for (const r of results) {
  const outcome = r.error
    ? `could not start: ${r.error.message}`
    : r.code === 0
      ? 'passed'
      : `failed (${r.signal ?? `exit code ${r.code}`})`;
  process.stdout.write(`${r.suite.name.padEnd(width)} │ ${outcome} after ${Math.round(r.seconds ?? 0)} s\n`);
}
process.exit(results.every((r) => r.code === 0) ? 0 : 1);
