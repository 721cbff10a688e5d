/**
 * A worker's workflows: the user's module (`waybill worker --workflows ./workflows.js`) loaded next to the
 * built-ins, and what the worker publishes about each in the store. Everything that can be wrong with a
 * module is found here, before the store is opened, so a bad module stops the worker having written nothing.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { WaybillError, WorkflowModuleError } from '../errors';
import type { WorkflowPublication } from '../store/contract';
import { inputJsonSchema, schemaFromJson } from './input-check';
import { isWorkflowDefinition, limitsOf, type WorkflowDefinition, WorkflowRegistry } from './workflow';

/**
 * The workflows a module exports: each named export or the default export that defineWorkflow made, or an
 * array of them. The same definition exported under two names counts once; two with one name is an error.
 */
export async function loadWorkflowModule(file: string, cwd = process.cwd()): Promise<WorkflowDefinition<unknown>[]> {
  const path = resolve(cwd, file);
  if (!existsSync(path)) throw new WorkflowModuleError(file, 'no such file');
  let exported: Record<string, unknown>;
  try {
    exported = await import(pathToFileURL(path).href);
  } catch (error) {
    throw new WorkflowModuleError(file, `failed to load: ${syntaxProblem(path, error) ?? describe(error)}`);
  }
  const found = new Set<WorkflowDefinition<unknown>>();
  for (const value of Object.values(exported)) {
    for (const candidate of Array.isArray(value) ? value : [value])
      if (isWorkflowDefinition(candidate)) found.add(candidate);
  }
  if (found.size === 0) {
    throw new WorkflowModuleError(
      file,
      'exports no workflow (export what defineWorkflow returns, by name or as the default export)',
    );
  }
  const byName = new Map<string, WorkflowDefinition<unknown>>();
  for (const definition of found) {
    if (byName.has(definition.name))
      throw new WorkflowModuleError(file, `registers workflow "${definition.name}" twice`);
    byName.set(definition.name, definition);
  }
  return [...byName.values()];
}

/** The built-ins and the module's workflows in one registry; a module's name that is a built-in's is refused. */
export function workerRegistry(
  file: string,
  builtins: WorkflowDefinition<unknown>[],
  own: WorkflowDefinition<unknown>[],
): WorkflowRegistry {
  const registry = new WorkflowRegistry(builtins);
  for (const definition of own) {
    if (registry.has(definition.name))
      throw new WorkflowModuleError(
        file,
        `registers workflow "${definition.name}", which is a built-in workflow's name`,
      );
    registry.register(definition);
  }
  return registry;
}

/**
 * What the worker publishes about each workflow. The JSON Schema must compile back (zod's fromJSONSchema),
 * since the control plane checks starts with it: a schema that would not is refused here, at the worker's
 * start, rather than at every start of a run.
 */
export function publicationsOf(registry: WorkflowRegistry, file?: string): WorkflowPublication[] {
  return registry.definitions().map((definition) => {
    let text: string;
    try {
      text = JSON.stringify(inputJsonSchema(definition.input));
      schemaFromJson(text);
    } catch (error) {
      const problem = `workflow "${definition.name}": its input schema has no JSON Schema the control plane can check (${describe(error)})`;
      throw file ? new WorkflowModuleError(file, problem) : new WaybillError('INVALID_INPUT', problem);
    }
    return {
      name: definition.name,
      description: definition.description ?? null,
      inputSchemaJson: text,
      totalSteps: typeof definition.totalSteps === 'number' ? definition.totalSteps : null,
      version: definition.version ?? null,
      ...(definition.on?.length ? { events: [...new Set(definition.on)] } : {}),
      limits: limitsOf(definition),
    };
  });
}

/**
 * Under tsx (this repository's CLI) a JavaScript syntax error reaches us as tsx's own "Parse error <file>:1:1",
 * which points nowhere. Node itself says what and where: ask it (only on this failure path).
 */
function syntaxProblem(path: string, error: unknown): string | null {
  if (!(error instanceof Error) || !error.message.startsWith('Parse error') || !/^\.[cm]?js$/.test(extname(path)))
    return null;
  const checked = spawnSync(process.execPath, ['--check', path], { encoding: 'utf8', timeout: 10_000 });
  const what = /^(\w*Error): (.+)$/m.exec(checked.stderr ?? '');
  if (!what) return null;
  const where = /:(\d+)\s*$/m.exec(checked.stderr.split('\n')[0] ?? '');
  return `${what[1]}: ${what[2]}${where ? ` (line ${where[1]})` : ''}`;
}

function describe(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  const line = text.replace(/\s*\n\s*/g, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 297)}...` : line;
}
