/**
 * The workflows the control plane can start: the built-ins, whose code ships with it, and whatever live or
 * past workers published. A published workflow is checked against its JSON Schema (the control plane has no
 * code of the user's); a built-in against its own zod schema, which says more (refinements, its own words).
 * The built-ins are known without a worker, so a fresh store can start its demo before any worker ran.
 */
import { LIVE_WITHIN_FLOOR_MS } from '../domain/liveness';
import type { RunLimits } from '../domain/run-limits';
import type { PublishedWorkflow, WorkflowStore } from '../store/contract';
import { checkInput, inputJsonSchema, schemaFromJson } from './input-check';
import { limitsOf, type StartableWorkflows, type StartCheck, startCheck, type WorkflowRegistry } from './workflow';

/** Without a heartbeat setting, a worker silent this long no longer counts as serving anything. */
export const LIVE_WITHIN_MS = LIVE_WITHIN_FLOOR_MS;

export interface CatalogEntry {
  name: string;
  description: string | null;
  /** The input's JSON Schema; null when it has none (a published text that is not JSON). */
  inputSchema: Record<string, unknown> | null;
  /** Fixed steps per run, when the workflow declares them; null when they depend on the input. */
  totalSteps: number | null;
  version: string | null;
  builtin: boolean;
  /** Live workers serving it; empty: "no live worker", runs of it wait. */
  servedBy: string[];
  publishedBy: string | null;
  updatedAt: number | null;
  /** Its concurrency limit, rate limit and default priority: the code's for a built-in, else as published. */
  limits: RunLimits;
}

export class WorkflowCatalog implements StartableWorkflows {
  private readonly byName = new Map<string, CatalogEntry>();

  constructor(
    private readonly builtins: WorkflowRegistry,
    published: PublishedWorkflow[],
  ) {
    for (const definition of builtins.definitions()) {
      this.byName.set(definition.name, {
        name: definition.name,
        description: definition.description ?? null,
        inputSchema: inputJsonSchema(definition.input),
        totalSteps: typeof definition.totalSteps === 'number' ? definition.totalSteps : null,
        version: definition.version ?? null,
        builtin: true,
        limits: limitsOf(definition),
        servedBy: [],
        publishedBy: null,
        updatedAt: null,
      });
    }
    for (const row of published) {
      const builtin = this.byName.get(row.name);
      // A built-in's published row only says who serves it: its code here is what checks its input.
      if (builtin?.builtin) {
        this.byName.set(row.name, {
          ...builtin,
          servedBy: row.servedBy,
          publishedBy: row.publishedBy,
          updatedAt: row.updatedAt,
        });
        continue;
      }
      this.byName.set(row.name, {
        name: row.name,
        description: row.description,
        inputSchema: parseSchema(row.inputSchemaJson),
        totalSteps: row.totalSteps,
        version: row.version,
        builtin: false,
        limits: row.limits,
        servedBy: row.servedBy,
        publishedBy: row.publishedBy,
        updatedAt: row.updatedAt,
      });
    }
  }

  static async load(
    store: WorkflowStore,
    builtins: WorkflowRegistry,
    liveWithinMs = LIVE_WITHIN_MS,
  ): Promise<WorkflowCatalog> {
    return new WorkflowCatalog(builtins, await store.listPublishedWorkflows({ liveWithinMs }));
  }

  /** Built-ins first, in their order, then the published ones by name. */
  entries(): CatalogEntry[] {
    return [...this.byName.values()];
  }

  entry(name: string): CatalogEntry | undefined {
    return this.byName.get(name);
  }

  names(): string[] {
    return [...this.byName.keys()];
  }

  check(name: string, input: unknown): StartCheck | undefined {
    const entry = this.byName.get(name);
    if (!entry) return undefined;
    if (entry.builtin) return this.builtins.check(name, input);
    const published = entry.inputSchema === null ? null : compile(entry.inputSchema);
    if (!published)
      return {
        ok: false,
        issues: [
          {
            path: [],
            message: `${name}'s published input schema cannot be read; restart its worker to publish it again`,
          },
        ],
      };
    // Its published limits, not any worker's code: the pick holds its runs by these.
    return startCheck(name, checkInput(published, input), entry.limits, () => ({
      totalSteps: entry.totalSteps,
      priority: entry.limits.priority,
    }));
  }
}

function compile(schema: Record<string, unknown>) {
  try {
    return schemaFromJson(JSON.stringify(schema));
  } catch {
    return null;
  }
}

function parseSchema(text: string): Record<string, unknown> | null {
  try {
    const value = JSON.parse(text);
    return typeof value === 'object' && value !== null ? value : null;
  } catch {
    return null;
  }
}
