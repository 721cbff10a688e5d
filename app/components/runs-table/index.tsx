'use client';
/**
 * The runs table with row selection and the bulk actions over the selected runs. A client component only for
 * the selection: rows (and their relative times) are computed on the server and refreshed by LiveRefresh,
 * and the selection survives those refreshes. Actions apply to the selected runs still on this page, or,
 * with "all matching" on, to every run the list's filter matches (use-bulk-actions.ts). "Rerun from step" takes
 * a step number or a step's name, resolved in each run; runs it does not apply to (running, past their last
 * step, outside clients') are skipped and listed with the reason. A viewer gets neither checkboxes nor actions:
 * the server would refuse them, and offering them misleads.
 */
import type { BulkFilter } from '@/lib/control/bulk';
import { check, th } from './bulk-actions';
import { BulkBar } from './bulk-bar';
import { RunRow, type RunsTableRow } from './row';
import { useBulkActions } from './use-bulk-actions';
import { useSelection } from './use-selection';

export type { RunsTableRow };

export function RunsTable({
  rows,
  operator,
  filter,
  filtered,
}: {
  rows: RunsTableRow[];
  operator: boolean;
  filter: BulkFilter;
  filtered: boolean;
}) {
  const selection = useSelection(rows.map((row) => row.id));
  const bulk = useBulkActions(selection, filter, filtered);

  return (
    <div className="space-y-3">
      {operator && <BulkBar bulk={bulk} chosen={selection.chosen} filter={filter} filtered={filtered} />}

      <div className="overflow-x-auto rounded-lg border border-zinc-200 bg-white shadow-sm dark:border-zinc-800 dark:bg-zinc-900">
        <table data-testid="runs-table" className="w-full min-w-[60rem] border-collapse text-sm">
          <caption className="sr-only">Runs, most recent activity first</caption>
          <thead className="border-b border-zinc-200 bg-zinc-50 dark:border-zinc-800 dark:bg-zinc-900/60">
            <tr>
              {operator && (
                <th scope="col" className="w-10 px-3 py-2">
                  <input
                    ref={selection.selectAll}
                    type="checkbox"
                    data-testid="select-all"
                    aria-label="Select every run on this page"
                    checked={selection.allChosen}
                    onChange={(event) => selection.setAll(event.target.checked)}
                    className={check}
                  />
                </th>
              )}
              <th scope="col" className={th}>
                Run
              </th>
              <th scope="col" className={th}>
                Status
              </th>
              <th scope="col" className={th}>
                Workflow
              </th>
              <th scope="col" className={th}>
                Progress
              </th>
              <th
                scope="col"
                className={`${th} text-right`}
                title="Steps executed / skipped on replay / awaited from another holder"
              >
                Exec / skip / await
              </th>
              <th
                scope="col"
                className={`${th} text-right`}
                title="Claims whose lease passed: the side effect may or may not have happened"
              >
                Orphaned
              </th>
              <th scope="col" className={th}>
                Worker
              </th>
              <th scope="col" className={`${th} text-right`}>
                Updated
              </th>
            </tr>
          </thead>
          <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
            {rows.map((run) => (
              <RunRow
                key={run.id}
                run={run}
                selected={selection.isSelected(run.id)}
                onSelect={operator ? (on) => selection.toggle(run.id, on) : null}
              />
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
