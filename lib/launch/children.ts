/**
 * The child processes `npm start` runs (next build, next start, waybill worker): spawned in process groups of
 * their own, their output passed through line by line under a label, stopped by a signal we send.
 *
 * Why their own groups: a Ctrl-C at the terminal goes to the whole foreground group, and npm forwards it to
 * us once more. A worker in our group would see the terminal's SIGINT and then our SIGTERM, and take the
 * second signal as "exit now" instead of finishing the step in hand. Detached, each child hears only us.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface Child {
  /** What the user reads: "the dashboard (next start)". */
  readonly what: string;
  readonly pid: number;
  /** Resolves once the process has exited and its output is drained; never rejects. */
  readonly exited: Promise<Exit>;
  /** Null while it runs. */
  exit(): Exit | null;
  kill(signal: NodeJS.Signals): void;
}

export interface SpawnOptions {
  cwd: string;
  /** Prefix for each output line; without one the child writes straight to our stdout and stderr. */
  label?: string;
  /** Lines not worth a terminal (with a label only). */
  omit?: RegExp;
  /** Added to the environment the child inherits. */
  env?: Record<string, string | undefined>;
}

export function spawnChild(what: string, command: string, args: string[], options: SpawnOptions): Child {
  const proc: ChildProcess = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ? { ...process.env, ...options.env } : process.env,
    detached: true,
    stdio: ['ignore', options.label ? 'pipe' : 'inherit', options.label ? 'pipe' : 'inherit'],
  });
  let exit: Exit | null = null;
  const exited = new Promise<Exit>((resolve) => {
    // 'error' (the binary could not start) may come without 'close'; either ends the child for us.
    proc.once('error', (error) => {
      process.stderr.write(`waybill: could not start ${what}: ${error.message}\n`);
      exit ??= { code: 127, signal: null };
      resolve(exit);
    });
    proc.once('close', (code, signal) => {
      exit ??= { code, signal };
      resolve(exit);
    });
  });
  if (options.label) {
    relay(proc.stdout!, process.stdout, options.label, options.omit);
    relay(proc.stderr!, process.stderr, options.label, options.omit);
  }
  return {
    what,
    pid: proc.pid ?? -1,
    exited,
    exit: () => exit,
    kill(signal) {
      if (exit === null && proc.pid !== undefined) {
        try {
          process.kill(proc.pid, signal);
        } catch {
          // Already gone: 'close' is on its way.
        }
      }
    },
  };
}

function relay(from: NodeJS.ReadableStream, to: NodeJS.WriteStream, label: string, omit?: RegExp): void {
  const lines = createInterface({ input: from, crlfDelay: Infinity });
  lines.on('line', (line) => {
    if (omit?.test(line)) return;
    // A closed terminal or pipe on our side must not take the children down with an EPIPE.
    try {
      to.write(`${label} ${line}\n`);
    } catch {
      // Nowhere left to write.
    }
  });
}

export function describeExit(exit: Exit): string {
  return exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`;
}

/**
 * SIGTERM to each child still running, then wait; a child still there after its grace period is SIGKILLed.
 * Resolves with the children that had to be killed.
 */
export async function stopAll(children: Child[], graceMs: (child: Child) => number): Promise<Child[]> {
  const running = children.filter((c) => c.exit() === null);
  for (const child of running) child.kill('SIGTERM');
  const killed: Child[] = [];
  await Promise.all(
    running.map(async (child) => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), graceMs(child))));
      if ((await Promise.race([child.exited, late])) === 'late') {
        killed.push(child);
        child.kill('SIGKILL');
        await child.exited;
      }
      clearTimeout(timer);
    }),
  );
  return killed;
}
