/**
 * A row of bucket counts as both metrics files' SQL names them (n, total, b0…bN): what MetricsTally adds up.
 * Backend-free, so neither backend imports the other.
 */
export type HistogramRow = { n: number; total: number } & Record<string, number>;
