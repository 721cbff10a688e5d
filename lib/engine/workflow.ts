/**
 * Workflows are plain async functions over a RunContext, registered by name. The input schema is the
 * contract at the boundary: a run is only created with input that parses.
 */
import type { z } from 'zod';
import { InvalidInputError, NotFoundError } from '../errors';
import type { RunContext } from './context';

export interface WorkflowDefinition<I = unknown> {
  name: string;
  input: z.ZodType<I>;
  /** Attempts per step before the run fails. Default 3. */
  maxAttempts?: number;
  /** How many steps a run of this input has, when known up front: drives progress bars and ETAs. */
  totalSteps?: (input: I) => number | null;
  run(ctx: RunContext, input: I): Promise<unknown>;
}

export function defineWorkflow<I>(definition: WorkflowDefinition<I>): WorkflowDefinition<I> {
  if (!/^[a-z][a-z0-9-]{0,63}$/.test(definition.name)) {
    throw new InvalidInputError(`workflow name ${JSON.stringify(definition.name)} must be lowercase letters, digits and dashes`);
  }
  return definition;
}

export class WorkflowRegistry {
  private readonly byName = new Map<string, WorkflowDefinition<any>>();

  constructor(definitions: WorkflowDefinition<any>[] = []) {
    for (const definition of definitions) this.register(definition);
  }

  register(definition: WorkflowDefinition<any>): this {
    if (this.byName.has(definition.name)) throw new InvalidInputError(`workflow ${definition.name} is registered twice`);
    this.byName.set(definition.name, definition);
    return this;
  }

  get(name: string): WorkflowDefinition<unknown> {
    const definition = this.byName.get(name);
    if (!definition) throw new NotFoundError(`workflow ${JSON.stringify(name)} (known: ${this.names().join(', ')})`);
    return definition;
  }

  names(): string[] {
    return [...this.byName.keys()];
  }

  /** Parses input against the workflow's schema; the error names each wrong field by its path. */
  parseInput(name: string, input: unknown): unknown {
    const parsed = this.get(name).input.safeParse(input);
    if (parsed.success) return parsed.data;
    const problems = parsed.error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(input)'}: ${i.message}`);
    throw new InvalidInputError(`invalid input for ${name}: ${problems.join('; ')}`);
  }
}
