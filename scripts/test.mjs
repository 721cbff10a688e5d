// `npm test`: the unit suite (vitest) and the browser suite (Playwright) side by side, since much of either is
// spent waiting on processes, fsyncs and pages rather than on the two cores. vitest prints as it goes;
// Playwright's lines carry an `e2e │` prefix. The exit code is non-zero when either failed.
// WAYBILL_TEST_SERIAL=1 runs them one after the other (vitest first), as `npm run test:unit && npm run test:e2e`.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const suites = [
  { name: 'vitest', args: ['vitest', 'run', ...process.argv.slice(2)], prefix: '' },
  { name: 'playwright', args: ['playwright', 'test'], prefix: 'e2e │ ' },
];

function run({ name, args, prefix }) {
  const started = performance.now();
  const child = spawn('npx', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  for (const stream of [child.stdout, child.stderr]) {
    const out = stream === child.stdout ? process.stdout : process.stderr;
    createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY }).on('line', (line) => {
      out.write(`${prefix}${line}\n`);
    });
  }
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      const seconds = Math.round((performance.now() - started) / 1000);
      resolve({ name, ok: code === 0, how: code === 0 ? 'passed' : `FAILED (${signal ?? `exit ${code}`})`, seconds });
    });
  });
}

const serial = process.env.WAYBILL_TEST_SERIAL === '1';
const results = [];
if (serial) {
  for (const suite of suites) {
    const result = await run(suite);
    results.push(result);
    if (!result.ok) break;
  }
} else {
  results.push(...(await Promise.all(suites.map(run))));
}
for (const { name, how, seconds } of results) process.stdout.write(`── ${name}: ${how} in ${seconds} s\n`);
process.exitCode = results.length === suites.length && results.every((r) => r.ok) ? 0 : 1;
