"""P1: harness overhead per task on a virtual phone whose agent takes ≈ 0 s (goal ≤ 50 ms per task).

Side by side in one run: the whole `farm run` flow (discovery, health gate, resolution, probes,
bundle push, instrumentation with live parsing, pull, normalisation, reports) against the bare
`am instrument` of the same bundle through adb. The difference per task is the harness overhead.
"""

from __future__ import annotations

import shlex
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

GOAL_MS = 50.0


def main() -> None:
    import os

    from farm.android.instrument_executor import instrument_argv
    from farm.android.options import AgentOptions
    from farm.sim.launcher import free_port, kill_adb_server, start_phones
    from farm.sim.profile import default_profile
    from farm.sweep.dev_run import run, run_request

    repo = Path(__file__).resolve().parents[1]
    port = free_port()
    os.environ["ANDROID_ADB_SERVER_PORT"] = str(port)
    profile = default_profile()
    profile.agent.time_scale = 1e9  # simulated agent time ≈ 0
    farm = start_phones(1, profile=profile, adb_port=port)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            req = run_request(agent=AgentOptions(split="all", allow_irreversible=True), tasks_dir=repo / "tasks",
                             runs_dir=Path(tmp), run_id="bench-harness", show_progress=False,
                              batch=1000)  # one am instrument call, as the bare run below
            t0 = time.perf_counter()
            result = run(req)
            lane_s = time.perf_counter() - t0
            phone = result.phones[0]
            ran = [r for r in phone.records if r.source != "harness"]
            n = len(ran)
            from adbutils import AdbClient

            from farm.android.options import RunOptions
            from farm.config import SIM_PROFILE

            device = AdbClient(port=port).device(phone.serial)
            bundles = f"{SIM_PROFILE.resolved_files_dir()}/eval-tasks"
            # The batch's bundle is named after its device run: `<run>.<first unit>.<try>.json`.
            name = next(n for n in device.shell(f"ls {bundles}").split() if n.startswith("bench-harness."))
            bundle = f"{bundles}/{name}"
            opts = RunOptions(agent=AgentOptions(split="all", allow_irreversible=True), profile_name="sim",
                              profile=SIM_PROFILE)
            argv = instrument_argv(opts, "bench-bare", bundle)
            t0 = time.perf_counter()
            device.shell(" ".join(shlex.quote(a) for a in argv), timeout=600)
            bare_s = time.perf_counter() - t0
    finally:
        farm.stop()
        kill_adb_server(port)
    per_task = (lane_s - bare_s) / max(n, 1) * 1000
    print(f"tasks run on the phone:            {n} (of {len(phone.records)} selected)")
    print(f"farm run, whole flow:              {lane_s:6.2f} s  ({lane_s / max(n, 1) * 1000:6.1f} ms per task)")
    print(f"bare am instrument, same bundle:   {bare_s:6.2f} s  ({bare_s / max(n, 1) * 1000:6.1f} ms per task)")
    print(f"harness overhead per task:         {per_task:6.1f} ms   goal ≤ {GOAL_MS:.0f} ms  "
          f"{'OK' if per_task <= GOAL_MS else 'OVER'}")
    print(f"ratio farm run / bare instrument:  {lane_s / bare_s:6.2f}")


if __name__ == "__main__":
    main()
