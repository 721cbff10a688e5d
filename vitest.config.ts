import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { LongFirstSequencer } from './test/support/sequencer';

/**
 * Folders whose files leave no module state behind that another file reads (stores, rules, reads, engines and
 * the processes they start, each killed by its test): they share worker processes (isolate: false), which
 * halves their CPU (a fork and its imports per file; bench/RESULTS.md, "Fresh-clone CI"). Not among them:
 * test/api and any file that sets process.env before importing lib/data or lib/config, which read it once a
 * process and keep one store (test/engine/tracing.test.ts sets OTEL_*).
 */
const SHARED = [
  'test/contract',
  'test/domain',
  'test/data',
  'test/auth',
  'test/engine',
  'test/postgres',
  'test/loops',
].map((dir) => `${dir}/**/*.test.ts`);
const OWN_PROCESS = ['test/domain/liveness.test.ts', 'test/domain/run-id.test.ts', 'test/engine/tracing.test.ts'];

export default defineConfig({
  resolve: {
    alias: {
      // Data functions are server-only; under Node tests there is no client bundle to protect.
      'server-only': fileURLToPath(new URL('./test/support/server-only.ts', import.meta.url)),
      '@': fileURLToPath(new URL('.', import.meta.url)),
    },
  },
  test: {
    globalSetup: ['test/support/built-bins.ts', 'test/support/run-dir.ts'],
    // Crash tests spawn real processes and wait on real fsyncs and leases.
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: 'forks',
    fileParallelism: true,
    // One more file than cores: the process suites spend much of their time waiting on leases and children,
    // and two files left the cores idle a third of the time (bench/RESULTS.md, "Fresh-clone CI").
    maxWorkers: 3,
    sequence: { sequencer: LongFirstSequencer },
    projects: [
      { extends: true, test: { name: 'shared', include: SHARED, exclude: OWN_PROCESS, isolate: false } },
      { extends: true, test: { name: 'isolated', include: ['test/**/*.test.ts'], exclude: SHARED } },
      { extends: true, test: { name: 'own-process', include: OWN_PROCESS } },
    ],
  },
});
