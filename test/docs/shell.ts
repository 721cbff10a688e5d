/**
 * A reader's terminal for the docs' commands: each line through `sh -c`, as pasted, with two rewrites and no
 * more: `npx waybill` is this checkout's CLI (`node bin/waybill.mjs`, as test/cli runs it), and the
 * dashboard's default address http://127.0.0.1:3000 is the test's server. A command that runs until Ctrl-C
 * is spawned in a process group of its own, `exec`ed by its shell so that the signal reaches it, and stopped
 * whole when its test ends.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { onTestFinished } from 'vitest';
import { BIN } from '../cli/support';

export interface Output {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface Running {
  output(): string;
  gone(): boolean;
  /** Sends the signal to the whole group and waits for the command to end. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export interface Terminal {
  cwd: string;
  env: Record<string, string>;
  /** What http://127.0.0.1:3000 stands for here. */
  dashboard: string;
}

export function rewrite(command: string, terminal: Terminal): string {
  return command
    .replace(/\bnpx waybill\b/g, `node ${JSON.stringify(BIN)}`)
    .replaceAll('http://127.0.0.1:3000', terminal.dashboard);
}

export function sh(terminal: Terminal, command: string): Promise<Output> {
  const child = spawn('sh', ['-c', rewrite(command, terminal)], {
    cwd: terminal.cwd,
    env: terminal.env as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  return once(child, 'close').then(([code]) => ({ code: code as number | null, stdout, stderr }));
}

/** Runs the command, which must exit 0; its output. */
export async function ok(terminal: Terminal, command: string): Promise<Output> {
  const out = await sh(terminal, command);
  if (out.code !== 0) throw new Error(`${command}: exit ${out.code}\n${out.stderr}${out.stdout}`);
  return out;
}

/** A command that runs until Ctrl-C. Call it inside a test: it is stopped when the test ends. */
export function background(terminal: Terminal, command: string): Running {
  // `env` so that a command's leading VAR=value words stay assignments under `exec`.
  const child = spawn('sh', ['-c', `exec env ${rewrite(command, terminal)}`], {
    cwd: terminal.cwd,
    env: terminal.env as NodeJS.ProcessEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  let gone = false;
  child.stdout.setEncoding('utf8').on('data', (c: string) => (output += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (output += c));
  const exited = once(child, 'close').then(() => {
    gone = true;
  });
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, name);
    } catch {
      // The group is gone already.
    }
  };
  const running: Running = {
    output: () => output,
    gone: () => gone,
    async stop(name = 'SIGINT') {
      if (!gone) signal(name);
      await exited;
      // Whatever the command left in its group (a program a worker ran) goes with it.
      signal('SIGKILL');
    },
  };
  onTestFinished(() => running.stop('SIGKILL'));
  return running;
}
