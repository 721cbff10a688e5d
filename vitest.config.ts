import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { LongFirstSequencer } from './test/support/sequencer';

export default defineConfig({
  resolve: {
    alias: {
      // Data functions are server-only; under Node tests there is no client bundle to protect.
      'server-only': fileURLToPath(new URL('./test/support/server-only.ts', import.meta.url)),
      '@': fileURLToPath(new URL('.', import.meta.url)),
    },
  },
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/built-bins.ts'],
    // Crash tests spawn real processes and wait on real fsyncs and leases.
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: 'forks',
    fileParallelism: true,
    // One more file than cores: the process suites spend much of their time waiting on leases and children,
    // and two files left the cores idle a third of the time (bench/RESULTS.md, "Fresh-clone CI").
    maxWorkers: 3,
    sequence: { sequencer: LongFirstSequencer },
  },
});
