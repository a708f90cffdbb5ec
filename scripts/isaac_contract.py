#!/usr/bin/env python3
"""The Isaac Sim runner's API contract, checked against the real Isaac Sim 6.2 packages without a GPU.

scripts/isaac_sim_robodojo.py has never run: no machine of this project has an RTX GPU. Isaac Sim 6.2's extensions are
on PyPI as wheels (for CPython 3.12) that hold their Python sources, extension manifests and OmniGraph node
definitions. This script reads the wheels pinned in scripts/isaac-wheels.txt (sha256 verified) as zip files, imports
nothing of Isaac Sim or Kit, and checks what the runner relies on. What it uses is read from its source with ``ast``
and, for the OmniGraph, from its own ``graph_edit()`` run on a sample plan; ``CONTRACT`` below holds the few facts the
source cannot say.

- Python API: every module the runner imports from isaacsim or omni exists and is not deprecated, every name resolves
  (through re-exports), every call to an Isaac class, function or method fits its signature (positional count, keyword
  names, required arguments), literal values fit the annotation and the choices its docstring lists, no documented
  return value is dropped, and SimulationApp's launch-config keys exist.
- Extensions: the experience SimulationApp starts loads what the runner imports, and it or the extensions the runner
  enables provide every node type the runner creates.
- OmniGraph: every node type exists, every attribute set or connected exists on its node type, connected attributes
  have the same type, set values fit their attribute's type and allowed tokens.
- USD schemas the runner applies by name, and the attributes it authors in their namespaces, where the wheels hold
  their definitions.

Kit's own extensions (omni.graph.core, omni.graph.action, omni.timeline, omni.usd) are not on PyPI, so what the runner
uses of them is corroborated instead: the 6.2 wheels' own code uses the same module attributes, call keywords and
OmniGraph attributes (with the types of the attributes they are wired to). Nothing here says how Isaac behaves.

Usage: python scripts/isaac_contract.py [--download] [--wheels DIR] [--runner PATH]
Exit status: 0 when the contract holds, or when --download cannot reach the registry and the wheels are not cached
(one line says so); 1 with one line per problem; 2 when the wheels are missing or do not match their pins.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import zipfile
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import Any

import tomllib

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_wheels import pip_env

ROOT = Path(__file__).resolve().parent.parent
PINS = ROOT / "scripts" / "isaac-wheels.txt"
RUNNER = ROOT / "scripts" / "isaac_sim_robodojo.py"
BRIDGE_ADAPTER = ROOT / "src" / "robodojo" / "hardware" / "isaac.py"  # the ROS side: checked to use no Isaac API
# make isaac-check's ISAAC_WHEELS, else the user's cache folder (it outlives the venv and is shared by checkouts).
DEFAULT_CACHE = Path(
    os.environ.get("ISAAC_WHEELS")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "robodojo" / "isaac-wheels"
)
# What the pinned wheels are built for (Isaac Sim 6.2 supports CPython 3.12 on manylinux_2_35 only).
PIP_TARGET = ("--python-version", "3.12", "--platform", "manylinux_2_35_x86_64")
PIP_TIMEOUT_S = "30"  # per connection attempt; an unreachable registry fails after one retry
# pip's words for a registry it cannot reach (no route, no name resolution, a proxy refusing, a timeout).
UNREACHABLE_MARKERS = (
    "Failed to establish a new connection",
    "Temporary failure in name resolution",
    "NewConnectionError",
    "ProxyError",
    "Max retries exceeded",
    "ConnectTimeoutError",
    "Read timed out",
)
HASH_CHUNK_BYTES = 1 << 20
SUGGESTIONS = 3  # close matches named in a problem
LISTED_MAX = 12  # names listed when a problem shows what 6.2 has instead
# A chain through the object a Kit function returns (the timeline, the USD context) is corroborated; past the next
# call it reaches USD objects (a stage, a prim), whose API usd-core's types cover (mypy checks the runner).
KIT_CHAIN_CALLS_MAX = 1
# OmniGraph types by the Python values og.Controller sets them from.
OGN_FROM_STR = frozenset({"string", "token", "path", "target"})
OGN_FROM_INT = frozenset({"int", "uint", "int64", "uint64", "uchar", "timecode", "float", "double", "half"})
OGN_FROM_FLOAT = frozenset({"float", "double", "half", "timecode"})
OGN_ANY = frozenset({"any"})
ATTRIBUTE_REF = re.compile(r"^(?P<alias>[A-Za-z_]\w*)\.(?P<attr>(?:inputs|outputs|state):\w+)$")
NODE_TYPE_LIKE = re.compile(r"^(?:isaacsim|omni)\.[\w.]+\.[A-Z]\w*$")
RST_ATTRIBUTE = re.compile(r'^\s*"[^"]*\(\*(?P<attr>(?:inputs|outputs|state):[^*]+)\*\)", "``(?P<type>[^`]+)``"')
RST_ALLOWED = re.compile(r'^\s*"", "Metadata", "\*allowedTokens\* = (?P<tokens>[^"]*)"')
RST_META = re.compile(r'^\s*"(?P<key>Unique ID|Extension)", "(?P<value>[^"]+)"')
QUOTED = re.compile(r'"([^"\n]+)"')
PHYSX_SCHEMA_NAME = re.compile(r"\bPhysxSchema\.(\w+)")


@dataclass(frozen=True)
class RunnerContract:
    """What the runner relies on that its source cannot say; the rest is read from the source."""

    isaac_roots: tuple[str, ...] = ("isaacsim", "omni")  #: imports from these are Isaac Sim's API
    kit_root: str = "omni"  #: Kit's own modules: those under it that the wheels lack are corroborated by use
    graph_function: str = "graph_edit"  #: the runner's function that returns the OmniGraph it builds
    simulation_app: str = "isaacsim.simulation_app.SimulationApp"  #: whose __init__ names the default experience
    #: calls whose argument names an extension to enable: (function, parameter)
    extension_enablers: tuple[tuple[str, str], ...] = (
        ("isaacsim.core.experimental.utils.app.enable_extension", "name"),
    )
    #: dict arguments whose keys must be keys of a class attribute: (class, parameter, attribute)
    config_dicts: tuple[tuple[str, str, str], ...] = (
        ("isaacsim.simulation_app.SimulationApp", "launch_config", "DEFAULT_LAUNCHER_CONFIG"),
    )
    schema_methods: tuple[str, ...] = ("AddAppliedSchema", "ApplyAPI")  #: take an applied schema's name
    attribute_methods: tuple[str, ...] = ("CreateAttribute",)  #: take an attribute's name
    own_namespaces: tuple[str, ...] = ("robodojo",)  #: attributes of the project's own


CONTRACT = RunnerContract()


class ContractError(Exception):
    """The check cannot run: wheels missing or not matching their pins, a runner that does not load."""


class RegistryUnreachable(ContractError):
    """pip could not reach the package registry and the wheels are not cached."""


# -- the pinned wheels --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pin:
    """One pinned wheel: ``name==version --hash=sha256:...``."""

    name: str
    version: str
    sha256: str

    @property
    def file_prefix(self) -> str:
        return f"{self.name.replace('-', '_')}-{self.version}-"


def read_pins(path: Path = PINS) -> list[Pin]:
    """The pins of a requirements-style file; each line needs an exact version and one sha256."""
    pins = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)\s+--hash=sha256:([0-9a-f]{64})", line)
        if match is None:
            raise ContractError(f"{path}:{number}: expected 'name==version --hash=sha256:<64 hex>', got {line!r}")
        pins.append(Pin(*match.groups()))
    return pins


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(HASH_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def _cached(pins: Sequence[Pin], cache: Path) -> tuple[list[Path], list[Pin]]:
    """The cached wheels that match their pins, and the pins without one (pip replaces a file with a bad hash)."""
    found, missing = [], []
    for pin in pins:
        candidates = sorted(cache.glob(f"{pin.file_prefix}*.whl")) if cache.is_dir() else []
        match = next((path for path in candidates if _sha256(path) == pin.sha256), None)
        if match is None:
            missing.append(pin)
        else:
            found.append(match)
    return found, missing


def ensure_wheels(cache: Path = DEFAULT_CACHE, *, download: bool, pins_path: Path = PINS) -> list[Path]:
    """The pinned wheels in ``cache``, verified; with ``download``, pip fetches those missing first.

    Raises :class:`RegistryUnreachable` when they are missing and the registry cannot be reached, and
    :class:`ContractError` when pip fails otherwise or the wheels are missing without ``download``.
    """
    pins = read_pins(pins_path)
    found, missing = _cached(pins, cache)
    if not missing:
        return found
    if not download:
        raise ContractError(f"{cache}: no verified {', '.join(p.name for p in missing)} wheel (run make isaac-check)")
    cache.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "-q", "--progress-bar", "off", "--no-deps"]
    command += ["--only-binary=:all:", *PIP_TARGET, "--require-hashes", "-r", str(pins_path), "-d", str(cache)]
    command += ["--timeout", PIP_TIMEOUT_S, "--retries", "1"]
    result = subprocess.run(command, capture_output=True, text=True, env=pip_env(), check=False)
    if result.returncode:
        markers = [m for m in UNREACHABLE_MARKERS if m in result.stderr]
        if markers:
            errno = re.search(r"\[Errno -?\d+\] ([^'\"\)]+)", result.stderr)
            raise RegistryUnreachable(f"the package registry cannot be reached ({errno[1] if errno else markers[0]})")
        last = (result.stderr.strip().splitlines() or ["pip failed"])[-1]
        raise ContractError(f"pip download of {pins_path.name}: {last}")
    found, missing = _cached(pins, cache)
    if missing:
        raise ContractError(f"{cache}: pip left no wheel matching the pin of {', '.join(p.name for p in missing)}")
    return found


# -- the wheels' contents -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Extension:
    """A Kit extension in the wheels: where it lives, its Python module roots, what it depends on."""

    name: str
    root: str  #: folder in the wheels, ending in "/"
    module_roots: tuple[str, ...]
    dependencies: tuple[str, ...]  #: the non-optional ones
    deprecated: str  #: why, or "" when it is not


@dataclass(frozen=True)
class ModuleFile:
    """Where a module lives in the wheels: ``kind`` is source, stub, binary or namespace."""

    name: str
    path: str
    kind: str
    extension: Extension | None
    is_package: bool


class WheelTree:
    """The pinned wheels read as one tree of files (members of their zip archives), nothing extracted."""

    KERNEL_PY = "isaacsim/kit/kernel/py/"  # Kit's kernel modules (omni.kit.app, carb), on Kit's sys.path
    APPS = "isaacsim/apps/"  # the experiences (.kit)

    def __init__(self, wheels: Sequence[Path]) -> None:
        self.wheels = tuple(wheels)
        self._zips = [zipfile.ZipFile(w) for w in wheels]
        self._owner: dict[str, zipfile.ZipFile] = {}
        for archive in self._zips:
            for name in archive.namelist():
                if not name.endswith("/"):
                    self._owner[name] = archive
        self.dirs: set[str] = set()
        for name in self._owner:
            folder = name.rpartition("/")[0]
            while folder and folder + "/" not in self.dirs:
                self.dirs.add(folder + "/")
                folder = folder.rpartition("/")[0]
        self.extensions = self._read_extensions()
        roots: list[tuple[str, Extension | None]] = [("", None), (self.KERNEL_PY, None)]
        roots += [(r, ext) for ext in self.extensions.values() for r in ext.module_roots]
        self.roots = roots
        self._modules: dict[str, ModuleFile | None] = {}
        self._trees: dict[str, ast.Module] = {}

    @property
    def size_mb(self) -> float:
        return sum(w.stat().st_size for w in self.wheels) / 1e6

    def files(self) -> Iterable[str]:
        return self._owner.keys()

    def read(self, path: str) -> str:
        return self._owner[path].read(path).decode("utf-8", errors="replace")

    def _read_extensions(self) -> dict[str, Extension]:
        extensions: dict[str, Extension] = {}
        for path in sorted(self._owner):
            if not path.endswith("/config/extension.toml"):
                continue
            root = path[: -len("config/extension.toml")]
            name = root.rstrip("/").rsplit("/", 1)[-1].split("-", 1)[0]
            try:
                manifest = tomllib.loads(self.read(path))
            except tomllib.TOMLDecodeError:
                continue  # not an extension this check can read; what the runner needs would then be missing
            module_roots = []
            for entry in manifest.get("python", {}).get("module", []):
                module_roots.append(root + entry["path"].strip("/") + "/" if "path" in entry else root)
            deps = tuple(
                d for d, spec in manifest.get("dependencies", {}).items() if not (spec or {}).get("optional", False)
            )
            warning = manifest.get("deprecation", {}).get("warning", "")
            if not warning and "/extsDeprecated/" in root:
                warning = "in extsDeprecated/"
            extensions.setdefault(name, Extension(name, root, tuple(dict.fromkeys(module_roots)), deps, warning))
        return extensions

    def extension_of(self, path: str) -> Extension | None:
        """The extension a file in the wheels belongs to (the deepest root that holds it)."""
        owners = [e for e in self.extensions.values() if path.startswith(e.root)]
        return max(owners, key=lambda e: len(e.root)) if owners else None

    def module(self, name: str) -> ModuleFile | None:
        """Find a module as Kit would import it: a source, stub or binary file first, a namespace folder last."""
        if name not in self._modules:
            self._modules[name] = self._find_module(name)
        return self._modules[name]

    def _find_module(self, name: str) -> ModuleFile | None:
        rel = name.replace(".", "/")
        namespace = None
        for root, ext in self.roots:
            for suffix, kind, package in (
                ("/__init__.py", "source", True),
                (".py", "source", False),
                ("/__init__.pyi", "stub", True),
                (".pyi", "stub", False),
            ):
                if root + rel + suffix in self._owner:
                    return ModuleFile(name, root + rel + suffix, kind, ext, package)
            stem = root + rel + "."
            folder = stem.rpartition("/")[0] + "/" if "/" in stem else ""
            if any(p.startswith(stem) and p.endswith((".so", ".pyd")) for p in self._by_folder.get(folder, ())):
                return ModuleFile(name, stem, "binary", ext, False)
            if namespace is None and root + rel + "/" in self.dirs:
                namespace = ModuleFile(name, root + rel + "/", "namespace", ext, True)
        return namespace

    @cached_property
    def _by_folder(self) -> dict[str, list[str]]:
        folders: dict[str, list[str]] = defaultdict(list)
        for path in self._owner:
            folders[path.rsplit("/", 1)[0] + "/" if "/" in path else ""].append(path)
        return folders

    def tree(self, module: ModuleFile) -> ast.Module | None:
        if module.kind not in ("source", "stub"):
            return None
        if module.path not in self._trees:
            self._trees[module.path] = ast.parse(self.read(module.path), module.path)
        return self._trees[module.path]


# -- Python symbols in the wheels ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Symbol:
    """A name in the wheels: a module, class, function, value, or a member of a binary module (opaque)."""

    module: ModuleFile
    name: str  #: within the module ("" for the module itself; "Class.method" for members)
    kind: str
    node: Any = None  #: its ast definition

    @property
    def dotted(self) -> str:
        return f"{self.module.name}.{self.name}" if self.name else self.module.name

    @property
    def short(self) -> str:
        return self.name or self.module.name


UNKNOWN = Symbol(ModuleFile("?", "", "binary", None, False), "?", "opaque")  # a member this check cannot see


def _flat(body: Sequence[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of a module or class body, looking into if/try blocks (as Python runs them at import)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from _flat(stmt.body)
            yield from _flat(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            for block in (stmt.body, stmt.orelse, stmt.finalbody, *(h.body for h in stmt.handlers)):
                yield from _flat(block)


def _targets(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, ast.Assign):
        nodes: list[ast.expr] = list(stmt.targets)
    elif isinstance(stmt, ast.AnnAssign):
        nodes = [stmt.target]
    else:
        return []
    names = []
    for node in nodes:
        elts = node.elts if isinstance(node, ast.Tuple | ast.List) else [node]
        names += [e.id for e in elts if isinstance(e, ast.Name)]
    return names


def _absolute(module: ModuleFile, level: int, name: str | None) -> str:
    if not level:
        return name or ""
    package = module.name if module.is_package else module.name.rpartition(".")[0]
    for _ in range(level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{name}" if name else package


class Symbols:
    """Resolves names in the wheels as Python would import them, following re-exports and star imports."""

    def __init__(self, tree: WheelTree) -> None:
        self.tree = tree

    def module(self, name: str) -> Symbol | None:
        found = self.tree.module(name)
        return Symbol(found, "", "module") if found else None

    def resolve_dotted(self, dotted: str) -> Symbol | None:
        """``package.module.Name[.member]``: the longest module prefix, then names within it."""
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            symbol = self.module(".".join(parts[:cut]))
            if symbol is None:
                continue
            for part in parts[cut:]:
                symbol = self.member(symbol, part)
                if symbol is None or symbol is UNKNOWN:
                    return symbol
            return symbol
        return None

    def member(self, owner: Symbol, name: str) -> Symbol | None:
        """``owner.name`` for a module or class; UNKNOWN where the wheels cannot say (binary, unseen bases)."""
        if owner.kind == "module":
            return self.resolve(owner.module, name, set())
        if owner.kind == "class":
            return self._class_member(owner, name, set())
        return UNKNOWN  # a value's or a function's attributes: the sources do not show them

    def resolve(self, module: ModuleFile, name: str, seen: set[tuple[str, str]]) -> Symbol | None:
        if (module.name, name) in seen:
            return None
        seen.add((module.name, name))
        if module.kind == "binary":
            return Symbol(module, name, "opaque")
        tree = self.tree.tree(module)
        body = list(_flat(tree.body)) if tree else []
        for stmt in body:
            if isinstance(stmt, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == name:
                return Symbol(module, name, "class" if isinstance(stmt, ast.ClassDef) else "function", stmt)
        for stmt in body:
            found = self._imported(module, stmt, name, seen)
            if found is not None:
                return found
        if any(name in _targets(stmt) for stmt in body):
            # A name assigned from a call may still come from an import inside a function (isaacsim's SimulationApp).
            for node in ast.walk(tree) if tree else []:
                if isinstance(node, ast.ImportFrom):
                    found = self._imported(module, node, name, seen)
                    if found is not None:
                        return found
            return Symbol(module, name, "value", next(s for s in body if name in _targets(s)))
        for stmt in body:
            if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
                source = self.tree.module(_absolute(module, stmt.level, stmt.module))
                if source is not None and name in self.public_names(source):
                    found = self.resolve(source, name, seen)
                    if found is not None:
                        return found
        submodule = self.tree.module(f"{module.name}.{name}")
        return Symbol(submodule, "", "module") if submodule else None

    def _imported(self, module: ModuleFile, stmt: ast.stmt, name: str, seen: set[tuple[str, str]]) -> Symbol | None:
        if isinstance(stmt, ast.ImportFrom):
            for alias in stmt.names:
                if (alias.asname or alias.name) == name and alias.name != "*":
                    source = self.tree.module(_absolute(module, stmt.level, stmt.module))
                    if source is not None:
                        return self.resolve(source, alias.name, seen)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname == name:
                    return self.module(alias.name)
                if alias.asname is None and alias.name.split(".")[0] == name:
                    return self.module(name)
        return None

    def public_names(self, module: ModuleFile) -> set[str] | frozenset[str]:
        """What ``from module import *`` binds: its __all__, else its names without a leading underscore."""
        tree = self.tree.tree(module)
        if tree is None:
            return frozenset()
        names: set[str] = set()
        for stmt in _flat(tree.body):
            if "__all__" in _targets(stmt) and isinstance(stmt, ast.Assign | ast.AnnAssign):
                value = stmt.value
                if isinstance(value, ast.List | ast.Tuple):
                    return {e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            if isinstance(stmt, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(stmt.name)
            names.update(_targets(stmt))
            if isinstance(stmt, ast.ImportFrom | ast.Import):
                names.update((a.asname or a.name).split(".")[0] for a in stmt.names if a.name != "*")
        return {n for n in names if not n.startswith("_")}

    def _class_member(self, cls: Symbol, name: str, seen: set[str]) -> Symbol | None:
        if cls.dotted in seen:
            return None
        seen.add(cls.dotted)
        node: ast.ClassDef = cls.node
        for stmt in _flat(node.body):
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name == name:
                return Symbol(cls.module, f"{cls.name}.{name}", "function", stmt)
            if name in _targets(stmt):
                return Symbol(cls.module, f"{cls.name}.{name}", "value", stmt)
        for base in node.bases:
            base_symbol = self._expr_symbol(cls.module, base)
            if base_symbol is None or base_symbol.kind != "class":
                return UNKNOWN  # a base this check cannot read (object, a builtin, a binary class)
            found = self._class_member(base_symbol, name, seen)
            if found is not None:
                return found
        return None

    def _expr_symbol(self, module: ModuleFile, expr: ast.expr) -> Symbol | None:
        if isinstance(expr, ast.Name):
            return self.resolve(module, expr.id, set())
        if isinstance(expr, ast.Attribute):
            owner = self._expr_symbol(module, expr.value)
            return self.member(owner, expr.attr) if owner else None
        return None


# -- signatures, as the sources declare and document them -----------------------------------------------------------


@dataclass(frozen=True)
class Param:
    """One parameter: its kind, whether it has a default, its annotation and the choices its docstring lists."""

    name: str
    kind: str  #: positional, keyword (either way), keyword-only, *args, **kwargs
    has_default: bool
    annotation: ast.expr | None
    choices: tuple[str, ...]


@dataclass(frozen=True)
class Signature:
    """What a call must fit: parameters after ``self``, the return annotation and what the docstring says of it."""

    params: tuple[Param, ...]
    returns: ast.expr | None
    returns_doc: str


def _doc_sections(node: ast.AST) -> tuple[dict[str, str], str]:
    """Google-style docstring: each argument's text, and the first line under Returns."""
    doc = ast.get_docstring(node) if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) else None
    args: dict[str, str] = {}
    returns = ""
    if not doc:
        return args, returns
    lines = doc.splitlines()
    section, indent, current = "", None, ""
    for line in lines:
        stripped = line.strip()
        if re.fullmatch(r"[A-Z][A-Za-z ]*:", stripped) and len(line) - len(line.lstrip()) == 0:
            section, indent, current = stripped[:-1], None, ""
            continue
        if not stripped:
            continue
        depth = len(line) - len(line.lstrip())
        if section == "Args":
            match = re.match(r"(\w+)(?: \([^)]*\))?:\s*(.*)", stripped)
            if match and (indent is None or depth == indent):
                indent, current = depth, match.group(1)
                args[current] = match.group(2)
            elif current and indent is not None and depth > indent:
                args[current] += " " + stripped
        elif section == "Returns" and not returns:
            returns = stripped
    return args, returns


