// Which code the bins run. Installed from the package: the built JavaScript in dist/ (there are no
// sources). In a checkout: the TypeScript sources through tsx, because a checkout's workflow modules and test
// fixtures may import .ts files, which only run under tsx's hooks. WAYBILL_BUILT=1 runs the checkout's build
// instead (the startup benchmark and the test suite run it so), when it is at least as new as every file under
// lib/ (dist/.built is stamped with the time the build started): a build left behind by an earlier `npm pack`
// never runs code older than the sources. A worker given a workflows module still runs the sources: in a
// checkout the module may import them (.ts), which only tsx's hooks can load. WAYBILL_BUILT=all runs the build
// for that worker too, for a module its writer knows imports only JavaScript (the test suite's, from dist/).
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * The module `dist/<name>.js`, or `source` (relative to the package root) under tsx. `preload` are
 * plain-JavaScript packages to load before tsx's hooks exist: under the hooks every module costs a round
 * trip to the loader thread, and zod's many modules alone would add about half a second.
 */
export async function entry(name, source, preload = []) {
  const built = join(ROOT, 'dist', `${name}.js`);
  if (!existsSync(join(ROOT, 'lib')) && !existsSync(built)) {
    process.stderr.write(
      `waybill: ${built} is missing: this package was packed without its build (npm pack runs it at prepack)\n`,
    );
    process.exit(1);
  }
  if (runsBuilt(name)) return import(built);
  const { register } = await import('tsx/esm/api');
  await Promise.all(preload.map((name) => import(name)));
  register();
  return import(join(ROOT, source));
}

/** Whether entry(name) loads dist/<name>.js rather than the sources. */
export function runsBuilt(name) {
  const sources = join(ROOT, 'lib');
  if (!existsSync(sources)) return true;
  const built = process.env.WAYBILL_BUILT;
  return (built === 'all' || (built === '1' && !workflowsModule())) && buildIsFresh(name);
}

/** Whether dist/<name>.js exists and no file under lib/ is newer than the build that made it. */
export function buildIsFresh(name) {
  return existsSync(join(ROOT, 'dist', `${name}.js`)) && fresh(join(ROOT, 'dist', '.built'), join(ROOT, 'lib'));
}

/** Whether this process is given a workflows module to load (`--workflows`, WAYBILL_WORKFLOWS). */
function workflowsModule() {
  return (
    process.env.WAYBILL_WORKFLOWS !== undefined ||
    process.argv.slice(2).some((arg) => arg === '--workflows' || arg.startsWith('--workflows='))
  );
}

function fresh(stamp, sources) {
  if (!existsSync(stamp)) return false;
  const builtAt = statSync(stamp).mtimeMs;
  const newer = (dir) =>
    readdirSync(dir, { withFileTypes: true }).some((item) => {
      const path = join(dir, item.name);
      // A directory's own time moves when a file in it is added, renamed or deleted.
      return statSync(path).mtimeMs > builtAt || (item.isDirectory() && newer(path));
    });
  return statSync(sources).mtimeMs <= builtAt && !newer(sources);
}
