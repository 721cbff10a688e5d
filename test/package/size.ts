/**
 * What an install puts on disk: node_modules as `du -s` counts it (allocated blocks, each hard-linked file
 * once), and the packages in it. The goals of `npm install waybill` and of `npm install waybill
 * waybill-dashboard` are checked by install.test.ts and printed by `npm run size`.
 */
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export const MB = 1024 * 1024;
/** `npm install waybill` (with its peer zod, installed by npm with it). */
export const LIBRARY_GOAL_BYTES = 40 * MB;
/** `npm install waybill waybill-dashboard`. */
export const WITH_DASHBOARD_GOAL_BYTES = 150 * MB;

export interface InstallSize {
  /** Allocated on disk, as du counts. */
  bytes: number;
  /** Directories under node_modules holding a package.json at their top (nested ones too). */
  packages: number;
}

export function nodeModulesSize(project: string): InstallSize {
  const seen = new Set<string>();
  let bytes = 0;
  let packages = 0;
  const walk = (dir: string, depth: number) => {
    for (const item of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, item.name);
      const stat = lstatSync(path);
      const inode = `${stat.dev}:${stat.ino}`;
      if (seen.has(inode)) continue;
      seen.add(inode);
      bytes += stat.blocks * 512;
      if (item.isDirectory()) walk(path, depth + 1);
      else if (item.name === 'package.json' && isPackageRoot(dir)) packages++;
    }
  };
  walk(join(project, 'node_modules'), 0);
  return { bytes, packages };
}

/** node_modules/<name> or node_modules/@scope/<name>, at any depth. */
function isPackageRoot(dir: string): boolean {
  const parts = dir.split('/');
  const last = parts.length - 1;
  return parts[last - 1] === 'node_modules' || (parts[last - 2] === 'node_modules' && parts[last - 1]!.startsWith('@'));
}

export const inMB = (bytes: number) => `${(bytes / MB).toFixed(1)} MB`;
