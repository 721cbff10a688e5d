export {
  Checkpoint,
  type CheckpointOptions,
  type RunOnceOptions,
  type StepContext,
  type StepResult,
  type StepStatus,
} from './checkpoint';
export { runAgent, type AgentOptions, type AgentReport, type AgentStepContext } from './agent';
export { canonicalJson, contentKey, stepKey } from './keys';
export * from '../errors';
export { ManualClock, systemClock, type Clock } from '../clock';
