/**
 * The runs ticked in the list. The selection survives LiveRefresh's refreshes, but only runs still shown count:
 * a run that moved to another page is not acted on unseen.
 */
import { useEffect, useRef, useState } from 'react';

export function useSelection(ids: string[]) {
  const [selected, setSelected] = useState<ReadonlySet<string>>(() => new Set());
  const chosen = ids.filter((id) => selected.has(id));
  const allChosen = ids.length > 0 && chosen.length === ids.length;
  const someChosen = chosen.length > 0 && !allChosen;

  /** The select-all checkbox, shown indeterminate while some but not all rows are ticked. */
  const selectAll = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (selectAll.current) selectAll.current.indeterminate = someChosen;
  }, [someChosen]);

  const toggle = (id: string, on: boolean) =>
    setSelected((previous) => {
      const next = new Set(previous);
      if (on) next.add(id);
      else next.delete(id);
      return next;
    });
  const setAll = (on: boolean) => setSelected(on ? new Set(ids) : new Set());
  /** Unticks the runs an action was done to; the refused stay ticked, to try again. */
  const drop = (done: ReadonlySet<string>) =>
    setSelected((previous) => new Set([...previous].filter((id) => !done.has(id))));
  const clear = () => setSelected(new Set());

  return { isSelected: (id: string) => selected.has(id), chosen, allChosen, selectAll, toggle, setAll, drop, clear };
}

export type Selection = ReturnType<typeof useSelection>;
