/**
 * `npm run bench -- --json` for the lone run, a few short rounds: each backend's figure carries what a
 * committed step spent, for the product and both floors (issue #29). Shape and sanity only, no timing: SQLite
 * writes some WAL pages a step (counted in untimed rounds of their own) and commits once a step (twice on the
 * two-commit floor), syncing each commit at FULL and none at NORMAL; PostgreSQL's CPU splits into client and
 * backends that add up to the total. The product is the built package, or the sources under tsx with --sources.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { spawnCommand } from '../support/child';
import { postgresAvailable, TEST_DATABASE_URL } from '../support/postgres';
import { tempDir } from '../support/tmp';

const BENCH = fileURLToPath(new URL('../../bench/index.ts', import.meta.url));
const pgUp = await postgresAvailable('bench per-step figures (their PostgreSQL half)');
const local = ['127.0.0.1', 'localhost', '[::1]'].includes(new URL(TEST_DATABASE_URL).hostname);

async function bench(only: string, ...more: string[]) {
  const tmp = tempDir('waybill-bench-test-');
  const child = spawnCommand(
    process.execPath,
    ['--import', 'tsx', BENCH, '--json', '--only', only, '--steps', '20', '--rounds', '5', ...more],
    { env: { TEST_DATABASE_URL, TMPDIR: tmp.path } },
  );
  const exit = await child.exited;
  expect(exit.code, child.stderr()).toBe(0);
  return { json: JSON.parse(child.lines.at(-1)!), stderr: child.stderr() };
}

describe('npm run bench: what a lone step spent', () => {
  it('gives SQLite WAL pages, commits and fsyncs per step beside both floors', { timeout: 120_000 }, async () => {
    const { json, stderr } = await bench('sqlite');
    for (const synchronous of ['full', 'normal'] as const) {
      const { perStep } = json.sqlite[synchronous];
      for (const what of ['product', 'floor', 'oneCommitFloor'] as const) {
        expect(perStep[what].walPages).toBeGreaterThan(0);
        expect(perStep[what].walPages).toBeLessThan(100);
        expect(perStep[what].fsyncs).toBe(synchronous === 'full' ? perStep[what].commits : 0);
      }
      // The floors' commits are fixed by construction: two a step, or one (plus the first claim's).
      expect(perStep.floor.commits).toBe(2);
      expect(perStep.oneCommitFloor.commits).toBeCloseTo(1 + 1 / 20, 2);
      expect(perStep.product.commits).toBeGreaterThan(0);
      // Counted in untimed rounds of their own: the timed rounds keep their checkpoints.
      expect(json.sqlite[synchronous].perStepFrom).toMatch(/untimed counting rounds/);
    }
    expect(stderr).toContain('WAL pages');
    // The product timed is the package as installed (bench/product.ts), and the table says so.
    expect(json.lone).toEqual({ ran: 'dist' });
    expect(stderr).toContain('runAgent (the built package, dist/)');
  });

  it.skipIf(!pgUp || !local)(
    'gives PostgreSQL CPU per step in the client and the backends, adding up',
    { timeout: 120_000 },
    async () => {
      const { json, stderr } = await bench('postgres', '--sources');
      for (const what of ['product', 'floor', 'oneCommitFloor'] as const) {
        const { clientCpuUs, backendCpuUs, totalCpuUs } = json.postgres.perStep[what];
        expect(clientCpuUs).toBeGreaterThan(0);
        expect(backendCpuUs).toBeGreaterThan(0);
        expect(totalCpuUs).toBeCloseTo(clientCpuUs + backendCpuUs, 1);
      }
      // The keys the bench printed before stay.
      expect(json.postgres).toMatchObject({ stepUs: expect.any(Number), oneCommitRatio: expect.any(Number) });
      expect(json.postgres.perStepFrom).toMatch(/timed rounds/);
      expect(stderr).toContain('backend CPU µs');
      expect(json.lone).toEqual({ ran: 'sources via tsx' });
      expect(stderr).toContain('runAgent (the sources, via tsx)');
    },
  );
});
