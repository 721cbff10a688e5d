/** How the run page and the step page write the ledger's numbers: tokens as counts, cost in USD. */

export const tokens = (n: number | null): string => (n === null ? '—' : n.toLocaleString('en-US'));

/** Four decimals, as `waybill inspect` prints it: a cheap call costs fractions of a cent. */
export const usd = (n: number | null): string => (n === null ? '—' : `$${n.toFixed(4)}`);
