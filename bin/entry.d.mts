// Types of bin/entry.mjs, for the TypeScript that imports it (bench/startup.ts).
export function entry(name: string, source: string, preload?: string[]): Promise<Record<string, unknown>>;
export function runsBuilt(name: string): boolean;
export function buildIsFresh(name: string): boolean;
