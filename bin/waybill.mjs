#!/usr/bin/env node
// The waybill CLI. It runs the TypeScript sources directly: tsx compiles them on import.
import { register } from 'tsx/esm/api';

// Plain-JavaScript dependencies are loaded before tsx's hooks exist: under the hooks every module costs a
// round trip to the loader thread, and zod's many modules alone would add about half a second to each run.
await Promise.all([import('zod'), import('better-sqlite3')]);
register();
const { runCli } = await import('../lib/cli/main.ts');
await runCli(process.argv.slice(2));
