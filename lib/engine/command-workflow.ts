/**
 * A workflow that runs a program: an agent written in any language, started, resumed and stopped from the
 * dashboard like a built-in one. The command is fixed in the module that defines the workflow — never taken
 * from a request — and the run's input reaches the program as JSON on stdin and in WAYBILL_INPUT.
 *
 * The program checkpoints through the HTTP protocol (clients/python, or any client): the worker hands it the
 * control plane's address (`waybill worker --url`, else WAYBILL_URL), a token that may use the protocol for
 * this run only, the run id and its own worker id, and nothing else of its environment — not the operator
 * token or the database URL, since a sandboxed agent is the least trusted code in the system. Its stdout and
 * stderr lines go to the run's log in the store (run-log.ts: the run page and `waybill logs` read it from any
 * machine), and to the worker's own log.
 *
 * - Exit 0: the run is complete. Any other exit is a failed attempt, run again with backoff up to maxAttempts;
 *   the program resumes from its progress, skipping committed steps.
 * - Pause, cancel, a takeover or a drain: SIGTERM to the program's process group, so the program stops after
 *   its step in hand (the Python client does), then SIGKILL after graceMs. The worker stops the run as it
 *   stops any other. Whatever the program leaves in its group when it exits is killed.
 * - The worker dies: its watchdog kills the program's group at once (program-process.ts), as the worker's
 *   own step would die; the next worker takes the run and spawns the program again, alone.
 *
 * Isolation: the program runs as WAYBILL_PROGRAM_USER (`nobody` under a root worker: program-user.ts), in a
 * fresh private directory away from the store, and is not told the worker's pid.
 */
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import type { z } from 'zod';
import { mintRunToken } from '../auth/run-token';
import { config } from '../config';
import { CommandFailedError, InvalidInputError } from '../errors';
import type { RunLogStream } from '../store/contract';
import { MAX_LOG_LINE_CHARS } from '../store/shared/log-lines';
import type { RunContext } from './context';
import { spawnProgram } from './program-process';
import { configuredProgramUser, type ProgramUser } from './program-user';
import { defineWorkflow, type WorkflowDefinition } from './workflow';

export interface CommandWorkflowDefinition<I> {
  name: string;
  description?: string;
  version?: string;
  input: z.ZodType<I>;
  /** The program and its arguments, e.g. ['python3', 'agent.py']. Run without a shell. */
  command: readonly string[];
  /** Added to the program's environment (which holds only PATH, HOME, locale and these besides Waybill's own). */
  env?: Record<string, string>;
  /**
   * The program's working directory, used as it is. By default a fresh private one for each attempt (its HOME
   * and TMPDIR too), removed when the attempt ends.
   */
  cwd?: string;
  totalSteps?: WorkflowDefinition<I>['totalSteps'];
  /** Program runs per run before the run fails. Default 3. */
  maxAttempts?: number;
  /** After SIGTERM, how long the step in hand may take before SIGKILL. Default 10 s. */
  graceMs?: number;
  /** The control plane's address; by default the worker's (`waybill worker --url`, else WAYBILL_URL). */
  url?: string;
}

