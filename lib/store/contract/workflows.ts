import type { RunLimits } from '../../domain/run-limits';

/** The workflows workers publish, so that the control plane can start runs of code it does not have. Re-exported by index.ts. */

/** What a worker says about one workflow it serves. */
export interface WorkflowPublication {
  name: string;
  description: string | null;
  /** The input's JSON Schema (zod's toJSONSchema, input side), as JSON text. */
  inputSchemaJson: string;
  /** Steps every run has, when the workflow declares a fixed count; null when it depends on the input. */
  totalSteps: number | null;
  /** The code version string the workflow's author gave, if any. */
  version: string | null;
  /** The event names it subscribes to (defineWorkflow's `on`): each such event starts one run of it. */
  events?: string[];
  /** Its concurrency limit, rate limit and default priority, so the control plane can explain a held run. */
  limits?: RunLimits;
}

export interface PublishedWorkflow extends WorkflowPublication {
  events: string[];
  limits: RunLimits;
  /** The worker that published this version (the last to start wins on a name). */
  publishedBy: string | null;
  /** Epoch seconds, by the store's clock. */
  updatedAt: number;
  /** Live workers serving it: not stopped, heartbeat within `liveWithinMs`, the name in their workflows_json. */
  servedBy: string[];
}

export interface WorkflowStore {
  /**
   * In one transaction: upserts each workflow's row and records on the worker's row which names it serves.
   * The worker must be registered first (its row is where the served list lives).
   */
  publishWorkflows(workerId: string, workflows: WorkflowPublication[]): Promise<void>;

  /** Every published workflow by name, each with the live workers that serve it. */
  listPublishedWorkflows(options: { liveWithinMs: number }): Promise<PublishedWorkflow[]>;

  /**
   * Sets a run's total once its worker knows it (a workflow whose step count is a function of its input,
   * started by a control plane that has not its code). Only the run's owner, only where no total was set.
   */
  setRunTotal(id: string, workerId: string, totalSteps: number): Promise<void>;
}
