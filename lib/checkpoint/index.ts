export { type Clock, ManualClock, systemClock } from '../clock';
export * from '../errors';
export { type AgentOptions, type AgentReport, type AgentStepContext, runAgent } from './agent';
export {
  Checkpoint,
  type CheckpointOptions,
  type RunOnceOptions,
  type StepContext,
  type StepResult,
  type StepStatus,
} from './checkpoint';
export { canonicalJson, contentKey, stepKey } from './keys';
