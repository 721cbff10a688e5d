/**
 * `waybill up` and `waybill dashboard`: what `npm start` does in a checkout, for a project that installed the
 * package. Both serve the dashboard build shipped in the package (next start, from the package's root)
 * against DATABASE_URL, with npm start's rules: loopback only unless a token is set.
 */
import type { Cli } from '../cli/context';
import { type LaunchAs, launch } from './start';

const UP_USAGE = `usage: waybill up [--no-demo] [--no-worker]

Migrates the store (DATABASE_URL, default file:./data/waybill.db under this directory), queues a demo run
when there are no runs, and runs the dashboard (HOST:PORT, default 127.0.0.1:3000) and one worker.
Ctrl-C stops both.

  --no-worker  run the dashboard only (the same as waybill dashboard)
  --no-demo    never queue the demo run`;

const DASHBOARD_USAGE = `usage: waybill dashboard

Migrates the store (DATABASE_URL) and serves the dashboard on HOST:PORT (default 127.0.0.1:3000) until
Ctrl-C. Runs are executed by workers: waybill worker.`;

export const UP: LaunchAs = { command: 'waybill up', usage: UP_USAGE };
export const DASHBOARD: LaunchAs = {
  command: 'waybill dashboard',
  usage: DASHBOARD_USAGE,
  defaults: { worker: false, demo: false },
};

export function up(_cli: Cli, args: string[]): Promise<number> {
  return launch(args, UP);
}

export function dashboard(_cli: Cli, args: string[]): Promise<number> {
  return launch(args, DASHBOARD);
}
