/**
 * `waybill/engine`: what a program needs to run workers of its own instead of `waybill worker`: the worker,
 * the registry it serves, starting runs, the run context a workflow sees, and the worker's health port.
 */
// First: a project on zod 3 is told so before any schema below is built (../zod-version.ts).
import '../zod-version';

export {
  CommandFailedError,
  NonRetryableError,
  RunInterruptedError,
  StepFailedError,
  StepTimeoutError,
  WorkflowModuleError,
} from '../errors';
export type { PriceTable } from '../gateway/prices';
export { type CommandWorkflowDefinition, defineCommandWorkflow } from './command-workflow';
export {
  type RetryPolicy,
  RunContext,
  type RunHost,
  type StepOptions,
  type StreamingStepContext,
  type UsageReport,
} from './context';
export { type Emitted, emit } from './emit';
export type { EventResult, WaitForEventOptions } from './events';
export { createLogger, type LogFields, type Logger, type LoggerOptions, silentLogger } from './log';
export type { ErrorMatcher } from './retry-policy';
export type { RunLog } from './run-log';
export { runIdSchema, type StartedRun, startRun } from './runs';
export type { ScheduleDeclaration } from './schedules/spec';
export { Worker, type WorkerOptions } from './worker';
export { type HealthServer, type Readiness, serveHealth } from './worker/health';
export { WorkerMetrics } from './worker/metrics';
export {
  type AnyWorkflowDefinition,
  defineWorkflow,
  type StartableWorkflows,
  type WorkflowDefinition,
  WorkflowRegistry,
} from './workflow';
export { type BuiltinOptions, builtinRegistry, builtinWorkflows } from './workflows/index';
