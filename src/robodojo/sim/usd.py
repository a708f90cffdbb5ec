"""A scene description (robodojo.sim.description) as a USD stage, for Isaac Sim; written with ``usd-core`` (``pxr``).

The stage holds what the embedded world builds from the same description: the table and floor, every object as a
prim of primitive shapes (colours as UsdPreviewSurface materials, labels as textured quads on their top faces, rigid
bodies, colliders and friction as UsdPhysics), the cameras, the lights, and the robot as a payload to the USD its URDF
import makes. ``scripts/isaac_sim_robodojo.py`` imports that URDF (written beside the stage, without the table, which
the stage holds) and builds the ROS 2 bridge around the stage.

Conventions of the stage: z up, metres, kilograms; ``/World`` is the default prim. A camera prim looks along its -z
with +y up (the USD convention), with zero aperture offsets: the principal point is the image centre, as in the
world's calibration (pixel centres at integers: ``c = (size - 1) / 2``); its focal length over its horizontal aperture
is fx over the image width. Attributes the runner needs and USD has no schema for are custom ``robodojo:`` attributes.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace
from pathlib import Path

import cv2
import numpy as np

from robodojo import PACKAGE_ROOT
from robodojo.errors import RobodojoError
from robodojo.geometry import Matrix, matrix_from_quat, quat_from_matrix
from robodojo.robots import topic_names
from robodojo.robots.compose import TABLE_LINK
from robodojo.robots.config import load_robot_config
from robodojo.robots.meshes import urdf_with_resolved_meshes
from robodojo.sim.description import CameraDescription, LightDescription, SceneDescription, SceneObject, Shape
from robodojo.sim.labels import label_image
from robodojo.sim.settings import SimSettings

WORLD = "/World"
HORIZONTAL_APERTURE_MM = 20.955  # USD's default film back (35 mm academy); only focal length over aperture matters
CLIPPING_RANGE_M = (0.01, 100.0)
# MuJoCo's spot lights by default: a 45 deg cut-off. USD light intensities are in nits: these give a table lit about
# as bright as the embedded world's (renderers differ; tune on the Isaac side if needed).
SPOT_CONE_DEG = 45.0
SPOT_RADIUS_M = 0.05
SPOT_INTENSITY = 30000.0
DOME_INTENSITY = 1000.0
FLOOR_SIZE_M = 20.0
# The robot's visual meshes beside the stage at full detail (welded copies of the sources): Isaac renders on an RTX
# GPU, where the triangle count that software GL cannot afford (robodojo.robots.meshes) costs nothing.
ISAAC_MESH_FACE_FRACTION = 1.0
GRAVITY_M_S2 = 9.81
OPTICAL_TO_USD_CAMERA = np.diag([1.0, -1.0, -1.0])  # REP 103 optical (y down, z forward) to USD (y up, -z forward)


class UsdUnavailableError(RobodojoError):
    """usd-core (the pxr module) is not installed."""


@dataclass(frozen=True)
class UsdExport:
    """What :func:`write_usd_stage` wrote: the stage, the robot URDF for Isaac's importer, the label textures."""

    stage: Path
    robot_urdf: Path
    textures: tuple[Path, ...]


def _pxr():
    try:
        from pxr import Gf, Sdf, Usd, UsdGeom, UsdLux, UsdPhysics, UsdShade, Vt
    except ImportError:
        raise UsdUnavailableError(
            "USD export needs usd-core (the pxr module): pip install 'agent_bringup[usd]' (make setup installs it)"
        ) from None
    return Gf, Sdf, Usd, UsdGeom, UsdLux, UsdPhysics, UsdShade, Vt


def usd_camera_parameters(camera: CameraDescription) -> dict[str, float]:
    """Focal length and apertures [mm] of a USD camera with ``camera``'s intrinsics (square pixels, centred)."""
    K = camera.K
    focal = K[0, 0] * HORIZONTAL_APERTURE_MM / camera.width
    return {
        "focalLength": float(focal),
        "horizontalAperture": HORIZONTAL_APERTURE_MM,
        "verticalAperture": float(camera.height * focal / K[1, 1]),
    }


