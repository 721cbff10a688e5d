"""A PEP 517 build backend for this one package, in the standard library alone.

Why not setuptools: pip builds in an isolated environment and would fetch setuptools from an index, which a
sandbox often does not have; and venvs on Python 3.12+ do not ship it. A wheel is a zip of the package plus
a few metadata files, which is all this writes. The name, version, description and license are read from
pyproject.toml's [project] table by a small line parser (tomllib is 3.11+). `pip install -e` (PEP 660) gets a
wheel holding one .pth file that puts this folder on sys.path, so the checkout's sources are what runs.
"""
from __future__ import annotations

import base64
import hashlib
import os
import re
import tarfile
import zipfile
from typing import Dict, Iterator, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "waybill_client"
LICENSE = "LICENSE"

Settings = Optional[Dict[str, object]]


def _project() -> Dict[str, str]:
    fields: Dict[str, str] = {}
    section = None
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("["):
                section = line.strip("[]")
                continue
            if section != "project":
                continue
            m = re.match(r'^(name|version|description|requires-python)\s*=\s*"([^"]*)"', line)
            if m:
                fields[m.group(1)] = m.group(2)
            m = re.match(r'^license\s*=\s*\{\s*text\s*=\s*"([^"]*)"\s*\}', line)
            if m:
                fields["license"] = m.group(1)
    return fields


def _metadata(p: Dict[str, str]) -> str:
    lines = [
        "Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {p['version']}",
        f"Summary: {p.get('description', '')}", f"Requires-Python: {p.get('requires-python', '>=3.9')}",
    ]
    if p.get("license"):
        lines.append(f"License: {p['license']}")
        if p["license"] == "MIT":
            lines.append("Classifier: License :: OSI Approved :: MIT License")
    lines.append("Classifier: Typing :: Typed")
    return "\n".join(lines) + "\n"


def _stem(p: Dict[str, str]) -> str:
    return f"{p['name'].replace('-', '_')}-{p['version']}"


def _files() -> Iterator[Tuple[str, str]]:
    base = os.path.join(ROOT, PACKAGE)
    for name in sorted(os.listdir(base)):
        if name.endswith(".py") or name == "py.typed":
            yield f"{PACKAGE}/{name}", os.path.join(base, name)


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _wheel(wheel_directory: str, entries: List[Tuple[str, bytes]]) -> str:
    p = _project()
    dist = f"{_stem(p)}.dist-info"
    name = f"{_stem(p)}-py3-none-any.whl"
    entries = entries + [
        (f"{dist}/METADATA", _metadata(p).encode()),
        (f"{dist}/WHEEL", b"Wheel-Version: 1.0\nGenerator: waybill_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    if os.path.exists(os.path.join(ROOT, LICENSE)):
        entries.append((f"{dist}/{LICENSE}", _read(os.path.join(ROOT, LICENSE))))
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as whl:
        for arc, data in entries:
            whl.writestr(arc, data)
            records.append(_record_line(arc, data))
        records.append(f"{dist}/RECORD,,")
        whl.writestr(f"{dist}/RECORD", "\n".join(records) + "\n")
    return name


def build_wheel(wheel_directory: str, config_settings: Settings = None, metadata_directory: Optional[str] = None) -> str:
    return _wheel(wheel_directory, [(arc, _read(src)) for arc, src in _files()])


def build_editable(wheel_directory: str, config_settings: Settings = None, metadata_directory: Optional[str] = None) -> str:
    return _wheel(wheel_directory, [(f"__editable__.{PACKAGE}.pth", (ROOT + "\n").encode())])


def build_sdist(sdist_directory: str, config_settings: Settings = None) -> str:
    base = _stem(_project())
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tar:
        for rel in ["pyproject.toml", "README.md", LICENSE, "_build/waybill_build.py"] + [a for a, _ in _files()]:
            full = os.path.join(ROOT, rel)
            if os.path.exists(full):
                tar.add(full, arcname=f"{base}/{rel}")
    return name


def get_requires_for_build_wheel(config_settings: Settings = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Settings = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Settings = None) -> List[str]:
    return []
