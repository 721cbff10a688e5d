/**
 * `npm run size`: what `npm install waybill` and `npm install waybill waybill-dashboard` put on disk in a new
 * project, from this checkout's tarballs (packed as the tests pack them, and shared with them), against the
 * goals test/package/install.test.ts and dashboard.test.ts hold them to.
 */
import { makeConsumer } from '../test/package/consumer';
import { packBoth } from '../test/package/pack';
import { inMB, LIBRARY_GOAL_BYTES, nodeModulesSize, WITH_DASHBOARD_GOAL_BYTES } from '../test/package/size';

const { waybill, dashboard } = await packBoth();
for (const [what, tarballs, goal] of [
  ['npm install waybill', [waybill.tarball], LIBRARY_GOAL_BYTES],
  ['npm install waybill waybill-dashboard', [waybill.tarball, dashboard.tarball], WITH_DASHBOARD_GOAL_BYTES],
] as const) {
  const project = await makeConsumer([...tarballs]);
  try {
    const { bytes, packages } = nodeModulesSize(project.dir);
    process.stdout.write(`${what}: ${inMB(bytes)} in node_modules (goal ${inMB(goal)}), ${packages} packages\n`);
  } finally {
    project.remove();
  }
}
