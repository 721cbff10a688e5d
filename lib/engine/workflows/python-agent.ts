/**
 * python-agent: the article's experiment as a Python program (clients/python's waybill_client.example), run by
 * the worker as a command workflow — the demo of an agent in another language started, stopped and resumed
 * from the dashboard. Each step sleeps `modelMs` (the stand-in for a model call) and appends its delivery to
 * `<run id>.effects.jsonl` in the data directory.
 *
 * It needs python3 on the worker's PATH with waybill_client importable: in a checkout, clients/python is put
 * on PYTHONPATH; elsewhere `pip install ./clients/python` (no index needed). Served only by a worker that knows
 * the control plane's address (`waybill worker --url`, else WAYBILL_URL; npm start gives its worker the
 * dashboard's own).
 */
import { chownSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { config, dataDir } from '../../config';
import { packagePath } from '../../package-root';
import { defineCommandWorkflow } from '../command-workflow';
import { configuredProgramUser } from '../program-user';

export const pythonAgentInput = z.object({
  steps: z.number().int().min(1).max(10_000).default(50).describe('how many steps'),
  modelMs: z.number().int().min(0).max(10_000).default(200).describe('milliseconds each simulated model call takes'),
});

export function pythonAgentWorkflow() {
  // An installed package has no clients/ folder, and the client installed with pip is used instead.
  const clientDir = packagePath('clients', 'python');
  const cwd = join(dataDir(config()), 'python-agent');
  const workflow = defineCommandWorkflow({
    name: 'python-agent',
    description: "The article's agent loop in Python (clients/python), run as a program by the worker.",
    input: pythonAgentInput,
    command: ['python3', '-m', 'waybill_client.example'],
    env: existsSync(`${clientDir}/waybill_client/__init__.py`) ? { PYTHONPATH: clientDir } : {},
    totalSteps: (input) => input.steps,
    cwd,
  });
  return {
    ...workflow,
    run: (ctx: Parameters<typeof workflow.run>[0], input: Parameters<typeof workflow.run>[1]) => {
      mkdirSync(cwd, { recursive: true, mode: 0o700 });
      const user = configuredProgramUser(config().WAYBILL_PROGRAM_USER);
      if (user) chownSync(cwd, user.uid, user.gid);
      return workflow.run(ctx, input);
    },
  };
}
