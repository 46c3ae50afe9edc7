"""Runs the harness's own orchestrator (`bench.py run ...`) without Docker.

hardbyte/postgresql-job-queue-benchmarking drives Postgres with `docker compose` and starts most adapters
with `docker run`. This wrapper keeps every part of the harness (phases, pacer, metrics daemon, wait
events, summary, plots) and replaces only those two things, before handing the command line to the
harness's `main`:

- Postgres: a private PostgreSQL started by `run-native pg-start` on the harness's port (15555, user
  bench) with the harness's postgres.conf; "fresh PG per system" (`compose down -v`) is `pg-destroy`
  then `pg-start`, the chaos phases' stop/start are `pg-stop`/`pg-start`.
- Adapters: `pgjobs` (ours, a Java process built from this repository) and `pgboss` run natively
  (`node main.js` in the harness's pgboss-bench, modules installed by run-native).

Environment (set by run-native): PGJOBS_HARNESS_DIR, PGJOBS_RUN_NATIVE, PGJOBS_ADAPTER_DIR,
PGJOBS_ADAPTER_CMD, PGJOBS_VERSION.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HARNESS_DIR = Path(os.environ["PGJOBS_HARNESS_DIR"])
sys.path.insert(0, str(HARNESS_DIR))

from bench_harness import adapters, orchestrator, versions  # noqa: E402
from bench_harness.adapters import AdapterEntry, LaunchSpec, _base_env  # noqa: E402

RUN_NATIVE = os.environ["PGJOBS_RUN_NATIVE"]


def _pg(command: str) -> None:
    subprocess.run([RUN_NATIVE, command], check=True)


def _start(_image: str) -> None:
    _pg("pg-start")


def _destroy(_image: str) -> None:
    _pg("pg-destroy")


def _stop(_image: str) -> None:
    _pg("pg-stop")


def _restart(_image: str) -> None:
    _pg("pg-stop")
    _pg("pg-start")


# The orchestrator looks these names up at call time, so replacing them here is enough.
orchestrator.start_postgres = _start
orchestrator.stop_postgres = _destroy
orchestrator._compose_stop_postgres = _stop
orchestrator._compose_start_postgres = _start
orchestrator._restart_postgres = _restart


def _no_build(_skip: bool) -> None:
    """run-native has built the adapters before starting the harness."""


def _launch_pgjobs(manifest, overrides):
    env = _base_env(manifest, overrides)
    # The adapter's own settings (PGJOBS_ENQUEUE_RETRY, ...), which the harness's allowlist does not know.
    env.update({k: v for k, v in os.environ.items() if k.startswith("PGJOBS_") and k not in env})
    return LaunchSpec(argv=[os.environ["PGJOBS_ADAPTER_CMD"]], env=env)


def _launch_pgboss(manifest, overrides):
    return LaunchSpec(
        argv=["node", "main.js"],
        env=_base_env(manifest, overrides),
        cwd=str(HARNESS_DIR / "pgboss-bench"),
    )


adapters.ADAPTERS["pgjobs"] = AdapterEntry(
    bench_dir=Path(os.environ["PGJOBS_ADAPTER_DIR"]), builder=_no_build, launcher=_launch_pgjobs
)
adapters.ADAPTERS["pgboss"] = AdapterEntry(
    bench_dir=HARNESS_DIR / "pgboss-bench", builder=_no_build, launcher=_launch_pgboss
)
versions._CAPTURE["pgjobs"] = lambda: {
    "source": "pgjobs-bench/harness (run-native)",
    "library": "pgjobs",
    "pinned_version": os.environ.get("PGJOBS_VERSION"),
}

if __name__ == "__main__":
    raise SystemExit(orchestrator.main(sys.argv[1:]))
