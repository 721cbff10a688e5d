/**
 * The workflows every Waybill install has: a realistic demo with no network (agent-batch over a simulated
 * model, or a real OpenAI-compatible endpoint when one is configured) and a side effect that counts its own
 * duplicates (notify).
 */
import { resolve } from 'node:path';
import { type AnyWorkflowDefinition, WorkflowRegistry } from '../workflow';
import { agentBatchWorkflow } from './agent-batch';
import type { ModelClient } from './model';
import { notifyWorkflow } from './notify';
import { pythonAgentWorkflow } from './python-agent';
import { reviewAndSendWorkflow } from './review-and-send';

export interface BuiltinOptions {
  /** The model agent-batch calls; the simulated model when absent (see modelFromEnv). */
  model?: ModelClient;
  /** agent-batch's attempts per step before its run fails. Default 10. */
  maxAttempts?: number;
  /** Where notify's outboxes are (lib/config's dataDir). Default: ./data of the working directory. */
  dataDir?: string;
  /** Serve python-agent, which runs a Python program: only a worker that has the control plane's address for it (--url, WAYBILL_URL) can. */
  pythonAgent?: boolean;
}

export function builtinWorkflows(options: BuiltinOptions = {}): AnyWorkflowDefinition[] {
  const dataDir = options.dataDir ?? resolve('data');
  return [
    agentBatchWorkflow(options),
    notifyWorkflow({ dataDir }),
    reviewAndSendWorkflow({ dataDir, model: options.model }),
    ...(options.pythonAgent ? [pythonAgentWorkflow()] : []),
  ];
}

export function builtinRegistry(options: BuiltinOptions = {}): WorkflowRegistry {
  return new WorkflowRegistry(builtinWorkflows(options));
}

export { LockTimeoutError, ModelError } from '../../errors';
export { type AgentBatchInput, agentBatchInput, agentBatchWorkflow, promptOf, syntheticItem } from './agent-batch';
export {
  httpModel,
  type ModelClient,
  type ModelEnv,
  type ModelOutput,
  modelFromEnv,
  simulateCompletion,
  simulatedModel,
} from './model';
export { type NotifyInput, type NotifyOptions, notifyInput, notifyWorkflow } from './notify';
export { type Delivery, Outbox, type OutboxSummary, outboxAt, readDeliveries, readOutbox } from './outbox';
export { outboxPathSchema, resolveOutbox } from './outbox-path';
export { pythonAgentInput, pythonAgentWorkflow } from './python-agent';
export { type ReviewAndSendInput, reviewAndSendInput, reviewAndSendWorkflow } from './review-and-send';
