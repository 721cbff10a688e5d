/**
 * The package's root entry (`import … from 'waybill'`): the checkpoint core, a store to run it on, and
 * defineWorkflow for a module that `waybill worker` serves. Everything a loop in the user's own process needs;
 * running workers yourself is `waybill/engine`.
 */
// First: a project on zod 3 is told so before any schema below is built (./zod-version.ts).
import './zod-version';

export type { StepRunner } from './checkpoint/agent';
export * from './checkpoint/index';
export type { RetryPolicy, RunContext, StepOptions } from './engine/context';
export type { EventResult, WaitForEventOptions } from './engine/events';
export type { LogFields, Logger } from './engine/log';
export type { ErrorMatcher } from './engine/retry-policy';
export type { Approval, ApprovalOptions, SignalResult } from './engine/waits';
export { signWebhook, type VerifyOptions, verifyWebhook } from './engine/webhooks/signature';
export { defineWorkflow, type WorkflowDefinition } from './engine/workflow';
export { NonRetryableError, StepTimeoutError } from './errors';
export type * from './store/contract';
export { type OpenStoreOptions, openStore } from './store/index';