def write_usd_stage(scene: SceneDescription, path: Path, settings: SimSettings) -> UsdExport:
    """Write ``scene`` as a USD stage at ``path`` (.usda for text, .usd/.usdc binary), the robot's URDF for Isaac's
    importer (``<robot>.urdf``, table removed) and the label textures (``textures/``) beside it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = _StageWriter(scene, path, settings)
    writer.write()
    return UsdExport(stage=path, robot_urdf=writer.robot_urdf, textures=tuple(writer.textures))


class _StageWriter:
    def __init__(self, scene: SceneDescription, path: Path, settings: SimSettings) -> None:
        self.Gf, self.Sdf, self.Usd, self.UsdGeom, self.UsdLux, self.UsdPhysics, self.UsdShade, self.Vt = _pxr()
        self.scene, self.path, self.settings = scene, path, settings
        self.stage = self.Usd.Stage.CreateNew(
            str(path), load=self.Usd.Stage.LoadNone
        )  # the robot's payload comes later
        self.looks: dict[tuple, object] = {}
        self.physics_materials: dict[str, object] = {}
        self.textures: list[Path] = []
        self.robot_urdf = path.parent / f"{scene.robot.name}.urdf"

    def write(self) -> None:
        stage, scene = self.stage, self.scene
        self.UsdGeom.SetStageUpAxis(stage, self.UsdGeom.Tokens.z)
        self.UsdGeom.SetStageMetersPerUnit(stage, 1.0)
        self.UsdPhysics.SetStageKilogramsPerUnit(stage, 1.0)
        world = self.UsdGeom.Xform.Define(stage, WORLD)
        stage.SetDefaultPrim(world.GetPrim())
        stage.GetRootLayer().customLayerData = {
            "robodojo:task": scene.task,
            "robodojo:seed": scene.seed,
            "robodojo:variant": scene.variant,
            "robodojo:robot": scene.robot.name,
            "robodojo:clockTopic": topic_names.CLOCK,
        }
        physics = self.UsdPhysics.Scene.Define(stage, f"{WORLD}/PhysicsScene")
        physics.CreateGravityDirectionAttr(self.Gf.Vec3f(0.0, 0.0, -1.0))
        physics.CreateGravityMagnitudeAttr(GRAVITY_M_S2)
        self.UsdGeom.Scope.Define(stage, f"{WORLD}/Looks")
        self._floor()
        self._table()
        self.UsdGeom.Scope.Define(stage, f"{WORLD}/Objects")
        for obj in scene.objects:
            self._object(obj)
        self.UsdGeom.Scope.Define(stage, f"{WORLD}/Cameras")
        for cam in scene.cameras:
            self._camera(cam)
        self.UsdGeom.Scope.Define(stage, f"{WORLD}/Lights")
        for light in scene.lights:
            self._light(light)
        dome = self.UsdLux.DomeLight.Define(stage, f"{WORLD}/Lights/ambient")
        dome.CreateColorAttr(self.Gf.Vec3f(*_normalized(scene.ambient_rgb)))
        dome.CreateIntensityAttr(DOME_INTENSITY * max(scene.ambient_rgb))
        self._robot()
        stage.GetRootLayer().Save()

    # -- parts ------------------------------------------------------------------------------------------------
    def _floor(self) -> None:
        floor = self.UsdGeom.Plane.Define(self.stage, f"{WORLD}/Floor")
        floor.CreateAxisAttr("Z")
        floor.CreateWidthAttr(FLOOR_SIZE_M)
        floor.CreateLengthAttr(FLOOR_SIZE_M)
        self._look(floor, self.scene.floor_rgba)
        self.UsdPhysics.CollisionAPI.Apply(floor.GetPrim())

    def _table(self) -> None:
        t = self.scene.table
        xform = self.UsdGeom.Xform.Define(self.stage, f"{WORLD}/Table")
        self._pose(xform, (*t.center_xy_m, t.top_z_m), (1.0, 0.0, 0.0, 0.0))
        top, *legs = t.shapes
        # The top's wood grain is drawn as its mean colour, tinted as the embedded world tints it.
        r, g, b = (float(c) for c in np.asarray(top.rgba[:3]) * t.tint_rgb)
        tinted = replace(top, rgba=(r, g, b, top.rgba[3]))
        for shape in (tinted, *legs):
            self._shape(f"{xform.GetPath()}/{shape.name}", shape)
        room = self.UsdGeom.Scope.Define(self.stage, f"{WORLD}/Room")
        for wall in self.scene.walls:
            self._shape(f"{room.GetPath()}/{wall.name}", wall)

    def _object(self, obj: SceneObject) -> None:
        xform = self.UsdGeom.Xform.Define(self.stage, f"{WORLD}/Objects/{obj.name}")
        self._pose(xform, obj.pos_m, obj.quat_wxyz)
        prim = xform.GetPrim()
        prim.CreateAttribute("robodojo:kind", self.Sdf.ValueTypeNames.String).Set(obj.kind)
        if obj.movable:
            self.UsdPhysics.RigidBodyAPI.Apply(prim)
            self.UsdPhysics.MassAPI.Apply(prim).CreateMassAttr(obj.mass_kg)
        if obj.latch_force_n > 0:
            prim.CreateAttribute("robodojo:latchForce_n", self.Sdf.ValueTypeNames.Double).Set(obj.latch_force_n)
        if any(obj.velocity_m_s):
            # A launch velocity (given once the scene has settled) or a belt's surface velocity: the runner applies it.
            prim.CreateAttribute("robodojo:velocity_m_s", self.Sdf.ValueTypeNames.Double3).Set(
                self.Gf.Vec3d(*obj.velocity_m_s)
            )
        for shape in obj.shapes:
            self._shape(f"{xform.GetPath()}/{shape.name}", shape)

    def _shape(self, path: str, shape: Shape) -> None:
        G = self.UsdGeom
        if shape.kind == "box":
            gprim = G.Cube.Define(self.stage, path)
            gprim.CreateSizeAttr(1.0)
            scale = shape.size_m
        elif shape.kind == "cylinder":
            gprim = G.Cylinder.Define(self.stage, path)
            gprim.CreateRadiusAttr(shape.size_m[0])
            gprim.CreateHeightAttr(shape.size_m[1])
            gprim.CreateAxisAttr("Z")
            scale = None
        else:
            gprim = G.Sphere.Define(self.stage, path)
            gprim.CreateRadiusAttr(shape.size_m[0])
            scale = None
        self._pose(gprim, shape.pos_m, shape.quat_wxyz, scale)
        self._look(gprim, shape.rgba)
        prim = gprim.GetPrim()
        if shape.contact != "none":
            self.UsdPhysics.CollisionAPI.Apply(prim)
            self._bind_physics(prim, shape.contact)
        if shape.label is not None:
            self._label_quad(f"{path}_face", shape, shape.label)

    def _label_quad(self, path: str, shape: Shape, label: str) -> None:
        """The label image on the shape's top face: a quad a hair above it (image row 0 along +y, column 0 at -x,
        as robodojo.sim.labels maps it), tinted by the shape's colour."""
        Gf, Vt = self.Gf, self.Vt
        hx, hy, hz = shape.half_extents_m
        mesh = self.UsdGeom.Mesh.Define(self.stage, path)
        mesh.CreatePointsAttr(
            Vt.Vec3fArray([Gf.Vec3f(x, y, 0.0) for x, y in ((-hx, -hy), (hx, -hy), (hx, hy), (-hx, hy))])
        )
        mesh.CreateFaceVertexCountsAttr([4])
        mesh.CreateFaceVertexIndicesAttr([0, 1, 2, 3])
        mesh.CreateExtentAttr(Vt.Vec3fArray([Gf.Vec3f(-hx, -hy, 0.0), Gf.Vec3f(hx, hy, 0.0)]))
        st = self.UsdGeom.PrimvarsAPI(mesh).CreatePrimvar(
            "st", self.Sdf.ValueTypeNames.TexCoord2fArray, self.UsdGeom.Tokens.vertex
        )
        st.Set(Vt.Vec2fArray([Gf.Vec2f(0, 0), Gf.Vec2f(1, 0), Gf.Vec2f(1, 1), Gf.Vec2f(0, 1)]))
        top = np.asarray(shape.pos_m) + matrix_from_quat(shape.quat_wxyz) @ np.array([0.0, 0.0, hz + 1e-4])
        self._pose(mesh, tuple(top), shape.quat_wxyz)
        self.UsdShade.MaterialBindingAPI.Apply(mesh.GetPrim()).Bind(self._label_material(label, shape.rgba))

    def _camera(self, cam: CameraDescription) -> None:
        camera = self.UsdGeom.Camera.Define(self.stage, f"{WORLD}/Cameras/{cam.name}")
        for name, value in usd_camera_parameters(cam).items():
            camera.GetPrim().GetAttribute(name).Set(value)
        camera.CreateHorizontalApertureOffsetAttr(0.0)
        camera.CreateVerticalApertureOffsetAttr(0.0)
        camera.CreateClippingRangeAttr(self.Gf.Vec2f(*CLIPPING_RANGE_M))
        camera.CreateProjectionAttr("perspective")
        T = cam.pose.copy()
        T[:3, :3] = T[:3, :3] @ OPTICAL_TO_USD_CAMERA
        self._pose(camera, tuple(T[:3, 3]), tuple(quat_from_matrix(T[:3, :3])))
        prim, types = camera.GetPrim(), self.Sdf.ValueTypeNames
        prim.CreateAttribute("robodojo:width", types.Int).Set(cam.width)
        prim.CreateAttribute("robodojo:height", types.Int).Set(cam.height)
        # Where it is mounted, for the runner to attach it to the robot's link (the wrist cameras move with the arms).
        prim.CreateAttribute("robodojo:mountFrame", types.String).Set(cam.frame)
        # Isaac Sim's topics for this camera, stamped in this frame; camera_node republishes them under
        # /cameras/<camera>/ with the calibration file and the optical frame's pose, as for a real camera driver.
        prim.CreateAttribute("robodojo:imageTopic", types.String).Set(topic_names.isaac_camera_image(cam.name))
        prim.CreateAttribute("robodojo:cameraInfoTopic", types.String).Set(topic_names.isaac_camera_info(cam.name))
        prim.CreateAttribute("robodojo:frameId", types.String).Set(cam.frame)
        offset = cam.offset.copy()
        offset[:3, :3] = offset[:3, :3] @ OPTICAL_TO_USD_CAMERA
        prim.CreateAttribute("robodojo:mountOffset", types.Matrix4d).Set(self._matrix(offset))

    def _light(self, light: LightDescription) -> None:
        spot = self.UsdLux.SphereLight.Define(self.stage, f"{WORLD}/Lights/{light.name}")
        spot.CreateRadiusAttr(SPOT_RADIUS_M)
        spot.CreateColorAttr(self.Gf.Vec3f(*_normalized(light.diffuse_rgb)))
        spot.CreateIntensityAttr(SPOT_INTENSITY * max(light.diffuse_rgb))
        self.UsdLux.ShapingAPI.Apply(spot.GetPrim()).CreateShapingConeAngleAttr(SPOT_CONE_DEG)
        # A light shines along its -z: turn -z onto the light's direction.
        self._pose(spot, light.pos_m, tuple(quat_from_matrix(_frame_looking_along(light.dir))))

    def _robot(self) -> None:
        robot = self.scene.robot
        prim = self.UsdGeom.Xform.Define(self.stage, f"{WORLD}/Robot").GetPrim()
        # A payload, so the stage opens (and is checked) without the robot: scripts/isaac_sim_robodojo.py imports the
        # URDF into isaac_import/ and opens a layer that points this payload at the file the import wrote.
        prim.GetPayloads().AddPayload(f"./{robot.name}.usd")
        types = self.Sdf.ValueTypeNames
        prim.CreateAttribute("robodojo:urdf", types.Asset).Set(f"./{self.robot_urdf.name}")
        prim.CreateAttribute("robodojo:jointNames", types.StringArray).Set(list(robot.joint_positions_rad))
        prim.CreateAttribute("robodojo:jointPositions_rad", types.DoubleArray).Set(
            [float(q) for q in robot.joint_positions_rad.values()]
        )
        # The position servos of the embedded world (config/robots/<robot>.yaml, sim): stiffness [N m/rad or N/m] and
        # damping per joint, in jointNames order; mimic joints follow their leader (0: not driven).
        config = load_robot_config(robot.name)
        gains: dict[str, tuple[float, float]] = {}
        for arm in config.arms:
            gains.update(zip(arm.joints, zip(config.sim.joint_kp, config.sim.joint_kv, strict=True), strict=True))
            gains[arm.gripper_joint] = (config.sim.gripper_kp, config.sim.gripper_kv)
        prim.CreateAttribute("robodojo:driveStiffness", types.DoubleArray).Set(
            [gains.get(j, (0.0, 0.0))[0] for j in robot.joint_positions_rad]
        )
        prim.CreateAttribute("robodojo:driveDamping", types.DoubleArray).Set(
            [gains.get(j, (0.0, 0.0))[1] for j in robot.joint_positions_rad]
        )
        # Isaac Sim's joint states; isaac_bridge_node republishes them on /joint_states as a driver does.
        prim.CreateAttribute("robodojo:jointStatesTopic", types.String).Set(topic_names.ISAAC_JOINT_STATES)
        prim.CreateAttribute("robodojo:jointCommandTopic", types.String).Set(topic_names.ISAAC_JOINT_COMMAND)
        source = robot.urdf if robot.urdf.is_absolute() else PACKAGE_ROOT / robot.urdf
        # Mesh visuals (package://<python package>/... for the FR3) resolve only where that package is installed:
        # the ones the links are drawn with are copied beside the stage (meshes/) and referenced relative to the URDF,
        # so the folder opens on the Isaac machine as it is.
        text = urdf_with_resolved_meshes(
            source.read_text(), copy_to=self.robot_urdf.parent, fraction=ISAAC_MESH_FACE_FRACTION
        )
        self.robot_urdf.write_text(urdf_without_link(text, TABLE_LINK))

    # -- helpers ----------------------------------------------------------------------------------------------
    def _pose(self, xformable, pos, quat_wxyz, scale=None) -> None:
        Gf, op = self.Gf, self.UsdGeom.XformOp.PrecisionDouble
        xformable.AddTranslateOp(op).Set(Gf.Vec3d(*(float(v) for v in pos)))
        w, x, y, z = (float(v) for v in quat_wxyz)
        xformable.AddOrientOp(op).Set(Gf.Quatd(w, Gf.Vec3d(x, y, z)))
        if scale is not None:
            xformable.AddScaleOp(op).Set(Gf.Vec3d(*(float(v) for v in scale)))

    def _matrix(self, T: Matrix):
        return self.Gf.Matrix4d(*(float(v) for v in np.asarray(T).T.reshape(-1)))  # USD: row vectors

    def _look(self, gprim, rgba) -> None:
        """The colour as displayColor (any viewer) and a UsdPreviewSurface material (renderers)."""
        gprim.CreateDisplayColorAttr([self.Gf.Vec3f(*(float(c) for c in rgba[:3]))])
        gprim.CreateDisplayOpacityAttr([float(rgba[3])])
        key = tuple(round(float(c), 6) for c in rgba)
        if key not in self.looks:
            material = self.UsdShade.Material.Define(self.stage, f"{WORLD}/Looks/colour_{len(self.looks)}")
            shader = self._surface(material)
            shader.CreateInput("diffuseColor", self.Sdf.ValueTypeNames.Color3f).Set(self.Gf.Vec3f(*key[:3]))
            shader.CreateInput("opacity", self.Sdf.ValueTypeNames.Float).Set(key[3])
            self.looks[key] = material
        self.UsdShade.MaterialBindingAPI.Apply(gprim.GetPrim()).Bind(self.looks[key])

    def _label_material(self, label: str, rgba):
        key = ("label", label, *(round(float(c), 6) for c in rgba))
        if key in self.looks:
            return self.looks[key]
        texture = self.path.parent / "textures" / f"label_{label}.png"
        if texture not in self.textures:
            texture.parent.mkdir(parents=True, exist_ok=True)
            cv2.imwrite(str(texture), cv2.cvtColor(label_image(label), cv2.COLOR_RGB2BGR))
            self.textures.append(texture)
        Sdf, types = self.Sdf, self.Sdf.ValueTypeNames
        material = self.UsdShade.Material.Define(self.stage, f"{WORLD}/Looks/label_{len(self.looks)}")
        surface = self._surface(material)
        reader = self.UsdShade.Shader.Define(self.stage, f"{material.GetPath()}/st")
        reader.CreateIdAttr("UsdPrimvarReader_float2")
        reader.CreateInput("varname", types.Token).Set("st")
        image = self.UsdShade.Shader.Define(self.stage, f"{material.GetPath()}/image")
        image.CreateIdAttr("UsdUVTexture")
        image.CreateInput("file", types.Asset).Set(Sdf.AssetPath(f"./textures/{texture.name}"))
        image.CreateInput("st", types.Float2).ConnectToSource(reader.ConnectableAPI(), "result")
        image.CreateInput("scale", types.Float4).Set(self.Gf.Vec4f(*(float(c) for c in rgba)))  # the colour's tint
        image.CreateOutput("rgb", types.Float3)
        surface.CreateInput("diffuseColor", types.Color3f).ConnectToSource(image.ConnectableAPI(), "rgb")
        self.looks[key] = material
        return material

    def _surface(self, material):
        shader = self.UsdShade.Shader.Define(self.stage, f"{material.GetPath()}/surface")
        shader.CreateIdAttr("UsdPreviewSurface")
        shader.CreateInput("roughness", self.Sdf.ValueTypeNames.Float).Set(0.6)
        material.CreateSurfaceOutput().ConnectToSource(shader.ConnectableAPI(), "surface")
        return shader

    def _bind_physics(self, prim, contact: str) -> None:
        if contact not in self.physics_materials:
            friction = {
                "default": self.settings.object_friction[0],
                "rolling": self.settings.ball_friction[0],
                "frictionless": 0.0,
            }[contact]
            material = self.UsdShade.Material.Define(self.stage, f"{WORLD}/Looks/physics_{contact}")
            api = self.UsdPhysics.MaterialAPI.Apply(material.GetPrim())
            api.CreateStaticFrictionAttr(float(friction))
            api.CreateDynamicFrictionAttr(float(friction))
            api.CreateRestitutionAttr(0.0)
            self.physics_materials[contact] = material
        binding = self.UsdShade.MaterialBindingAPI.Apply(prim)
        binding.Bind(self.physics_materials[contact], self.UsdShade.Tokens.weakerThanDescendants, "physics")


def urdf_without_link(urdf_text: str, link: str) -> str:
    """The URDF with ``link`` and the joint that holds it removed (the stage holds the table itself)."""
    root = ET.fromstring(urdf_text)
    for elem in list(root):
        child = elem.find("child")
        holds_link = elem.tag == "joint" and child is not None and child.get("link") == link
        if holds_link or (elem.tag == "link" and elem.get("name") == link):
            root.remove(elem)
    return ET.tostring(root, encoding="unicode")


def _normalized(rgb) -> tuple[float, float, float]:
    peak = max(max(rgb), 1e-9)
    r, g, b = (float(c) / peak for c in rgb)
    return (r, g, b)


def _frame_looking_along(direction) -> Matrix:
    """A rotation whose -z axis points along ``direction``."""
    z = -np.asarray(direction, dtype=float)
    z /= np.linalg.norm(z)
    helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = np.cross(helper, z)
    x /= math.sqrt(float(x @ x))
    return np.column_stack([x, np.cross(z, x), z])
