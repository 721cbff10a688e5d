/**
 * The name a mistyped one most likely meant: the commands' (main.ts) and a command's actions' (args.ts actionOf).
 * A leaf of its own, so that the flag parsing every command imports needs nothing of the help's command table.
 */

/** The name a mistyped one most likely meant, if one is close enough to suggest. */
export function nearest(typed: string, names: string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of names) {
    const distance = editDistance(typed.toLowerCase(), name);
    if (!best || distance < best.distance) best = { name, distance };
  }
  if (!best) return undefined;
  const prefix = names.find((n) => n.startsWith(typed.toLowerCase()) && typed.length >= 2);
  if (prefix) return prefix;
  return best.distance <= (best.name.length <= 4 ? 1 : 2) ? best.name : undefined;
}

/** Edits between two names, a swap of neighbours counting as one (`rnus` is one edit from `runs`). */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}
