/**
 * A library loop's own run: what the loop declared (workflow, total, input), written as a runs row once as
 * the loop starts and once as it ends. Between the two the loop pays nothing: each commit brings the run's
 * status back (CommitOutcome.runStatus), and the Checkpoint asks this whether that status stops the loop.
 */
import { RunCancelledError, RunPausedError, type RunStoppedError } from '../errors';
import type { RunStatus, StepStore } from '../store/contract';
import { checkDeclaration, type RunDeclaration } from './run-declaration';

type Said = { workflow?: string; totalSteps?: number; input?: unknown };

/** A status at which a declared loop runs no further step. */
export function stops(status: RunStatus | null): status is 'paused' | 'cancelled' {
  return status === 'paused' || status === 'cancelled';
}

export class LoopRun {
  /** The start's write: once per Checkpoint, kept only when it succeeded. */
  private begun: Promise<RunStatus> | null = null;
  private stopped: RunStoppedError | null = null;

  private constructor(
    private readonly store: StepStore,
    private readonly runId: string,
    private readonly owner: string | null,
    private readonly said: Said,
    private readonly declaration: RunDeclaration,
  ) {}

  /**
   * A declaration, merged into what was declared before (what was said first is kept). Once the loop has
   * started its row is written, and a later declaration changes nothing.
   */
  static declare(previous: LoopRun | null, store: StepStore, runId: string, owner: string | null, run: Said): LoopRun {
    if (previous?.begun) return previous;
    const said = previous?.said ?? {};
    const merged = {
      workflow: said.workflow ?? run.workflow,
      totalSteps: said.totalSteps ?? run.totalSteps,
      input: said.input ?? run.input,
    };
    return new LoopRun(store, runId, owner, merged, checkDeclaration(merged));
  }

  get started(): boolean {
    return this.begun !== null;
  }

  /** The run's row as the loop starts; the status it was found or left in. Null once done before. */
  async begin(): Promise<RunStatus | null> {
    if (this.begun) {
      await this.begun;
      return null;
    }
    const { workflow, totalSteps, inputJson } = this.declaration;
    this.begun = this.store
      .beginLoopRun({ runId: this.runId, workflow, totalSteps, inputJson, owner: this.owner })
      .then(
        ({ status }) => status,
        (error: unknown) => {
          this.begun = null;
          throw error;
        },
      );
    return this.begun;
  }

  /**
   * Throws RunPausedError or RunCancelledError when the status stops the loop: the claim taken ahead is given
   * back and the run's owner let go first, once; after that, every call throws the same.
   */
  async stopIf(status: RunStatus | null, releaseAhead: () => Promise<void>): Promise<void> {
    if (this.stopped) throw this.stopped;
    if (!stops(status)) return;
    this.stopped = status === 'paused' ? new RunPausedError(this.runId) : new RunCancelledError(this.runId);
    await releaseAhead().catch(() => undefined);
    // Best effort: the operator's status is what counts; an owner left on a paused run is only a label.
    await this.store.endLoopRun({ runId: this.runId, owner: this.owner, outcome: 'stopped' }).catch(() => undefined);
    throw this.stopped;
  }

  /** The run ends: completed (also when paused during its last step), or failed with the error. */
  async end(outcome: 'completed' | 'failed', detail: { output?: unknown; error?: string }): Promise<RunStatus | null> {
    await this.begin();
    return this.store.endLoopRun({
      runId: this.runId,
      owner: this.owner,
      outcome,
      error: detail.error ?? null,
      outputJson: detail.output === undefined ? null : (JSON.stringify(detail.output) ?? null),
    });
  }
}