def _params(node: ast.FunctionDef | ast.AsyncFunctionDef, docs: Mapping[str, str], drop_first: bool) -> list[Param]:
    a = node.args
    positional = [*a.posonlyargs, *a.args]
    defaults = [False] * (len(positional) - len(a.defaults)) + [True] * len(a.defaults)
    params = []
    for i, (arg, has_default) in enumerate(zip(positional, defaults, strict=True)):
        kind = "positional-only" if i < len(a.posonlyargs) else "positional-or-keyword"
        params.append(Param(arg.arg, kind, has_default, arg.annotation, _choices(docs.get(arg.arg, ""))))
    if a.vararg:
        params.append(Param(a.vararg.arg, "*args", True, None, ()))
    for arg, default in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        params.append(
            Param(arg.arg, "keyword-only", default is not None, arg.annotation, _choices(docs.get(arg.arg, "")))
        )
    if a.kwarg:
        params.append(Param(a.kwarg.arg, "**kwargs", True, None, ()))
    return params[1:] if drop_first and positional else params


def _choices(text: str) -> tuple[str, ...]:
    """The string values a parameter's documentation quotes (``"force"`` or ``"acceleration"``)."""
    return tuple(dict.fromkeys(QUOTED.findall(text)))


def _is_dataclass(node: ast.ClassDef) -> bool:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (isinstance(target, ast.Name) and target.id == "dataclass") or (
            isinstance(target, ast.Attribute) and target.attr == "dataclass"
        ):
            return True
    return False


def signature(symbols: Symbols, symbol: Symbol, *, bound: bool) -> Signature | None:
    """How ``symbol`` is called (a class: how it is constructed); None when the wheels do not show it."""
    node = symbol.node
    if symbol.kind == "function":
        docs, returns_doc = _doc_sections(node)
        return Signature(tuple(_params(node, docs, drop_first=bound)), node.returns, returns_doc)
    if symbol.kind != "class":
        return None
    docs, _ = _doc_sections(node)
    if _is_dataclass(node):
        if node.bases:
            return None  # fields inherited from a base dataclass: not read here
        params = []
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                if "ClassVar" in ast.unparse(stmt.annotation):
                    continue
                name = stmt.target.id
                params.append(
                    Param(
                        name,
                        "positional-or-keyword",
                        stmt.value is not None,
                        stmt.annotation,
                        _choices(docs.get(name, "")),
                    )
                )
        return Signature(tuple(params), None, "")
    init = symbols.member(symbol, "__init__")
    if init is None or init is UNKNOWN or init.kind != "function":
        return None
    init_docs, _ = _doc_sections(init.node)
    return Signature(tuple(_params(init.node, {**docs, **init_docs}, drop_first=True)), None, "")


def _annotation_heads(annotation: ast.expr | None) -> set[str]:
    """The outer type names of an annotation: ``str | dict[str, str] | None`` -> {str, dict, None}."""
    if annotation is None:
        return set()
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return set()
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _annotation_heads(annotation.left) | _annotation_heads(annotation.right)
    if isinstance(annotation, ast.Subscript):
        head = ast.unparse(annotation.value).rsplit(".", 1)[-1]
        if head in ("Optional", "Union"):
            inner = annotation.slice
            elts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
            heads = set().union(*(_annotation_heads(e) for e in elts))
            return heads | {"None"} if head == "Optional" else heads
        return {head}
    if isinstance(annotation, ast.Constant) and annotation.value is None:
        return {"None"}
    return {ast.unparse(annotation).rsplit(".", 1)[-1]}


def _literal_type(expr: ast.expr) -> str | None:
    """The type of a value the source shows plainly (a literal, an f-string, str(...)); None otherwise."""
    if isinstance(expr, ast.Constant):
        return "None" if expr.value is None else type(expr.value).__name__
    if isinstance(expr, ast.JoinedStr):
        return "str"
    if isinstance(expr, ast.Dict | ast.List | ast.Tuple | ast.Set):
        return type(expr).__name__.lower()
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and expr.func.id in ("str", "int", "float", "bool")
    ):
        return expr.func.id
    return None


def _fits(value_type: str, heads: set[str]) -> bool:
    if not heads or heads & {"Any", "object"} or value_type in heads:
        return True
    if value_type == "int" and "float" in heads:
        return True
    if value_type in ("list", "tuple") and heads & {"Sequence", "Iterable", "Collection"}:
        return True
    return value_type == "dict" and "Mapping" in heads


# -- what a source uses of Isaac Sim --------------------------------------------------------------------------------


@dataclass(frozen=True)
class KitRef:
    """A name in Kit's own API (not on PyPI), as a chain: ``omni.timeline.get_timeline_interface().play``."""

    chain: str


@dataclass(frozen=True)
class Instance:
    """An object the source made from a class in the wheels."""

    cls: Symbol


Ref = Symbol | KitRef | Instance


@dataclass
class Uses:
    """What one source uses of Isaac Sim, and the problems found reading it."""

    path: str
    imports: set[str] = field(default_factory=set)  #: modules
    names: set[str] = field(default_factory=set)  #: resolved names in the wheels
    calls: int = 0
    keywords: int = 0
    choices: int = 0
    kit: dict[str, int] = field(default_factory=dict)  #: Kit chains (and call shapes) -> first line
    modules: dict[str, ModuleFile] = field(default_factory=dict)  #: wheel modules imported -> for extension checks
    enabled: list[str] = field(default_factory=list)  #: extensions the source enables
    schemas: list[tuple[str, int]] = field(default_factory=list)  #: applied schema names
    attributes: list[tuple[str, int]] = field(default_factory=list)  #: authored attribute names
    node_types: list[tuple[str, int]] = field(default_factory=list)  #: node-type-like strings
    problems: list[str] = field(default_factory=list)


def _pattern(expr: ast.AST, constants: Mapping[str, object] | None = None) -> str | None:
    """A string the source builds: a literal, a module constant, or an f-string with ``{}`` for what varies."""
    constants = constants or {}
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    if isinstance(expr, ast.Name) and isinstance(constants.get(expr.id), str):
        return str(constants[expr.id])
    if isinstance(expr, ast.JoinedStr):
        parts = []
        for v in expr.values:
            known = _pattern(v.value, constants) if isinstance(v, ast.FormattedValue) else _pattern(v, constants)
            parts.append("{}" if known is None else known)
        return "".join(parts)
    return None


def _module_constants(tree: ast.Module) -> dict[str, object]:
    """``NAME = <literal>`` at the top of a module: what f-strings and calls built from names stand for."""
    constants: dict[str, object] = {}
    for stmt in tree.body:
        value = stmt.value if isinstance(stmt, ast.Assign | ast.AnnAssign) else None
        if isinstance(value, ast.Constant) and len(names := _targets(stmt)) == 1:
            constants[names[0]] = value.value
    return constants


class _Reader(ast.NodeVisitor):
    """Walks a source in order, binding names to what they refer to in Isaac Sim and checking each use.

    With ``symbols`` None it reads the wheels' own code for Kit chains only (the corroboration corpus).
    """

    def __init__(self, uses: Uses, symbols: Symbols | None, contract: RunnerContract = CONTRACT) -> None:
        self.uses = uses
        self.symbols = symbols
        self.contract = contract
        self.env: dict[str, Ref] = {}
        self.refs: dict[int, Ref | None] = {}
        self.statements: set[int] = set()  # calls whose value is dropped
        self.constants: dict[str, object] = {}
        # The contract's rules, keyed by where their function or class is defined (what a call resolves to).
        self.enablers: dict[str, str] = {}
        self.configs: dict[str, tuple[str, str]] = {}
        if symbols is not None:
            for function, param in contract.extension_enablers:
                if found := symbols.resolve_dotted(function):
                    self.enablers[found.dotted] = param
            for cls, param, attribute in contract.config_dicts:
                if found := symbols.resolve_dotted(cls):
                    self.configs[found.dotted] = (param, attribute)

    def read(self, tree: ast.Module) -> None:
        self.constants = _module_constants(tree)
        self.visit(tree)

    def problem(self, node: ast.AST, text: str) -> None:
        line = f"{self.uses.path}:{getattr(node, 'lineno', 0)}: {text}"
        if line not in self.uses.problems:
            self.uses.problems.append(line)

    def _kit_module(self, name: str) -> bool:
        root = self.contract.kit_root
        if not (name == root or name.startswith(root + ".")):
            return False
        if self.symbols is None:
            return True
        found = self.symbols.tree.module(name)
        return found is None or found.kind == "namespace"

    def _isaac(self, name: str) -> bool:
        return any(name == r or name.startswith(r + ".") for r in self.contract.isaac_roots)

    def _kit(self, chain: str, node: ast.AST) -> KitRef:
        self.uses.kit.setdefault(chain, getattr(node, "lineno", 0))
        return KitRef(chain)

    # -- imports --

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if not self._isaac(alias.name):
                continue
            bound = alias.asname or alias.name.split(".")[0]
            if self._kit_module(alias.name):
                self._kit(alias.name, node)
                self.env[bound] = KitRef(alias.name if alias.asname else bound)
            elif self.symbols is not None:
                module = self._import_module(alias.name, node)
                if module is not None:
                    self.env[bound] = module if alias.asname else (self.symbols.module(bound) or module)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        name = node.module or ""
        if node.level or not self._isaac(name):
            return
        for alias in node.names:
            bound = alias.asname or alias.name
            if self._kit_module(name):
                self.env[bound] = self._kit(f"{name}.{alias.name}", node)
                continue
            if self.symbols is None:
                continue
            module = self._import_module(name, node)
            if module is None:
                return
            symbol = self.symbols.member(module, alias.name)
            if symbol is None:
                hint = self._near(module, alias.name)
                self.problem(node, f"from {name} import {alias.name}: 6.2's {name} has no {alias.name}{hint}")
                continue
            self.uses.names.add(f"{name}.{alias.name}")
            if symbol.module.extension is not None:
                self.uses.modules[symbol.module.name] = symbol.module
            self.env[bound] = symbol

    def _import_module(self, name: str, node: ast.AST) -> Symbol | None:
        assert self.symbols is not None
        module = self.symbols.module(name)
        self.uses.imports.add(name)
        if module is None:
            self.problem(node, f"import {name}: no such module in the Isaac Sim 6.2 wheels")
            return None
        ext = module.module.extension
        if ext is not None:
            self.uses.modules[name] = module.module
            if ext.deprecated:
                self.problem(node, f"import {name}: extension {ext.name} is deprecated in 6.2 ({ext.deprecated})")
        return module

    def _near(self, owner: Symbol, name: str) -> str:
        """`` (did you mean ...?)`` with the names of ``owner`` closest to ``name``, or nothing."""
        if owner.kind == "class":
            body = list(_flat(owner.node.body))
            names = [s.name for s in body if isinstance(s, ast.FunctionDef)] + [t for s in body for t in _targets(s)]
        elif owner.kind == "module" and self.symbols is not None:
            names = sorted(self.symbols.public_names(owner.module))
        else:
            names = []
        close = difflib.get_close_matches(name, names, n=SUGGESTIONS)
        return f" (did you mean {', '.join(close)}?)" if close else ""

    # -- bindings and uses --

    def visit_Assign(self, node: ast.Assign) -> None:
        ref = self.ref(node.value)
        self.generic_visit(node)
        too_deep = isinstance(ref, KitRef) and ref.chain.count("()") > KIT_CHAIN_CALLS_MAX
        if ref is not None and not too_deep and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.env[node.targets[0].id] = ref

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.ref(node)  # the whole chain; then what it starts from (a call, a subscript), not its inner links
        base: ast.expr = node
        while isinstance(base, ast.Attribute):
            base = base.value
        self.visit(base)

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Call):
            self.statements.add(id(node.value))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        self.ref(node)
        if isinstance(node.func, ast.Attribute) and node.args and self.symbols is not None:
            name = _pattern(node.args[0], self.constants)
            if name is not None and node.func.attr in self.contract.schema_methods:
                self.uses.schemas.append((name, node.lineno))
            if name is not None and node.func.attr in self.contract.attribute_methods:
                self.uses.attributes.append((name, node.lineno))
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and NODE_TYPE_LIKE.match(node.value):
            self.uses.node_types.append((node.value, node.lineno))

    def ref(self, node: ast.expr) -> Ref | None:
        if id(node) not in self.refs:
            self.refs[id(node)] = self._evaluate(node)
        return self.refs[id(node)]

    def _evaluate(self, node: ast.expr) -> Ref | None:
        if isinstance(node, ast.Name):
            return self.env.get(node.id)
        if isinstance(node, ast.Attribute):
            owner = self.ref(node.value)
            if isinstance(owner, KitRef):
                return self._kit(f"{owner.chain}.{node.attr}", node)
            if owner is None or self.symbols is None:
                return None
            target = owner.cls if isinstance(owner, Instance) else owner
            if target.kind == "module" and self._kit_module(f"{target.dotted}.{node.attr}"):
                return self._kit(f"{target.dotted}.{node.attr}", node)
            member = self.symbols.member(target, node.attr)
            if member is None:
                what = "an instance of " + target.short if isinstance(owner, Instance) else target.dotted
                self.problem(node, f"{what} has no {node.attr} in 6.2{self._near(target, node.attr)}")
                return None
            if member is not UNKNOWN:
                self.uses.names.add(member.dotted)
            return None if member is UNKNOWN else member
        if isinstance(node, ast.Call):
            callee = self.ref(node.func)
            if isinstance(callee, KitRef):
                for keyword in node.keywords:
                    if keyword.arg:
                        self._kit(f"{callee.chain}({keyword.arg}=)", node)
                for arg in node.args:
                    if isinstance(arg, ast.Dict):
                        for key in arg.keys:
                            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                                self._kit(f"{callee.chain}({{{key.value}}})", node)
                return KitRef(f"{callee.chain}()")
            if isinstance(callee, Symbol) and self.symbols is not None:
                via_instance = isinstance(node.func, ast.Attribute) and isinstance(self.ref(node.func.value), Instance)
                self._check_call(node, callee, _drops_first(callee, via_instance))
                return Instance(callee) if callee.kind == "class" else None
        return None

    def _check_call(self, node: ast.Call, callee: Symbol, bound: bool) -> None:
        assert self.symbols is not None
        self.uses.calls += 1
        sig = signature(self.symbols, callee, bound=bound)
        if sig is None:
            return
        shown = f"{callee.short}()"
        params = list(sig.params)
        positional = [p for p in params if p.kind in ("positional-only", "positional-or-keyword")]
        given: dict[str, ast.expr] = {}
        if not any(isinstance(a, ast.Starred) for a in node.args):
            if len(node.args) > len(positional) and not any(p.kind == "*args" for p in params):
                self.problem(
                    node,
                    f"{shown} takes {len(positional)} positional arguments in 6.2, the source passes {len(node.args)}",
                )
            given.update({p.name: a for p, a in zip(positional, node.args, strict=False)})
        takes_any = any(p.kind == "**kwargs" for p in params)
        by_name = {p.name: p for p in params if p.kind in ("positional-or-keyword", "keyword-only")}
        for keyword in node.keywords:
            if keyword.arg is None:
                return  # **kwargs: the source's own mapping, not checked
            self.uses.keywords += 1
            if keyword.arg not in by_name and not takes_any:
                close = difflib.get_close_matches(keyword.arg, list(by_name), n=SUGGESTIONS)
                hint = (
                    f"did you mean {', '.join(close)}?" if close else "6.2's: " + ", ".join(list(by_name)[:LISTED_MAX])
                )
                self.problem(node, f"{shown} has no keyword {keyword.arg} in 6.2 ({hint})")
                continue
            given[keyword.arg] = keyword.value
        for param in params:
            if param.kind in ("*args", "**kwargs"):
                continue
            if not param.has_default and param.name not in given:
                self.problem(node, f"{shown} needs {param.name} in 6.2")
            if param.name in given:
                self._check_value(node, shown, param, given[param.name])
        self._check_contract_rules(node, callee, given)
        returns_none = isinstance(sig.returns, ast.Constant) and sig.returns.value is None
        if id(node) in self.statements and sig.returns is not None and not returns_none:
            said = f" ({sig.returns_doc})" if sig.returns_doc else ""
            self.problem(node, f"{shown} returns {ast.unparse(sig.returns)}{said} in 6.2; the source drops it")

    def _check_value(self, node: ast.Call, shown: str, param: Param, value: ast.expr) -> None:
        constant = self.constants.get(value.id) if isinstance(value, ast.Name) else None
        value_type = _literal_type(value) if constant is None else type(constant).__name__
        if value_type is not None and param.annotation is not None:
            annotation = param.annotation
            if not _fits(value_type, _annotation_heads(annotation)):
                taken = ast.unparse(annotation)
                self.problem(node, f"{shown}: {param.name}={ast.unparse(value)} is {value_type}, 6.2 takes {taken}")
        text = _pattern(value, self.constants)
        if param.choices and text is not None and "{}" not in text:
            self.uses.choices += 1
            if text not in param.choices:
                documented = ", ".join(f'"{c}"' for c in param.choices)
                self.problem(node, f'{shown}: {param.name}="{text}", 6.2 documents {documented}')

    def _check_contract_rules(self, node: ast.Call, callee: Symbol, given: Mapping[str, ast.expr]) -> None:
        """The contract's rules for this callee: an extension it enables exists; a config dict's keys exist."""
        assert self.symbols is not None
        param = self.enablers.get(callee.dotted, "")
        name = _pattern(given[param], self.constants) if param in given else None
        if name is not None:
            self.uses.enabled.append(name)
            ext = self.symbols.tree.extensions.get(name)
            if ext is None:
                self.problem(node, f"{callee.short}({name!r}): no extension {name} in the Isaac Sim 6.2 wheels")
            elif ext.deprecated:
                self.problem(node, f"{callee.short}({name!r}): {name} is deprecated in 6.2 ({ext.deprecated})")
        param, attribute = self.configs.get(callee.dotted, ("", ""))
        value = given.get(param)
        if not isinstance(value, ast.Dict):
            return
        default = self.symbols.member(callee, attribute)
        keys = _dict_keys(default.node.value) if default is not None and default is not UNKNOWN else set()
        for key in value.keys:
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                self.uses.keywords += 1
                if key.value not in keys:
                    close = difflib.get_close_matches(key.value, sorted(keys), n=SUGGESTIONS)
                    hint = f" (did you mean {', '.join(close)}?)" if close else ""
                    self.problem(node, f"{callee.short}({param}): key {key.value!r} is not in 6.2's {attribute}{hint}")


def _drops_first(callee: Symbol, via_instance: bool) -> bool:
    """Whether a call passes the first parameter itself (self, cls): a method through an instance, a classmethod."""
    if callee.kind != "function" or "." not in callee.name:
        return False
    decorators = {ast.unparse(d) for d in callee.node.decorator_list}
    if "staticmethod" in decorators:
        return False
    return via_instance or "classmethod" in decorators


def _dict_keys(node: ast.expr | None) -> set[str]:
    if not isinstance(node, ast.Dict):
        return set()
    return {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}


def read_uses(path: Path, symbols: Symbols, shown: str) -> Uses:
    """What the source at ``path`` uses of Isaac Sim, with the problems the wheels show."""
    uses = Uses(shown)
    _Reader(uses, symbols).read(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    return uses


# -- the corroboration corpus: the 6.2 wheels' own code --------------------------------------------------------------


@dataclass
class Corpus:
    """What the wheels' own Python code uses of Kit's API and of Kit's node types."""

    files: int = 0
    kit: set[str] = field(default_factory=set)  #: Kit chains and call shapes
    #: Kit node type -> attribute -> the types of the attributes it is wired to (empty when only set or read)
    node_attrs: dict[str, dict[str, set[str]]] = field(default_factory=lambda: defaultdict(dict))
    wirings: dict[str, int] = field(default_factory=lambda: defaultdict(int))  #: Kit node type -> wirings seen
    physx_schemas: set[str] = field(default_factory=set)  #: PhysxSchema class names the code uses


def read_corpus(tree: WheelTree, nodes: Mapping[str, NodeDef], contract: RunnerContract = CONTRACT) -> Corpus:
    """Read every extension's Python source in the wheels for Kit chains, Kit node wirings and PhysX schema names."""
    corpus = Corpus()
    kit_import = re.compile(rf"^\s*(?:import|from)\s+{re.escape(contract.kit_root)}\.", re.M)
    kit_node = re.compile(rf"[\"']{re.escape(contract.kit_root)}\.[\w.]+\.[A-Z]\w*[\"']")
    for path in tree.files():
        if not path.endswith(".py") or tree.extension_of(path) is None:
            continue
        text = tree.read(path)
        corpus.physx_schemas.update(PHYSX_SCHEMA_NAME.findall(text))
        if not kit_import.search(text):
            continue
        try:
            module = ast.parse(text, path)
        except SyntaxError:
            continue
        corpus.files += 1
        uses = Uses(path)
        _Reader(uses, None, contract).read(module)
        for chain in uses.kit:
            corpus.kit.update(_prefixes(chain))
        if kit_node.search(text):
            _read_wirings(module, nodes, contract, corpus)
    return corpus


def _prefixes(chain: str) -> Iterator[str]:
    """``a.b().c`` -> a, a.b, a.b(), a.b().c: a chain used whole is used in part."""
    depth = 0
    for i, c in enumerate(chain):
        if depth == 0 and c in ".(":
            yield chain[:i]
        depth += (c == "(") - (c == ")")
    yield chain


def _read_wirings(module: ast.Module, nodes: Mapping[str, NodeDef], contract: RunnerContract, corpus: Corpus) -> None:
    """How one file uses Kit's node types: (alias, node type) pairs, ``alias.inputs:x`` strings and the pairs of them
    it connects (which give each Kit attribute the type of the attribute at the other end)."""
    strings = [n.value for n in ast.walk(module) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    pairs = []
    for node in ast.walk(module):
        if isinstance(node, ast.Tuple) and len(node.elts) == 2:
            a, b = (e.value if isinstance(e, ast.Constant) else None for e in node.elts)
            if isinstance(a, str) and isinstance(b, str):
                pairs.append((a, b))
    types = {a: t for a, t in pairs if t in nodes or t.startswith(contract.kit_root + ".")}
    kit_aliases = {a for a, t in types.items() if t not in nodes}
    refs = {s: (m["alias"], m["attr"]) for s in strings if (m := ATTRIBUTE_REF.match(s)) and m["alias"] in types}
    for alias, attr in refs.values():
        if alias in kit_aliases:
            corpus.node_attrs[types[alias]].setdefault(attr, set())
    for a, b in pairs:
        if a not in refs or b not in refs:
            continue
        for (alias, attr), (other, other_attr) in ((refs[a], refs[b]), (refs[b], refs[a])):
            if alias in kit_aliases:
                partner = nodes.get(types[other])
                found = partner.attrs.get(other_attr) if partner else None
                corpus.node_attrs[types[alias]][attr].update([found.type] if found else [])
                corpus.wirings[types[alias]] += 1


# -- OmniGraph node definitions ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AttrDef:
    """One attribute of a node type: ``inputs:topicName``, its OGN type, its allowed tokens."""

    name: str
    type: str
    allowed: tuple[str, ...] = ()


@dataclass(frozen=True)
class NodeDef:
    """One OmniGraph node type as its definition declares it."""

    type: str
    extension: str
    source: str  #: the .ogn file, or the node documentation generated from the .ogn where that is not shipped
    attrs: Mapping[str, AttrDef]


def _ogn_type(spec: Any) -> str:
    return "|".join(spec) if isinstance(spec, list) else str(spec)


def _allowed(spec: Mapping[str, Any]) -> tuple[str, ...]:
    tokens = spec.get("allowedTokens", spec.get("metadata", {}).get("allowedTokens"))
    if isinstance(tokens, dict):
        return tuple(str(v) for v in tokens.values())
    if isinstance(tokens, list):
        return tuple(str(v) for v in tokens)
    return tuple(t.strip() for t in tokens.split(",")) if isinstance(tokens, str) else ()


def read_node_defs(tree: WheelTree) -> tuple[dict[str, NodeDef], dict[str, int]]:
    """Every node type in the wheels: from .ogn files, then from generated node docs for those not shipped as .ogn."""
    nodes: dict[str, NodeDef] = {}
    counts = {"ogn": 0, "docs": 0}
    for path in sorted(tree.files()):
        if not path.endswith(".ogn"):
            continue
        ext = tree.extension_of(path)
        try:
            definitions = json.loads(tree.read(path))
        except json.JSONDecodeError:
            continue
        for key, spec in definitions.items():
            if not isinstance(spec, dict) or key.startswith("$"):
                continue
            full = key if "." in key else f"{ext.name if ext else '?'}.{key}"
            attrs = {
                f"{section}:{name}": AttrDef(f"{section}:{name}", _ogn_type(a.get("type")), _allowed(a))
                for section in ("inputs", "outputs", "state")
                for name, a in spec.get(section, {}).items()
                if isinstance(a, dict)
            }
            if full not in nodes:
                counts["ogn"] += 1
            nodes.setdefault(full, NodeDef(full, ext.name if ext else "?", path, attrs))
    for path in sorted(tree.files()):
        if "/ogn/docs/" in path and path.endswith(".rst"):
            node = read_node_doc(path, tree.read(path))
            if node is not None and node.type not in nodes:
                nodes[node.type] = node
                counts["docs"] += 1
    return nodes, counts


def read_node_doc(path: str, text: str) -> NodeDef | None:
    """A node type from the documentation Kit generates from its .ogn: its unique ID, extension and attribute tables."""
    meta: dict[str, str] = {}
    attrs: dict[str, AttrDef] = {}
    last = None
    for line in text.splitlines():
        if match := RST_ATTRIBUTE.match(line):
            written = match["type"]  # a union is written as a Python list: ['string', 'token']
            last = AttrDef(match["attr"], _ogn_type(ast.literal_eval(written) if written.startswith("[") else written))
            attrs[last.name] = last
        elif (match := RST_ALLOWED.match(line)) and last is not None:
            attrs[last.name] = AttrDef(last.name, last.type, tuple(t.strip() for t in match["tokens"].split(",")))
        elif match := RST_META.match(line):
            meta[match["key"]] = match["value"]
    if "Unique ID" not in meta:
        return None
    return NodeDef(meta["Unique ID"], meta.get("Extension", "?"), path, attrs)


# -- the runner's OmniGraph ----------------------------------------------------------------------------------------


def load_runner(path: Path) -> ModuleType:
    """Import the runner from its path (its Isaac part imports Isaac only when it runs)."""
    name = f"_isaac_runner_{abs(hash(path.resolve()))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ContractError(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


SAMPLE_TEXT = "sample"
SAMPLE_SIZE = 64  # pixels: any positive image size
SAMPLE_FLOAT = 0.0


def sample_plan(runner: ModuleType, type_name: str = "ScenePlan") -> Any:
    """A plan with one of everything (one camera, one joint), built from the runner's dataclass fields."""

    def value(text: str, name: str) -> Any:
        text = text.replace(" ", "")
        if text == "str":
            return f"{SAMPLE_TEXT}_{name}"  # names become node aliases: an identifier
        if text == "int":
            return SAMPLE_SIZE
        if text == "float":
            return SAMPLE_FLOAT
        if text == "Path":
            return Path(SAMPLE_TEXT, name)
        if text.startswith("tuple[") and text.endswith(",...]"):
            return (value(text[len("tuple[") : -len(",...]")], name),)
        if text.startswith(("dict[", "Mapping[")):
            return {}
        cls = getattr(runner, text, None)
        if isinstance(cls, type) and is_dataclass(cls):
            return cls(**{f.name: value(str(f.type), f.name) for f in fields(cls)})
        raise ContractError(f"cannot make a sample {text} for {name} of the runner's {type_name}: extend sample_plan")

    return value(type_name, "plan")


@dataclass
class GraphCheck:
    """The runner's OmniGraph checked against the node definitions."""

    node_types: set[str] = field(default_factory=set)
    attributes: set[tuple[str, str]] = field(default_factory=set)
    values: int = 0
    connections: int = 0
    kit_types: set[str] = field(default_factory=set)
    unknown: set[str] = field(default_factory=set)  #: node types found nowhere (each a problem)
    problems: list[str] = field(default_factory=list)


def _fits_ogn(value: Any, ogn_type: str) -> bool:
    types = set(ogn_type.split("|"))
    if types & OGN_ANY:
        return True
    if isinstance(value, bool):
        return "bool" in types
    if isinstance(value, str):
        return bool(types & OGN_FROM_STR)
    if isinstance(value, int):
        return bool(types & OGN_FROM_INT)
    if isinstance(value, float):
        return bool(types & OGN_FROM_FLOAT)
    if isinstance(value, list | tuple):
        for t in types:
            base, bracket, size = t.partition("[")
            if bracket and (size == "]" or size.rstrip("]") == str(len(value))):
                return all(_fits_ogn(v, base) for v in value)
        return "target" in types and all(isinstance(v, str) for v in value)
    return False


def check_graph(edit: Any, nodes: Mapping[str, NodeDef], corpus: Corpus, kit_root: str) -> GraphCheck:
    """Every node type, attribute, connection and value of the runner's graph, against 6.2's definitions."""
    check = GraphCheck()
    aliases: dict[str, str] = {}
    for alias, node_type in edit.nodes:
        aliases[alias] = node_type
        check.node_types.add(node_type)
        if node_type in nodes:
            continue
        if node_type.startswith(kit_root + ".") and node_type in corpus.node_attrs:
            check.kit_types.add(node_type)
            continue
        close = difflib.get_close_matches(node_type, list(nodes), n=SUGGESTIONS)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        check.unknown.add(node_type)
        check.problems.append(f"OmniGraph: no node type {node_type} in the Isaac Sim 6.2 wheels{hint}")

    def attribute(ref: str, direction: str) -> tuple[str, AttrDef | None]:
        """``node type attribute`` for ``alias.inputs:x``, and its definition (None: missing, or not known)."""
        match = ATTRIBUTE_REF.match(ref)
        if match is None or match["alias"] not in aliases:
            check.problems.append(f"OmniGraph: {ref!r} names no node the runner creates (alias.inputs:name)")
            return ref, None
        node_type, name = aliases[match["alias"]], match["attr"]
        label = f"{node_type} {name}"
        check.attributes.add((node_type, name))
        if not name.startswith(direction + ":"):
            check.problems.append(f"OmniGraph: {node_type} {name} is wired as one of its {direction}")
        if node_type in nodes:
            found = nodes[node_type].attrs.get(name)
            if found is None:
                names = [a for a in nodes[node_type].attrs if a.startswith(name.split(":")[0] + ":")]
                close = difflib.get_close_matches(name, names, n=SUGGESTIONS)
                hint = (
                    f"did you mean {', '.join(close)}?" if close else "6.2's: " + ", ".join(sorted(names)[:LISTED_MAX])
                )
                check.problems.append(f"OmniGraph: {node_type} has no {name} in 6.2 ({hint})")
            return label, found
        seen = corpus.node_attrs.get(node_type)
        if seen is None:
            return label, None
        if name not in seen:
            check.problems.append(
                f"OmniGraph: {label}: Kit's own node (not on PyPI), and no 6.2 wheel code uses that attribute "
                f"(it uses {', '.join(sorted(seen))})"
            )
            return label, None
        wired = seen[name]  # the types of what 6.2's code wires it to: one, or it cannot be told
        return label, AttrDef(name, next(iter(wired))) if len(wired) == 1 else None

    for ref, value in edit.values:
        check.values += 1
        label, found = attribute(ref, "inputs")
        if found is None:
            continue
        if not _fits_ogn(value, found.type):
            check.problems.append(f"OmniGraph: {label} is {found.type} in 6.2, the runner sets {value!r}")
        elif found.allowed and value not in found.allowed:
            check.problems.append(f"OmniGraph: {label} = {value!r}: 6.2 allows {', '.join(found.allowed)}")
    for source, target in edit.connections:
        check.connections += 1
        (out_label, out), (in_label, into) = attribute(source, "outputs"), attribute(target, "inputs")
        if out is None or into is None:
            continue
        if not set(out.type.split("|")) & set(into.type.split("|")) | OGN_ANY & {out.type, into.type}:
            check.problems.append(
                f"OmniGraph: {out_label} ({out.type}) -> {in_label} ({into.type}): types differ in 6.2"
            )
    return check


# -- USD schemas -----------------------------------------------------------------------------------------------------


def read_schemas(tree: WheelTree) -> dict[str, set[str]]:
    """The API schemas whose definitions the wheels hold (generatedSchema.usda): name -> property templates."""
    from pxr import Sdf

    schemas: dict[str, set[str]] = {}
    for path in sorted(tree.files()):
        if not path.endswith("/generatedSchema.usda"):
            continue
        layer = Sdf.Layer.CreateAnonymous(".usda")
        if not layer.ImportFromString(tree.read(path)):
            continue
        for prim in layer.rootPrims:
            props = {p.name.replace("__INSTANCE_NAME__", "{}") for p in prim.properties}
            schemas.setdefault(prim.name, set()).update(props)
    return schemas


def check_schemas(
    uses: Uses, schemas: Mapping[str, set[str]], corpus: Corpus, contract: RunnerContract
) -> tuple[list[str], list[str]]:
    """Applied schema names and authored attribute names: problems, and the names the wheels cannot confirm."""
    problems, unconfirmed = [], []
    for pattern, line in uses.schemas:
        name = pattern.split(":", 1)[0]
        if "{}" in name or name in schemas:
            continue
        if name in corpus.physx_schemas:
            unconfirmed.append(f"schema {name} (6.2's code applies PhysxSchema.{name})")
            continue
        close = difflib.get_close_matches(name, sorted(set(schemas) | corpus.physx_schemas), n=SUGGESTIONS)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        problems.append(f"{uses.path}:{line}: applies schema {name!r}, which no 6.2 schema or code defines{hint}")
    namespaces = {p.split(":", 1)[0]: s for s, props in schemas.items() for p in props if ":" in p}
    templates = {p for props in schemas.values() for p in props}
    for pattern, line in uses.attributes:
        space = pattern.split(":", 1)[0]
        if ":" not in pattern or space in contract.own_namespaces:
            continue
        if space in namespaces:
            if pattern not in templates:
                known = sorted(p for p in templates if p.startswith(space + ":"))
                problems.append(
                    f"{uses.path}:{line}: attribute {pattern!r}: 6.2's {space}: attributes are {', '.join(known)}"
                )
        else:
            unconfirmed.append(f"attribute {pattern}")
    return problems, unconfirmed


# -- extensions loaded ---------------------------------------------------------------------------------------------


def default_experience(symbols: Symbols, contract: RunnerContract) -> str | None:
    """The experience SimulationApp loads when given none: the first its __init__ names that the wheels ship."""
    app = symbols.resolve_dotted(contract.simulation_app)
    init = symbols.member(app, "__init__") if app is not None else None
    if init is None or init is UNKNOWN:
        return None
    files = set(symbols.tree.files())
    named = [n for n in ast.walk(init.node) if isinstance(n, ast.JoinedStr | ast.Constant)]
    for node in sorted(named, key=lambda n: (n.lineno, n.col_offset)):
        name = _pattern(node)
        if name and name.endswith(".kit") and symbols.tree.APPS + name.rsplit("/", 1)[-1] in files:
            return name.rsplit("/", 1)[-1]
    return None


def closure(tree: WheelTree, names: Iterable[str]) -> set[str]:
    """Every extension the given experiences (.kit) or extensions load, as far as the wheels show their dependencies."""
    loaded: set[str] = set()
    todo = list(names)
    files = set(tree.files())
    while todo:
        name = todo.pop().removesuffix(".kit")
        if name in loaded:
            continue
        loaded.add(name)
        if f"{tree.APPS}{name}.kit" in files:
            deps = tomllib.loads(tree.read(f"{tree.APPS}{name}.kit")).get("dependencies", {})
            todo += [d for d, spec in deps.items() if not (spec or {}).get("optional", False)]
        elif name in tree.extensions:
            todo += tree.extensions[name].dependencies
    return loaded


# -- the whole check -----------------------------------------------------------------------------------------------


@dataclass
class Report:
    """What was checked (lines to print) and the problems (one line each)."""

    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class Isaac62:
    """The pinned wheels read once: node definitions, schemas and the corpus, for checking any number of runners."""

    def __init__(self, wheels: Sequence[Path], contract: RunnerContract = CONTRACT) -> None:
        self.contract = contract
        self.tree = WheelTree(wheels)
        self.symbols = Symbols(self.tree)
        self.nodes, self.node_counts = read_node_defs(self.tree)
        self.schemas = read_schemas(self.tree)
        self.corpus = read_corpus(self.tree, self.nodes, contract)
        self.experience = default_experience(self.symbols, contract)

    def check(self, runner: Path = RUNNER, others: Sequence[Path] = (BRIDGE_ADAPTER,)) -> Report:
        """Check the runner (and other sources that may use Isaac Sim's API) against the wheels."""
        report = Report(problems=self._stale_contract())
        shown = _shown(runner)
        uses = read_uses(runner, self.symbols, shown)
        report.problems += uses.problems
        extra = [read_uses(p, self.symbols, _shown(p)) for p in others]
        for other in extra:
            report.problems += other.problems
        kit_missing = {c for c in uses.kit if c not in self.corpus.kit}
        for chain in sorted(c for c in kit_missing if not kit_missing & set(_prefixes(c)) - {c}):
            report.problems.append(
                f"{shown}:{uses.kit[chain]}: {chain}: Kit's own API (not on PyPI), and no 6.2 wheel code uses it"
            )
        graph = self._graph(runner)
        report.problems += graph.problems
        for name, line in uses.node_types:
            if name not in graph.node_types and name not in self.nodes and name not in self.corpus.node_attrs:
                report.problems.append(
                    f"{shown}:{line}: {name!r} looks like a node type, and 6.2 has none of that name"
                )
        schema_problems, unconfirmed = check_schemas(uses, self.schemas, self.corpus, self.contract)
        report.problems += schema_problems
        report.problems += self._extensions(uses, graph, shown)
        self._describe(report, uses, extra, graph, unconfirmed)
        return report

    def _stale_contract(self) -> list[str]:
        """CONTRACT names functions and classes in 6.2; one it names that 6.2 lacks is a problem of its own."""
        named = [self.contract.simulation_app, *(f for f, _ in self.contract.extension_enablers)]
        named += [c for c, _, _ in self.contract.config_dicts]
        return [f"CONTRACT (scripts/isaac_contract.py) names {n}, which 6.2 lacks" for n in named if not self._has(n)]

    def _has(self, dotted: str) -> bool:
        found = self.symbols.resolve_dotted(dotted)
        return found is not None and found is not UNKNOWN and found.kind in ("class", "function")

    def _graph(self, runner: Path) -> GraphCheck:
        """The runner's graph_edit() on a sample plan (one camera), checked."""
        name = self.contract.graph_function
        try:
            module = load_runner(runner)
            build = getattr(module, name, None)
            if build is None:
                return GraphCheck(problems=[f"{_shown(runner)}: no {name}() to read the OmniGraph from"])
            plan = sample_plan(module)
            edit = build(plan, {cam.name: f"/World/Robot/{cam.mount_frame}/{cam.name}" for cam in plan.cameras})
        except Exception as exc:  # the runner's own error, whatever it is, is the one line to show
            return GraphCheck(problems=[f"{_shown(runner)}: {name}() on a sample plan: {type(exc).__name__}: {exc}"])
        return check_graph(edit, self.nodes, self.corpus, self.contract.kit_root)

    def _extensions(self, uses: Uses, graph: GraphCheck, shown: str) -> list[str]:
        if self.experience is None:
            return [f"{self.contract.simulation_app}: names no default experience the wheels ship"]
        at_start = closure(self.tree, [self.experience])
        after = closure(self.tree, [self.experience, *uses.enabled])
        problems = []
        for module in sorted(uses.modules.values(), key=lambda m: m.name):
            ext = module.extension
            if ext is not None and ext.name not in at_start:
                problems.append(f"{shown}: imports {module.name} of {ext.name}, which {self.experience} does not load")
        unloaded: dict[str, list[str]] = defaultdict(list)
        for node_type in sorted(graph.node_types - graph.unknown):
            owner = self.nodes[node_type].extension if node_type in self.nodes else node_type.rpartition(".")[0]
            if owner not in after:
                unloaded[owner].append(node_type.rpartition(".")[2])
        for owner, names in unloaded.items():
            problems.append(
                f"OmniGraph: {owner} (node types {', '.join(names)}) is loaded neither by {self.experience} nor by the "
                f"extensions the runner enables ({', '.join(uses.enabled) or 'none'})"
            )
        return problems

    def _describe(
        self, report: Report, uses: Uses, extra: Sequence[Uses], graph: GraphCheck, unconfirmed: list[str]
    ) -> None:
        corpus, counts = self.corpus, self.node_counts
        loaded = len(closure(self.tree, [self.experience])) if self.experience else 0
        kit_nodes = "".join(f"; {t} ({corpus.wirings[t]} wirings)" for t in sorted(graph.kit_types))
        report.lines += [
            f"Isaac Sim 6.2 wheels: {len(self.tree.wheels)} ({self.tree.size_mb:.0f} MB, sha256 verified): "
            f"{len(self.tree.extensions)} extensions, {len(self.nodes)} OmniGraph node types ({counts['ogn']} from "
            f".ogn files, {counts['docs']} from the node docs generated from .ogn files not shipped)",
            uses.path,
            f"  Python API: {len(uses.imports)} modules, {len(uses.names)} names, {uses.calls} calls "
            f"({uses.keywords} keywords and keys; {uses.choices} values against documented choices)",
            f"  extensions: {self.experience} loads {loaded} (as far as the wheels show); the runner enables "
            f"{', '.join(uses.enabled) or 'none'}",
            f"  OmniGraph: {len(graph.node_types)} node types, {len(graph.attributes)} attributes; "
            f"{graph.values} values (type, allowed tokens), {graph.connections} connections (types)",
            f"  USD schemas: {len(uses.schemas)} applied by name, {len(uses.attributes)} attributes authored by name",
            f"  Kit's own API (not on PyPI), corroborated by {corpus.files} files of 6.2's code: {len(uses.kit)} names "
            f"and call keys{kit_nodes}",
        ]
        if unconfirmed:
            report.lines.append("  unconfirmed (defined by Kit, not in the wheels): " + "; ".join(unconfirmed))
        report.lines += [f"{o.path}: no Isaac Sim API ({len(o.imports)} modules imported)" for o in extra]


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--wheels", type=Path, default=DEFAULT_CACHE, help=f"the wheel cache (default {DEFAULT_CACHE})")
    parser.add_argument("--download", action="store_true", help="fetch missing wheels with pip first")
    parser.add_argument("--runner", type=Path, default=RUNNER, help="the runner to check")
    args = parser.parse_args(argv)
    try:
        wheels = ensure_wheels(args.wheels, download=args.download)
    except RegistryUnreachable as exc:
        print(f"isaac-check: skipped: {exc}; the Isaac Sim 6.2 wheels are not cached in {args.wheels}")
        return 0
    except ContractError as exc:
        print(f"isaac-check: {exc}", file=sys.stderr)
        return 2
    report = Isaac62(wheels).check(args.runner)
    for line in report.lines:
        print(line)
    for problem in report.problems:
        print(f"isaac-check: {problem}", file=sys.stderr)
    if report.problems:
        return 1
    print("isaac-check: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