/** Exit status meaning "stopped for the operator" (paused or cancelled): not a failure if the run says so. */
const STOPPED_EXIT = 3;
const PASSED_ENV = ['PATH', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TZ', 'SYSTEMROOT', 'TRACEPARENT'];
/** Passed only with a cwd of the definition's: in a private directory, they are that directory. */
const PASSED_WITH_CWD = ['HOME', 'TMPDIR'];
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function defineCommandWorkflow<I>(definition: CommandWorkflowDefinition<I>): WorkflowDefinition<I> {
  const label = JSON.stringify(definition?.name);
  const { command, env = {}, maxAttempts = 3, graceMs = 10_000 } = definition ?? {};
  if (
    !Array.isArray(command) ||
    command.length === 0 ||
    command.some((part) => typeof part !== 'string' || part === '' || part.includes('\0'))
  ) {
    throw new InvalidInputError(
      `workflow ${label}: command must be a non-empty array of non-empty strings, e.g. ['python3', 'agent.py']`,
    );
  }
  for (const [name, value] of Object.entries(env)) {
    if (!ENV_NAME.test(name) || typeof value !== 'string' || value.includes('\0'))
      throw new InvalidInputError(`workflow ${label}: env ${JSON.stringify(name)} must be a name and a string`);
    if (name.startsWith('WAYBILL_'))
      throw new InvalidInputError(`workflow ${label}: env ${name}: WAYBILL_* variables are the worker's to set`);
  }
  if (!(Number.isInteger(maxAttempts) && maxAttempts >= 1 && maxAttempts <= 100))
    throw new InvalidInputError(`workflow ${label}: maxAttempts must be 1 to 100`);
  if (!(Number.isInteger(graceMs) && graceMs >= 0))
    throw new InvalidInputError(`workflow ${label}: graceMs must be a whole number of milliseconds`);
  const fixed = { command: [...command], env: { ...env }, maxAttempts, graceMs };
  return defineWorkflow<I>({
    name: definition.name,
    description: definition.description,
    version: definition.version,
    input: definition.input,
    totalSteps: definition.totalSteps,
    // The program's own attempts are counted here; a step of it is retried by the program's client.
    maxAttempts: 1,
    run: (ctx, input) =>
      runProgram(ctx, input, { ...fixed, name: definition.name, cwd: definition.cwd, url: definition.url }),
  });
}

interface Fixed {
  name: string;
  command: string[];
  env: Record<string, string>;
  maxAttempts: number;
  graceMs: number;
  cwd?: string;
  url?: string;
}

async function runProgram(ctx: RunContext, input: unknown, fixed: Fixed): Promise<unknown> {
  const cfg = config();
  const url = fixed.url ?? ctx.controlPlaneUrl ?? cfg.WAYBILL_URL;
  if (!url) {
    throw new CommandFailedError(
      `workflow ${fixed.name} runs a program, which needs the control plane's address: ` +
        'start the worker with --url (or WAYBILL_URL), e.g. waybill worker --url http://127.0.0.1:3000',
    );
  }
  const user = configuredProgramUser(cfg.WAYBILL_PROGRAM_USER);
  const log = (stream: RunLogStream, text: string) => {
    // At debug, as step lines are: the run's log in the store has every line at any level.
    ctx.log.debug(`program ${stream}`, { line: text.slice(0, MAX_LOG_LINE_CHARS) });
    ctx.runLog.write(stream, text);
  };
  try {
    return await attempts(ctx, input, fixed, { url, user, log });
  } finally {
    // Before the run ends: whoever sees it finished (`waybill logs --follow`) then has its every line.
    await ctx.runLog.flush();
  }
}

async function attempts(
  ctx: RunContext,
  input: unknown,
  fixed: Fixed,
  o: { url: string; user: ProgramUser | null; log: (stream: RunLogStream, text: string) => void },
): Promise<unknown> {
  const { url, log } = o;
  const cfg = config();
  for (let attempt = 1; ; attempt++) {
    ctx.signal.throwIfAborted();
    // A fresh token per attempt: a day, and a program still running past that is on a later attempt anyway.
    const { token } = mintRunToken(cfg, ctx.runId, undefined, Date.now());
    const exit = await spawnOnce(ctx, input, fixed, { url, token, attempt, user: o.user, log });
    if (exit.code === 0) return { exitCode: 0, attempts: attempt };
    // Stopped for the operator: the program saw the pause in a commit answer, likely before our renewal did.
    if (exit.code === STOPPED_EXIT) await abortedWithin(ctx.signal, 5000);
    ctx.signal.throwIfAborted();
    const what =
      `${fixed.command.join(' ')} ${exit.code === null ? `was killed by ${exit.signal}` : `exited with ${exit.code}`}` +
      `${exit.lastError ? `: ${exit.lastError}` : ''}`;
    if (attempt >= fixed.maxAttempts)
      throw new CommandFailedError(`${what} (attempt ${attempt} of ${fixed.maxAttempts})`);
    const delay = Math.min(10_000, 500 * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
    log('worker', `${what}; attempt ${attempt + 1} of ${fixed.maxAttempts} in ${Math.round(delay)} ms`);
    await sleep(delay, undefined, { signal: ctx.signal });
  }
}

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  lastError: string | null;
}

function spawnOnce(
  ctx: RunContext,
  input: unknown,
  fixed: Fixed,
  o: {
    url: string;
    token: string;
    attempt: number;
    user: ProgramUser | null;
    log: (stream: RunLogStream, text: string) => void;
  },
): Promise<Exit> {
  const inputJson = JSON.stringify(input) ?? 'null';
  const env: Record<string, string> = {};
  for (const name of fixed.cwd ? [...PASSED_ENV, ...PASSED_WITH_CWD] : PASSED_ENV)
    if (process.env[name] !== undefined) env[name] = process.env[name]!;
  Object.assign(env, fixed.env, {
    WAYBILL_URL: o.url,
    WAYBILL_TOKEN: o.token,
    WAYBILL_RUN_ID: ctx.runId,
    WAYBILL_WORKFLOW: fixed.name,
    WAYBILL_INPUT: inputJson,
    WAYBILL_WORKER_ID: ctx.checkpoint.workerId ?? '',
    WAYBILL_MANAGED: '1',
    WAYBILL_ATTEMPT: String(o.attempt),
    PYTHONUNBUFFERED: '1',
  });
  // The execution's run span (W3C trace context): the program's own spans, and the Python client's requests, join it.
  if (ctx.traceparent !== undefined) env.TRACEPARENT = ctx.traceparent;
  else delete env.TRACEPARENT;
  return new Promise<Exit>((resolve) => {
    const program = spawnProgram(fixed.command, { env, cwd: fixed.cwd, user: o.user });
    const { child } = program;
    let lastError: string | null = null;
    let settled = false;
    let killTimer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      o.log(
        'worker',
        `stopping the program (SIGTERM; SIGKILL in ${fixed.graceMs} ms): ${(ctx.signal.reason as Error | undefined)?.message ?? 'stopped'}`,
      );
      program.signal('SIGTERM');
      killTimer = setTimeout(() => program.signal('SIGKILL'), fixed.graceMs);
    };
    const finish = (exit: Exit) => {
      if (settled) return;
      settled = true;
      clearTimeout(killTimer);
      ctx.signal.removeEventListener('abort', onAbort);
      resolve(exit);
    };
    child.on('error', (error) => {
      o.log('worker', `cannot start ${fixed.command[0]}: ${error.message}`);
      finish({ code: 127, signal: null, lastError: `cannot start ${fixed.command[0]}: ${error.message}` });
    });
    // The watchdog's stdin is its lifeline: never written, closed by the kernel when this process dies.
    child.stdin.on('error', () => undefined);
    createInterface({ input: child.stdout }).on('line', (line) => o.log('stdout', line));
    createInterface({ input: child.stderr }).on('line', (line) => {
      if (line.trim()) lastError = line.trim().slice(0, 500);
      o.log('stderr', line);
    });
    if (child.pid !== undefined) {
      const as = o.user ? `, user ${o.user.name}` : '';
      o.log('worker', `started ${fixed.command.join(' ')} (group ${child.pid}${as}, attempt ${o.attempt})`);
    }
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    if (ctx.signal.aborted) onAbort();
    // What the program left in its group goes now: it would hold its token, and its output pipes open.
    child.on('exit', () => program.cleanUp());
    // 'close' comes after stdout and stderr are drained: every line is logged by then.
    child.on('close', (code, signal) => {
      program.cleanUp();
      o.log('worker', `program ${code === null ? `killed by ${signal}` : `exited with ${code}`}`);
      finish({ code, signal, lastError });
    });
  });
}

async function abortedWithin(signal: AbortSignal, ms: number): Promise<void> {
  if (signal.aborted) return;
  await sleep(ms, undefined, { signal }).catch(() => undefined);
}
