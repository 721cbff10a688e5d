/**
 * The schedules a worker's workflows declare (`defineWorkflow({ schedules })`), as the store keeps them: each
 * input parsed by its workflow's schema here, at the worker's start, so a bad one stops the worker having
 * written nothing rather than failing at every tick. Each input is held too to the rule a start's input is held
 * to for its limits' keys (lib/domain/run-limits.ts limitKeyProblem): a tick's run is a start the store writes
 * without asking again.
 */
import { limitKeyProblem } from '../../domain/run-limits';
import { InvalidInputError } from '../../errors';
import type { ScheduleDefinition } from '../../store/contract';
import { limitsOf, type WorkflowRegistry } from '../workflow';
import { nextTick } from './cron';
import { DEFAULT_CATCH_UP_CAP, scheduleFields, scheduleIssues } from './spec';

export function declaredSchedules(
  registry: WorkflowRegistry,
  now: number,
): (ScheduleDefinition & { nextFireAt: number })[] {
  const out: (ScheduleDefinition & { nextFireAt: number })[] = [];
  for (const definition of registry.definitions()) {
    for (const declared of definition.schedules ?? []) {
      const checked = scheduleFields.safeParse(declared);
      const label = `workflow ${JSON.stringify(definition.name)}: schedule`;
      if (!checked.success) throw new InvalidInputError(`${label}: ${scheduleIssues(checked.error)}`);
      const s = checked.data;
      const input = registry.parseInput(definition.name, s.input);
      const refused = limitKeyProblem(definition.name, limitsOf(definition), input);
      if (refused)
        throw new InvalidInputError(
          `workflow ${JSON.stringify(definition.name)}: schedule ${JSON.stringify(s.name)}: ${refused.message}`,
        );
      out.push({
        name: s.name,
        workflow: definition.name,
        cron: s.cron,
        timeZone: s.timeZone,
        inputJson: JSON.stringify(input),
        overlap: s.overlap,
        catchUp: s.catchUp,
        catchUpCap: s.catchUpCap ?? DEFAULT_CATCH_UP_CAP,
        nextFireAt: nextTick(s.cron, s.timeZone, now) ?? now,
      });
    }
  }
  const names = out.map((s) => s.name);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice) throw new InvalidInputError(`schedule ${JSON.stringify(twice)} is declared twice`);
  return out;
}
