/**
 * Real child processes for crash tests: a fixture (bundled, or under tsx), stdout read line by line, killed with
 * real signals. A child still running when its test finishes is killed and the test's cleanup waits for it,
 * so no test leaks a process.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { onTestFinished } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface Child {
  readonly proc: ChildProcess;
  readonly pid: number;
  /** Every complete stdout line so far. */
  readonly lines: string[];
  stderr(): string;
  /** Resolves with the first line (past or future) matching `pattern`; rejects if the child exits first. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
  send(line: string): void;
  kill(signal: NodeJS.Signals): void;
  /** Resolves when the process has exited (never rejects). */
  readonly exited: Promise<Exit>;
}

/**
 * Starts `test/fixtures/<fixture>` with one JSON argument: its bundle when the suite's global setup made them
 * (test/support/built-bins.ts), else the source under tsx. Call it inside a test.
 */
export function spawnFixture(fixture: string, arg: unknown, options: { env?: Record<string, string> } = {}): Child {
  return track(
    spawn(process.execPath, fixtureArgs(fixture, arg), {
      cwd: ROOT,
      env: { ...process.env, ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    }),
  );
}

/** Node's arguments that run `test/fixtures/<fixture>` with one JSON argument. */
export function fixtureArgs(fixture: string, arg: unknown): string[] {
  const bundles = process.env.WAYBILL_TEST_FIXTURES;
  const script = bundles
    ? [join(bundles, fixture.replace(/\.ts$/, '.mjs'))]
    : ['--import', 'tsx', fileURLToPath(new URL(`../fixtures/${fixture}`, import.meta.url))];
  return [...script, JSON.stringify(arg)];
}

/** Starts any command (python3, …) with the same line handling and cleanup. */
export function spawnCommand(
  command: string,
  args: string[],
  options: { env?: Record<string, string>; cwd?: string } = {},
): Child {
  return track(
    spawn(command, args, {
      cwd: options.cwd ?? ROOT,
      env: { ...process.env, ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    }),
  );
}

function track(proc: ChildProcess): Child {
  if (proc.pid === undefined) throw new Error('child process did not start');
  const lines: string[] = [];
  const waiters: { pattern: RegExp; resolve: (line: string) => void }[] = [];
  let partial = '';
  let err = '';
  let exit: Exit | null = null;
  proc.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    partial += chunk;
    let nl: number;
    while ((nl = partial.indexOf('\n')) >= 0) {
      const line = partial.slice(0, nl);
      partial = partial.slice(nl + 1);
      lines.push(line);
      for (const w of [...waiters]) {
        if (w.pattern.test(line)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(line);
        }
      }
    }
  });
  proc.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  // The 'close' event comes after stdout and stderr are drained, so every line is in `lines` by then.
  const exited: Promise<Exit> = once(proc, 'close').then(([code, signal]) => {
    exit = { code: code as number | null, signal: signal as NodeJS.Signals | null };
    return exit;
  });
  const describeChild = () =>
    `pid ${proc.pid} ${proc.spawnargs.slice(-1)[0]?.slice(0, 200)}\nstdout:\n${lines.join('\n')}\nstderr:\n${err}`;

  onTestFinished(async () => {
    if (exit === null) {
      proc.kill('SIGKILL');
      await exited;
    }
  });

  return {
    proc,
    pid: proc.pid,
    lines,
    stderr: () => err,
    waitForLine(pattern, timeoutMs = 60_000) {
      const seen = lines.find((l) => pattern.test(l));
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise<string>((resolve, reject) => {
        const waiter = {
          pattern,
          resolve: (line: string) => {
            clearTimeout(timer);
            resolve(line);
          },
        };
        const timer = setTimeout(
          () => reject(new Error(`no line matching ${pattern} after ${timeoutMs} ms: ${describeChild()}`)),
          timeoutMs,
        );
        waiters.push(waiter);
        void exited.then((e) => {
          if (!waiters.includes(waiter)) return;
          clearTimeout(timer);
          reject(
            new Error(`child exited (${e.code ?? e.signal}) before a line matching ${pattern}: ${describeChild()}`),
          );
        });
      });
    },
    send(line) {
      proc.stdin!.write(`${line}\n`);
    },
    kill(signal) {
      proc.kill(signal);
    },
    exited,
  };
}

/** Waits for a child to exit 0 and returns its last line parsed as JSON (the fixtures' report). */
export async function finish<T>(child: Child): Promise<T> {
  const e = await child.exited;
  if (e.code !== 0) {
    throw new Error(
      `child ${child.pid} exited with ${e.code ?? e.signal}\nstdout:\n${child.lines.join('\n')}\nstderr:\n${child.stderr()}`,
    );
  }
  const last = child.lines.filter((l) => l.startsWith('REPORT ')).pop();
  if (!last) throw new Error(`child ${child.pid} printed no REPORT line\nstdout:\n${child.lines.join('\n')}`);
  return JSON.parse(last.slice('REPORT '.length)) as T;
}

/** SIGKILLs a child and checks that it died of that signal (not of something else first). */
export async function killHard(child: Child): Promise<void> {
  child.kill('SIGKILL');
  const e = await child.exited;
  if (e.signal !== 'SIGKILL') {
    throw new Error(`child ${child.pid} exited with ${e.code ?? e.signal} before SIGKILL\nstderr:\n${child.stderr()}`);
  }
}
