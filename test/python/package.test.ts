/**
 * clients/python as a package a Python developer can trust: MIT in its metadata, `pip install -e` with no
 * index, and its py.typed marker true — the sources pass `mypy --strict`, and a consumer's mistake with the
 * installed package's types is caught. mypy is Debian's python3-mypy (.ci/run installs it); outside CI a
 * machine without it skips those two tests loudly.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeTempDir } from '../support/tmp';
import { CLIENT_DIR, makeVenv, mypyCommand, pythonMissing, sharedVenv } from './venv';

const missing = pythonMissing();
if (missing && process.env.CI === 'true')
  throw new Error(`test/python needs python3 with venv under CI=true: ${missing}`);
const mypy = mypyCommand();
if (!mypy && process.env.CI === 'true')
  throw new Error("test/python needs mypy under CI=true (Debian's python3-mypy; .ci/run installs it)");
if (!mypy)
  console.warn('\n*** test/python/package: the mypy checks SKIPPED: no mypy (apt-get install python3-mypy) ***\n');

const dirs: ReturnType<typeof makeTempDir>[] = [];
const fresh = (prefix: string) => {
  const dir = makeTempDir(prefix);
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) dir.remove();
});

const py = (python: string, code: string) =>
  execFileSync(python, ['-c', code], {
    encoding: 'utf8',
    env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' },
  }).trim();

const METADATA = `import importlib.metadata as m, json
d = m.distribution("waybill-client")
print(json.dumps({"license": d.metadata["License"], "classifiers": d.metadata.get_all("Classifier"),
                  "files": sorted(str(f) for f in d.files or [] if not str(f).endswith((".pyc", "RECORD")))}))`;

describe.skipIf(missing !== null)('the Python client as a package', () => {
  it('installed from the checkout: MIT in its metadata and a LICENSE beside it, py.typed in the wheel', async () => {
    const python = await sharedVenv();
    const found = JSON.parse(py(python, METADATA)) as { license: string; classifiers: string[]; files: string[] };
    expect(found.license).toBe('MIT');
    expect(found.classifiers).toEqual(['License :: OSI Approved :: MIT License', 'Typing :: Typed']);
    expect(found.files).toContain('waybill_client/py.typed');
    expect(found.files).toContain('waybill_client-0.1.0.dist-info/LICENSE');
  }, 120_000);

  it("pip install -e, with no index, no build isolation and no setuptools, runs the checkout's own files", () => {
    const python = makeVenv(fresh('waybill-py-editable-').path, { editable: true });
    const file = py(python, 'import waybill_client; print(waybill_client.__file__)');
    expect(realpathSync(file)).toBe(realpathSync(join(CLIENT_DIR, 'waybill_client', '__init__.py')));
    expect((JSON.parse(py(python, METADATA)) as { license: string }).license).toBe('MIT');
  }, 120_000);

  it.skipIf(mypy === null)(
    'its sources, its build backend and examples/python_agent.py pass mypy --strict',
    () => {
      const checked = spawnSync(
        mypy![0]!,
        [
          ...mypy!.slice(1),
          '--strict',
          '--no-incremental',
          '--cache-dir=/dev/null',
          'waybill_client',
          '_build',
          '../../examples/python_agent.py',
        ],
        {
          cwd: CLIENT_DIR,
          encoding: 'utf8',
        },
      );
      expect(checked.stdout + checked.stderr).toMatch(/^Success: no issues found in \d+ source files\n$/);
      expect(checked.status).toBe(0);
    },
    120_000,
  );

  it.skipIf(mypy === null)(
    "py.typed is true: mypy --strict reads the installed package's types and catches a consumer's mistake",
    async () => {
      const dir = fresh('waybill-py-typed-');
      const python = await sharedVenv();
      writeFileSync(
        dir.file('consumer.py'),
        [
          'from typing import Any, Dict',
          'from waybill_client import Checkpoint, StepContext, run_agent',
          '',
          'def call_model(item: str, ctx: StepContext) -> Dict[str, Any]:',
          '    return {"key": ctx.idempotency_key}',
          '',
          'ckpt = Checkpoint("http://127.0.0.1:3000", "typed-1", workflow="typed")',
          'report: Dict[str, int] = run_agent(["a"], ckpt, call_model)',
          'lease: str = ckpt.lease_ms',
          '',
        ].join('\n'),
      );
      const checked = spawnSync(
        mypy![0]!,
        [
          ...mypy!.slice(1),
          '--strict',
          '--no-incremental',
          '--cache-dir=/dev/null',
          '--python-executable',
          python,
          'consumer.py',
        ],
        { cwd: dir.path, encoding: 'utf8' },
      );
      expect(checked.stdout).toBe(
        'consumer.py:9: error: Incompatible types in assignment (expression has type "int", variable has type "str")  [assignment]\n' +
          'Found 1 error in 1 file (checked 1 source file)\n',
      );
      expect(checked.status).toBe(1);
    },
    120_000,
  );
});
