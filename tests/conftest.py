"""Shared test configuration: quiet TensorFlow, deterministic hypothesis profile, and
throwaway plugin distributions for the plugin-loading tests."""

from __future__ import annotations

import importlib
import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# gcsfs reads this once, when it is first imported: left on, its experimental bucket-type
# probe (a gRPC call the GCS emulator does not serve) waits a minute per call before it
# falls back, which made the emulator's tests hang whenever a test imported gcsfs before
# the gcs_server fixture ran (the remote benchmark's smoke test does). It is turned off
# here, before any test module can import gcsfs.
os.environ["GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT"] = "false"

# pytest put this folder on sys.path to import this conftest ("prepend" import mode). Its
# sub-folders recordkit/ and recordkit_codecs/ mirror the source packages' names, so in a
# process that a test spawns (Grain's workers, a "spawn" multiprocessing pool), which
# inherits sys.path, they would shadow the installed packages as namespace packages
# ("No module named 'recordkit.read._grain'"). Nothing is imported from here by bare name,
# and no test module sits directly in this folder: pytest would put it back on sys.path.
_TESTS = str(Path(__file__).resolve().parent)
sys.path[:] = [entry for entry in sys.path if entry != _TESTS]

from hypothesis import HealthCheck, settings  # noqa: E402

# The same examples on every run (derandomize), so `make test` and CI pass or fail
# alike on a given commit; RK_HYPOTHESIS_EXPLORE=1 draws new examples each run, the way
# to look for new failures (each found one then belongs in the test as an @example).
settings.register_profile(
    "recordkit",
    deadline=None,
    max_examples=30,
    derandomize=os.environ.get("RK_HYPOTHESIS_EXPLORE") != "1",
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile("recordkit")


# -- throwaway plugin distributions ------------------------------------------------------


class PluginDistFactory:
    """Builds real, installed-looking distributions (a ``*.dist-info`` folder with
    METADATA and entry_points.txt, plus their modules) in one folder on ``sys.path``, so
    plugin loading is tested through real entry points rather than mocks."""

    def __init__(self, site: Path) -> None:
        self.site = site
        self.modules: list[str] = []

    def __call__(
        self,
        dist: str,
        modules: dict[str, str],
        entry_points: dict[str, str] | None = None,
        version: str = "1.0",
    ) -> Path:
        """Create distribution ``dist`` holding ``modules`` (name to source); its
        ``recordkit`` entry points default to one per module, named like it."""
        for name, source in modules.items():
            (self.site / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
            self.modules.append(name)
        info = self.site / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n", encoding="utf-8"
        )
        eps = entry_points if entry_points is not None else {name: name for name in modules}
        lines = "".join(f"{name} = {target}\n" for name, target in eps.items())
        (info / "entry_points.txt").write_text(f"[recordkit]\n{lines}", encoding="utf-8")
        importlib.invalidate_caches()
        return info


@pytest.fixture
def plugin_dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PluginDistFactory]:
    """A factory of throwaway plugin distributions, visible to importlib.metadata for
    the test only; recordkit's default plugins are reloaded before and after."""
    from recordkit.codec._plugins import (  # private: resets the process-wide registry; no public reset
        reset_default_registry,
    )

    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    factory = PluginDistFactory(site)
    reset_default_registry()
    yield factory
    for name in factory.modules:
        sys.modules.pop(name, None)
    monkeypatch.undo()
    importlib.invalidate_caches()
    reset_default_registry()


# -- the fault-injection suite's summary (tests/faults/conftest.py counts the cases) ------


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """How many cases each fault family tried: summed over the teardown reports, which
    carry the counts the ``fault_cases`` fixture recorded (with pytest-xdist too)."""
    import collections

    totals: collections.Counter[str] = collections.Counter()
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) != "teardown":
                continue
            for name, value in getattr(report, "user_properties", []):
                if name == "fault_cases":
                    family, count = value
                    totals[family] += count
    if not totals:
        return
    terminalreporter.section("fault injection: cases tried per family")
    for family, count in sorted(totals.items()):
        terminalreporter.write_line(f"{family:<44} {count:>6}")
    terminalreporter.write_line(f"{'total':<44} {sum(totals.values()):>6}")


# -- local object-store servers (moto S3, GCS emulator) for the remote-storage tests ------

from _object_stores import bucket, gcs_bucket, gcs_server, s3_bucket, s3_server, s3_server_gets  # noqa: E402, F401


@pytest.fixture(autouse=True)
def own_cache_folder(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test its own recordkit cache folder (``RECORDKIT_CACHE``, inherited by the
    processes it starts): no test reads a shard table another test cached, and none
    writes into the user's cache."""
    monkeypatch.setenv("RECORDKIT_CACHE", str(tmp_path_factory.mktemp("recordkit-cache")))


@pytest.fixture(autouse=True)
def no_tensorflow_global_seed_left_behind() -> Iterator[None]:
    """Clear TensorFlow's global seed after a test that set one (Keras'
    ``set_random_seed``, ``tf.random.set_seed``): tf.data combines it with every
    ``shuffle(seed=...)``, so a seed left set changed the shuffles that later tests and
    the docs pages print. Only when TensorFlow is already imported (no import cost)."""
    yield
    tf = sys.modules.get("tensorflow")
    if tf is not None and hasattr(tf, "random"):
        tf.random.set_seed(None)
