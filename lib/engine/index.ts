/**
 * `waybill/engine`: what a program needs to run workers of its own instead of `waybill worker`: the worker,
 * the registry it serves, starting runs, and the run context a workflow sees.
 */
// First: a project on zod 3 is told so before any schema below is built (../zod-version.ts).
import '../zod-version';
export { Worker, type WorkerOptions } from './worker';
export {
  CommandFailedError,
  NonRetryableError,
  RunInterruptedError,
  StepFailedError,
  StepTimeoutError,
  WorkflowModuleError,
} from '../errors';
export {
  WorkflowRegistry,
  defineWorkflow,
  type AnyWorkflowDefinition,
  type StartableWorkflows,
  type WorkflowDefinition,
} from './workflow';
export { defineCommandWorkflow, type CommandWorkflowDefinition } from './command-workflow';
export { RunContext, type RetryPolicy, type RunHost, type StepOptions } from './context';
export type { RunLog } from './run-log';
export type { ErrorMatcher } from './retry-policy';
export { startRun, runIdSchema, type StartedRun } from './runs';
export { createLogger, silentLogger, type Logger, type LogFields, type LoggerOptions } from './log';
export { builtinRegistry, builtinWorkflows, type BuiltinOptions } from './workflows/index';
