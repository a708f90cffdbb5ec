"""The `robodojo` command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from robodojo.errors import RobodojoError


def _cmd_demo(args: argparse.Namespace) -> int:
    from robodojo.demo import run_demo

    episodes = run_demo(Path(args.out), seed=args.seed)
    return 0 if all(e.success for e in episodes) else 1


def _cmd_tasks(args: argparse.Namespace) -> int:
    from robodojo.sim.tasks import available_tasks, get_task

    for name in available_tasks(args.robot):
        task = get_task(name)
        print(f"{name:16s} robot={task.robot:12s} step_limit={task.step_limit:5d}  {task.instruction_template}")
    return 0


def _cmd_robots(args: argparse.Namespace) -> int:
    from robodojo.robots.config import available_robots, load_robot_config

    for name in available_robots():
        robot = load_robot_config(name)
        print(
            f"{name:12s} arms={','.join(robot.arm_names):11s} "
            f"cameras={','.join(robot.camera_names):28s} {robot.description}"
        )
    return 0


def _cmd_render(args: argparse.Namespace) -> int:
    import cv2

    from robodojo.sim.tasks import get_task
    from robodojo.sim.world import EmbeddedWorld

    world = EmbeddedWorld(get_task(args.task).robot)
    obs = world.reset(args.task, seed=args.seed, variant=args.variant)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(world.instruction)
    for name, frame in obs.cameras.items():
        path = out / f"{args.task}_{args.variant}_seed{args.seed}_{name}.png"
        cv2.imwrite(str(path), cv2.cvtColor(frame.rgb, cv2.COLOR_RGB2BGR))
        print(f"  {path}")
    world.close()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="robodojo", description="LLM agents on simulated and real dual-arm robots")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run short scripted episodes in the embedded world and write images")
    demo.add_argument("--out", default="out/demo", help="output folder (default: out/demo)")
    demo.add_argument("--seed", type=int, default=0)
    demo.set_defaults(func=_cmd_demo)
    tasks = sub.add_parser("tasks", help="list the embedded tasks")
    tasks.add_argument("--robot", default=None, help="only tasks for this robot")
    tasks.set_defaults(func=_cmd_tasks)
    sub.add_parser("robots", help="list the robot configurations").set_defaults(func=_cmd_robots)
    render = sub.add_parser("render", help="render every camera of a task layout to PNG files")
    render.add_argument("--task", required=True)
    render.add_argument("--seed", type=int, default=0)
    render.add_argument("--variant", default="standard", choices=("standard", "cluttered"))
    render.add_argument("--out", default="out/render")
    render.set_defaults(func=_cmd_render)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except RobodojoError as exc:
        print(f"robodojo: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
