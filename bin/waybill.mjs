#!/usr/bin/env node
// The waybill CLI: the built dist/cli.js, or in a checkout with no fresh build the sources through tsx
// (bin/entry.mjs says which).
import { entry } from './entry.mjs';

const { runCli } = await entry('cli', 'lib/cli/main.ts', ['zod', 'better-sqlite3']).catch((error) => {
  // Raised while the CLI loads (lib/zod-version.ts: a project on zod 3), before it can say so itself.
  if (error?.code !== 'DEPENDENCY_VERSION') throw error;
  process.stderr.write(`waybill: ${error.message}\n`);
  process.exit(2);
});
await runCli(process.argv.slice(2));
