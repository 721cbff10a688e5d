/**
 * The package's root entry (`import … from 'waybill'`): the checkpoint core, a store to run it on, and
 * defineWorkflow for a module that `waybill worker` serves. Everything a loop in the user's own process needs;
 * running workers yourself is `waybill/engine`.
 */
// First: a project on zod 3 is told so before any schema below is built (./zod-version.ts).
import './zod-version';
export * from './checkpoint/index';
export type { StepRunner } from './checkpoint/agent';
export { openStore, type OpenStoreOptions } from './store/index';
export type * from './store/contract';
export { defineWorkflow, type WorkflowDefinition } from './engine/workflow';
export type { RetryPolicy, RunContext, StepOptions } from './engine/context';
export type { ErrorMatcher } from './engine/retry-policy';
export { NonRetryableError, StepTimeoutError } from './errors';
export type { Approval, ApprovalOptions, SignalResult } from './engine/waits';
export type { Logger, LogFields } from './engine/log';
