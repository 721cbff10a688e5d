/**
 * What `waybill dashboard`, `waybill up` and `npm start` announce about the worker: a flag the user did not
 * give is not named as the reason (issue 23: "worker none (--no-worker)" after a bare `waybill dashboard`).
 */
import { describe, expect, it } from 'vitest';
import { DASHBOARD, UP } from '../../lib/launch/commands';
import { launchFlags, workerLine } from '../../lib/launch/start';

const NPM_START = { command: 'npm start', usage: '' };

describe('the launcher announces its worker', () => {
  it('a bare `waybill dashboard` runs none, and says it is the command, not a flag', () => {
    const flags = launchFlags([], DASHBOARD);
    expect([flags.worker, flags.demo]).toEqual([false, false]);
    expect(workerLine(flags, null, null)).toBe(
      '  worker     none (waybill dashboard runs none); start one with: npx waybill worker',
    );
  });

  it('--no-worker is named only when it was given', () => {
    expect(workerLine(launchFlags(['--no-worker'], DASHBOARD), null, null)).toBe(
      '  worker     none (--no-worker); start one with: npx waybill worker',
    );
    expect(workerLine(launchFlags(['--no-worker'], UP), null, null)).toBe(
      '  worker     none (--no-worker); start one with: npx waybill worker',
    );
    expect(workerLine(launchFlags(['--no-worker', '--no-demo'], NPM_START), null, null)).toBe(
      '  worker     none (--no-worker); start one with: npx waybill worker',
    );
  });

  it('`waybill up` and `npm start` run a worker and the demo unless told not to', () => {
    expect(launchFlags([], UP)).toEqual({ worker: true, demo: true, help: false, noWorker: 'waybill up runs none' });
    expect(launchFlags(['--no-demo'], NPM_START)).toMatchObject({ worker: true, demo: false });
    expect(workerLine(launchFlags([], UP), { pid: 4242 }, '/w/flows.mjs')).toBe(
      '  worker     waybill worker --workflows /w/flows.mjs, pid 4242, 4 runs at once (--concurrency; more: npx waybill worker)',
    );
    expect(() => launchFlags(['--workers'], UP)).toThrow(/Unknown option '--workers'/);
  });
});
