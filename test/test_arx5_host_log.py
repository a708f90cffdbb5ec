"""The SDK host's log reader: it turns the SDK's log lines into warnings, errors and the emergency flag, and keeps
draining the host's output whatever the callback does (an undrained pipe would block the SDK's own thread)."""

from __future__ import annotations

import io

from robodojo.hardware.arx5_host import SdkHost

LINES = (
    b"[05:23:18 X5_can0 info] Clearing motor controller states...\n"
    b"[05:23:18 X5_can0 warning] Over current detected once on joint 1\n"
    b"[05:23:19 X5_can0 error] Emergency state entered. Please restart the program.\n"
)


def test_the_log_reader_outlives_a_callback_that_raises(capsys):
    logged: list[tuple[str, str]] = []

    def on_log(level: str, message: str) -> None:
        logged.append((level, message))
        if level == "warning":  # what rclpy did: "Logger severity cannot be changed between calls."
            raise ValueError("the callback broke")

    host = SdkHost("can0", on_log=on_log)
    host._read_log(io.BytesIO(LINES))  # returns at the end of the stream: nothing stopped it on the way
    assert [level for level, _ in logged] == ["warning", "error"]  # info is not passed on
    assert host.emergency.startswith("Emergency state entered")
    out = capsys.readouterr().out
    assert "[arx5 can0] [05:23:18 X5_can0 info] Clearing motor controller states..." in out
    assert "the SDK log callback raised ValueError: the callback broke" in out
