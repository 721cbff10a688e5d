/**
 * The suite's `test`: after every test no worker it started is left running and no run it queued is left for the next test's workers.
 */
import { existsSync } from 'node:fs';
import { test as base } from '@playwright/test';
import { CHROMIUM } from './prepare';
import { cancelUnfinishedRuns, killLeftoverWorkers } from './waybill';

export const test = base.extend<{ cleanup: undefined }>({
  cleanup: [
    // biome-ignore lint/correctness/noEmptyPattern: Playwright reads a fixture's dependencies from this destructuring
    async ({}, use) => {
      await use(undefined);
      await killLeftoverWorkers();
      await cancelUnfinishedRuns();
    },
    { auto: true },
  ],
});

/** Each spec starts with `test.skip(noChromium, …)`: without a browser there is nothing to run. */
export const noChromium = !existsSync(CHROMIUM);

export { expect } from '@playwright/test';

/** A run id no other test (or earlier run of this suite) uses. */
export const uniqueId = (prefix: string): string =>
  `${prefix}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`;
