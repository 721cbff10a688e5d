/**
 * `npx tsx scripts/test-durations.ts REPORT.json…`: keeps test/support/durations.json, each vitest file's
 * seconds in a whole run, which the suite's sequencer (test/support/sequencer.ts) starts the longest first by.
 * A fresh clone has no vitest cache to order by, and a long file started late runs alone at the end.
 *
 * Reads vitest JSON reports (`npx vitest run --reporter=json --outputFile=REPORT.json`, whole runs or a few
 * files), sets each reported file's seconds, and drops files that no longer exist. Seconds from a busy machine
 * serve as well as a quiet one's: only their order is used.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = join(ROOT, 'test', 'support', 'durations.json');
const report = z.object({
  testResults: z.array(z.object({ name: z.string(), startTime: z.number(), endTime: z.number() })),
});

const reports = process.argv.slice(2);
if (reports.length === 0) {
  process.stderr.write('usage: npx tsx scripts/test-durations.ts REPORT.json…\n');
  process.exit(2);
}
const durations: Record<string, number> = existsSync(OUT) ? JSON.parse(readFileSync(OUT, 'utf8')) : {};
for (const path of reports) {
  const parsed = report.safeParse(JSON.parse(readFileSync(path, 'utf8')));
  if (!parsed.success) {
    process.stderr.write(`${path}: not a vitest JSON report: ${parsed.error.issues[0]?.message}\n`);
    process.exit(2);
  }
  for (const file of parsed.data.testResults) {
    durations[relative(ROOT, file.name)] = Math.round((file.endTime - file.startTime) / 100) / 10;
  }
}
const kept = Object.entries(durations)
  .filter(([file]) => existsSync(join(ROOT, file)))
  .sort(([a], [b]) => (a < b ? -1 : 1));
writeFileSync(OUT, `${JSON.stringify(Object.fromEntries(kept), null, 2)}\n`);
process.stderr.write(`test-durations: ${kept.length} files in ${relative(ROOT, OUT)}\n`);
