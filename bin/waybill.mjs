#!/usr/bin/env node
// The waybill CLI. It runs the TypeScript sources directly: tsx compiles them on import.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('../lib/cli/main.ts');
await runCli(process.argv.slice(2));
