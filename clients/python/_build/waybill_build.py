"""A PEP 517 build backend for this one package, in the standard library alone.

Why not setuptools: pip builds in an isolated environment and would fetch setuptools from an index, which a
sandbox often does not have; and venvs on Python 3.12+ do not ship it. A wheel is a zip of the package plus
three metadata files, which is all this writes. The version and name are read from pyproject.toml's
[project] table by a small line parser (tomllib is 3.11+).
"""
import base64
import hashlib
import os
import re
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "waybill_client"


def _project():
    fields = {}
    section = None
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("["):
                section = line.strip("[]")
                continue
            m = re.match(r'^(name|version|description|requires-python)\s*=\s*"([^"]*)"', line)
            if section == "project" and m:
                fields[m.group(1)] = m.group(2)
    return fields


def _metadata(p):
    return (f"Metadata-Version: 2.1\nName: {p['name']}\nVersion: {p['version']}\n"
            f"Summary: {p.get('description', '')}\nRequires-Python: {p.get('requires-python', '>=3.9')}\n")


def _dist_info(p):
    return f"{p['name'].replace('-', '_')}-{p['version']}.dist-info"


def _files():
    base = os.path.join(ROOT, PACKAGE)
    for name in sorted(os.listdir(base)):
        if name.endswith(".py") or name == "py.typed":
            yield f"{PACKAGE}/{name}", os.path.join(base, name)


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    p = _project()
    dist = _dist_info(p)
    name = f"{p['name'].replace('-', '_')}-{p['version']}-py3-none-any.whl"
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as whl:
        entries = [(arc, open(src, "rb").read()) for arc, src in _files()]
        entries += [
            (f"{dist}/METADATA", _metadata(p).encode()),
            (f"{dist}/WHEEL", b"Wheel-Version: 1.0\nGenerator: waybill_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
        ]
        for arc, data in entries:
            whl.writestr(arc, data)
            records.append(_record_line(arc, data))
        records.append(f"{dist}/RECORD,,")
        whl.writestr(f"{dist}/RECORD", "\n".join(records) + "\n")
    return name


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    base = f"{p['name'].replace('-', '_')}-{p['version']}"
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tar:
        for rel in ["pyproject.toml", "README.md", "_build/waybill_build.py"] + [a for a, _ in _files()]:
            full = os.path.join(ROOT, rel)
            if os.path.exists(full):
                tar.add(full, arcname=f"{base}/{rel}")
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []
