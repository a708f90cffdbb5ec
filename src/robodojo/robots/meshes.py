"""Visual meshes of the robots' URDFs: where a mesh reference points, which visuals a link shows, and the cleaned
(welded, optionally decimated) copies that the embedded world renders and the USD export ships.

Mesh references (``<mesh filename="..."/>``, visuals only; collisions stay primitives):

* ``package://<python package>/<path inside it>``: resolved through ``importlib`` (the package's folder, found
  without importing it), e.g. ``package://franky_sim/assets/meshes/link1_vis.obj`` for the FR3 meshes that franky-sim
  (Apache-2.0, the project's ``hardware`` extra) ships. The files are read where the package is installed, never
  copied into this repository. ROS's own ``package://`` (an ament package's share folder) is not consulted: the
  launch file hands ROS a URDF with the references made absolute (:func:`urdf_with_resolved_meshes`).
* ``file:///abs/path.obj`` or ``/abs/path.obj``.

Which visuals a link shows: its mesh visuals when it has some and every one of them resolves (and loads); otherwise
its primitive visuals (box, cylinder, sphere), which are therefore the fallback look of a link that has meshes.
A missing package is logged once per process, never raised: the arm is then drawn with primitives as before.

Rendering cost: software GL (llvmpipe) draws every triangle, and the FR3's source meshes (240k triangles) make a
640x480 image about 2.9x as slow as its primitives; a tenth of the faces, about 1.35x (benchmarks/robot_meshes.py).
:func:`prepared_mesh` welds duplicate vertices and decimates a mesh to a fraction of its faces (quadric
simplification, ``fast-simplification``; vertex clustering where that stalls), caching the result as an OBJ in
the user's cache folder (``$XDG_CACHE_HOME/robodojo/meshes``, else ``~/.cache/robodojo/meshes``) under a key made
of the source's SHA-256, the fraction and :data:`PIPELINE_VERSION`, so a changed source or setting makes a new file.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import logging
import os
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np

from robodojo.errors import RobodojoError
from robodojo.robots.urdf import Geometry, Link

log = logging.getLogger(__name__)

PACKAGE_SCHEME = "package://"
#: Where the Python packages that the project's URDFs take meshes from come from, for the log line when one is absent.
PACKAGE_SOURCES = {"franky_sim": "franky-sim, in the hardware extra: pip install '.[hardware]'"}
FILE_SCHEME = "file://"
#: Bumped when the cleaning or decimation changes, so cached files from an older pipeline are not reused.
PIPELINE_VERSION = 2
#: Meshes with at most this many triangles are kept whole: decimating them saves nothing measurable and would
#: turn small parts (buttons, pads) into slivers.
MIN_DECIMATED_FACES = 200
#: Cell of the vertex clustering used where quadric decimation stalls [m]: about a pixel of a 640x480 camera at 1 m
#: (58 deg vertical field of view: 2.1 mm); the wrist camera sees only the hand and fingers, which are small meshes.
CLUSTER_GRID_M = 0.002
#: Vertices closer than this are welded into one (OBJ exports split vertices along normal seams) [m].
WELD_TOLERANCE_M = 1e-6


class MeshUnavailable(RobodojoError):
    """A mesh reference that cannot be used here (package not installed, file missing, unreadable, unsupported)."""


class PackageMissing(MeshUnavailable):
    """A Python package the meshes need is not installed (already logged once as a warning)."""


# -- references --------------------------------------------------------------------------------------------------
@functools.cache
def _package_folder(package: str) -> Path | None:
    """The folder of an installed Python package, without importing it; None (logged once) if it is absent."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        # A warning, so that it shows without any logging set up (Python's default level): once per process.
        log.warning(
            "visual meshes: Python package %r is not installed%s; the links that use its meshes are drawn with "
            "their primitive shapes",
            package,
            f" ({PACKAGE_SOURCES[package]})" if package in PACKAGE_SOURCES else "",
        )
        return None
    return Path(locations[0])


def resolve_mesh_uri(uri: str) -> Path:
    """The file a mesh reference points at. Raises MeshUnavailable saying why it cannot be used."""
    if uri.startswith(PACKAGE_SCHEME):
        package, _, rest = uri[len(PACKAGE_SCHEME) :].partition("/")
        if not package or not rest:
            raise MeshUnavailable(f"{uri!r}: expected package://<python package>/<path>")
        folder = _package_folder(package)
        if folder is None:
            raise PackageMissing(f"{uri!r}: Python package {package!r} is not installed")
        path = folder / rest
    elif uri.startswith(FILE_SCHEME):
        path = Path(unquote(urlparse(uri).path))
    else:
        path = Path(uri)
        if not path.is_absolute():
            raise MeshUnavailable(f"{uri!r}: use package://<python package>/<path>, file:// or an absolute path")
    if path.suffix.lower() != ".obj":
        raise MeshUnavailable(f"{uri!r}: only Wavefront OBJ meshes are read (got {path.suffix or 'no suffix'})")
    if not path.is_file():
        raise MeshUnavailable(f"{uri!r}: no file {path}")
    return path


def shown_visuals(link: Link) -> tuple[Geometry, ...]:
    """The visuals ``link`` is drawn with: its meshes if it has some and all resolve, else its primitives."""
    meshes = tuple(v for v in link.visuals if v.kind == "mesh")
    primitives = tuple(v for v in link.visuals if v.kind != "mesh")
    if not meshes:
        return primitives
    try:
        for mesh in meshes:
            resolve_mesh_uri(mesh.mesh_uri or "")
    except MeshUnavailable as exc:
        _log_fallback(link.name, str(exc))
        return primitives
    return meshes


@functools.cache
def _log_fallback(link: str, reason: str, level: int = logging.DEBUG) -> None:
    log.log(level, "link %r drawn with primitives: %s", link, reason)


# -- cleaning and decimation ---------------------------------------------------------------------------------------
def cache_folder() -> Path:
    """Where prepared meshes are kept: ``$XDG_CACHE_HOME/robodojo/meshes``, else ``~/.cache/robodojo/meshes``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "robodojo" / "meshes"


def read_obj(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (n, 3) [file units] and triangles (m, 3) (0-based; polygons fanned) of a Wavefront OBJ file."""
    verts: list[list[str]] = []
    faces: list[tuple[int, int, int]] = []
    with path.open(encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("v "):
                verts.append(line.split()[1:4])
            elif line.startswith("f "):
                # "f a b c", "f a/t b/t c/t", "f a//n ...": the vertex index is before the first slash; negative
                # indices count back from the vertices read so far.
                idx = [int(tok.split("/", 1)[0]) for tok in line.split()[1:]]
                idx = [i - 1 if i > 0 else len(verts) + i for i in idx]
                faces.extend((idx[0], idx[k], idx[k + 1]) for k in range(1, len(idx) - 1))
    if not verts or not faces:
        raise MeshUnavailable(f"{path}: no vertices or faces")
    return np.asarray(verts, dtype=float), np.asarray(faces, dtype=np.int64)


def weld(verts: np.ndarray, faces: np.ndarray, tolerance_m: float = WELD_TOLERANCE_M) -> tuple[np.ndarray, np.ndarray]:
    """Merge vertices closer than ``tolerance_m`` and drop the triangles that collapse, so the surface is connected
    (decimation needs that) and the renderer can smooth normals across former seams."""
    keys = np.round(verts / tolerance_m).astype(np.int64)
    _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    faces = inverse.reshape(-1)[faces]
    keep = (faces[:, 0] != faces[:, 1]) & (faces[:, 1] != faces[:, 2]) & (faces[:, 0] != faces[:, 2])
    return verts[first], faces[keep]


def decimate(verts: np.ndarray, faces: np.ndarray, fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """About ``fraction`` of the triangles; small meshes and fraction >= 1 unchanged.

    Quadric edge collapse (``fast-simplification``) first: it keeps the shape best. It stalls on meshes with many
    open borders or fine detail (the FR3 base's connector panel keeps 30 % of its faces at any target); those, if
    still above twice the target, are clustered on a :data:`CLUSTER_GRID_M` grid instead when that is smaller."""
    target = max(MIN_DECIMATED_FACES, round(len(faces) * fraction))
    if fraction >= 1.0 or target >= len(faces):
        return verts, faces
    v, f = _fast_simplification().simplify(
        verts.astype(np.float32), faces.astype(np.int32), target_reduction=1.0 - target / len(faces)
    )
    out = np.asarray(v, dtype=float), np.asarray(f, dtype=np.int64)
    if len(out[1]) > 2 * target:
        clustered = cluster_vertices(verts, faces, CLUSTER_GRID_M)
        if len(clustered[1]) < len(out[1]):
            return clustered
    return out


@functools.cache
def _fast_simplification_module() -> Any:
    try:
        import fast_simplification  # the hardware extra, imported on first use
    except ImportError:
        log.warning("fast-simplification is not installed (pip install '.[hardware]'): robot meshes are not drawn")
        return None
    return fast_simplification


def _fast_simplification() -> Any:
    """The decimation library; MeshUnavailable (logged once) if it is not installed, so arms keep primitives."""
    module = _fast_simplification_module()
    if module is None:
        raise PackageMissing("fast-simplification is not installed")
    return module


def cluster_vertices(verts: np.ndarray, faces: np.ndarray, grid_m: float) -> tuple[np.ndarray, np.ndarray]:
    """Vertex clustering: the vertices in each ``grid_m`` cell merged into their mean; collapsed and repeated
    triangles dropped."""
    keys = np.floor(verts / grid_m).astype(np.int64)
    _, inverse, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    merged = np.zeros((len(counts), 3))
    np.add.at(merged, inverse, verts)
    merged /= counts[:, None]
    f = inverse[faces]
    f = f[(f[:, 0] != f[:, 1]) & (f[:, 1] != f[:, 2]) & (f[:, 0] != f[:, 2])]
    _, first = np.unique(np.sort(f, axis=1), axis=0, return_index=True)
    return merged, f[np.sort(first)]


def write_obj(path: Path, verts: np.ndarray, faces: np.ndarray, header: str) -> None:
    """Write vertices and triangles as OBJ (no normals or materials: the reader computes normals), atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"# {line}" for line in header.splitlines()]
    lines += [f"v {x:.7g} {y:.7g} {z:.7g}" for x, y, z in verts]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in faces]
    # Several processes (test workers, campaign workers) may prepare the same mesh: write aside, then rename.
    with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False, encoding="utf-8") as f:
        try:
            f.write("\n".join(lines) + "\n")
        except OSError:
            os.unlink(f.name)
            raise
    os.replace(f.name, path)


@functools.cache
def _source_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def prepared_mesh(source: Path, fraction: float) -> Path:
    """A welded copy of the OBJ ``source`` with about ``fraction`` (0 < fraction <= 1) of its triangles, from the
    cache or made now (a second or two per large mesh, once). Raises MeshUnavailable if it cannot be made."""
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"mesh face fraction must be in (0, 1], got {fraction}")
    try:
        key = hashlib.sha256(f"{_source_digest(source)} {fraction!r} {PIPELINE_VERSION}".encode()).hexdigest()[:16]
        target = cache_folder() / f"{source.stem}-{key}.obj"
        if target.is_file():
            return target
        verts, faces = weld(*read_obj(source))
        verts, faces = decimate(verts, faces, fraction)
        header = f"{source.name}: welded, {len(faces)} triangles ({fraction:g} of the faces asked) by robodojo"
        write_obj(target, verts, faces, header)
    except (OSError, ValueError) as exc:
        raise MeshUnavailable(f"{source}: cannot prepare a render copy: {exc}") from exc
    log.info("prepared %s: %d triangles -> %s", source.name, len(faces), target)
    return target


def prepared_visuals(link: Link, fraction: float) -> tuple[tuple[Geometry, Path | None], ...]:
    """The visuals ``link`` is drawn with (:func:`shown_visuals`), each with its prepared mesh file (None for a
    primitive). If a mesh cannot be prepared, the link falls back to its primitives, logged once."""
    shown = shown_visuals(link)
    try:
        return tuple(
            (g, prepared_mesh(resolve_mesh_uri(g.mesh_uri or ""), fraction) if g.kind == "mesh" else None)
            for g in shown
        )
    except MeshUnavailable as exc:
        # A missing package was logged once already; anything else (an unreadable mesh, a full disk) is unexpected.
        _log_fallback(link.name, str(exc), logging.DEBUG if isinstance(exc, PackageMissing) else logging.WARNING)
        return tuple((g, None) for g in link.visuals if g.kind != "mesh")


# -- URDF text for other readers (ROS, Isaac) ----------------------------------------------------------------------
def urdf_with_resolved_meshes(urdf_text: str, *, copy_to: Path | None = None, fraction: float = 1.0) -> str:
    """The URDF with each link's visuals reduced to the ones it is drawn with (:func:`shown_visuals`' rule), for
    readers that cannot resolve ``package://<python package>`` (ROS's resource retriever, Isaac's URDF importer).

    Mesh filenames become absolute ``file://`` paths of the prepared copies (welded OBJ, ``fraction`` of the faces),
    or, with ``copy_to``, the prepared files are copied into that folder and referenced relative to it (the folder
    the URDF is written to, for a stage that must open on another machine)."""
    root = ET.fromstring(urdf_text)
    for link_elem in root.findall("link"):
        visuals = link_elem.findall("visual")
        mesh_elems = [v for v in visuals if _mesh_of(v) is not None]
        if not mesh_elems:
            continue
        uris = [m.get("filename", "") for m in map(_mesh_of, mesh_elems) if m is not None]
        try:
            files = [prepared_mesh(resolve_mesh_uri(uri), fraction) for uri in uris]
        except MeshUnavailable as exc:
            _log_fallback(link_elem.get("name", ""), str(exc))
            for v in mesh_elems:
                link_elem.remove(v)
            continue
        for v in visuals:
            if v not in mesh_elems:
                link_elem.remove(v)
        for v, path in zip(mesh_elems, files, strict=True):
            mesh = _mesh_of(v)
            assert mesh is not None
            if copy_to is None:
                mesh.set("filename", path.as_uri())
            else:
                dest = copy_to / "meshes" / path.name
                if not dest.is_file():
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    dest.write_bytes(path.read_bytes())
                mesh.set("filename", f"meshes/{path.name}")
    return ET.tostring(root, encoding="unicode")


def _mesh_of(visual: ET.Element) -> ET.Element | None:
    geometry = visual.find("geometry")
    return geometry.find("mesh") if geometry is not None else None
