"""The Spack package builds every benchmark a check runs (no Spack needed).

The checks name the suite's benchmarks they build (their ``BenchBuild``
fixtures' ``bench``); ``src/bench/Makefile`` has a target for each; the
``sentinel-bench`` package's ``bench`` variant must offer each, and the
Debian Spack environment must list its spec, or a ``+spack`` environment
cannot build the check at all.
"""

from __future__ import annotations

import ast
import re

import yaml

from sentinel.rfm.build import BenchBuild
from tests.conftest import ROOT
from tests.offline import check_classes

PACKAGE = ROOT / "spack-env" / "repo" / "packages" / "sentinel-bench" / "package.py"


def variant_values(path, name: str) -> set[str]:
    """The ``values`` of the package's variant ``name``, read from its source."""
    for node in ast.walk(ast.parse(path.read_text())):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "variant"
                and node.args and ast.literal_eval(node.args[0]) == name):
            return set(next(ast.literal_eval(k.value) for k in node.keywords
                            if k.arg == "values"))
    raise AssertionError(f"{path}: no variant {name!r}")


def make_targets() -> set[str]:
    """The benchmarks of src/bench/Makefile (its BENCHES)."""
    text = (ROOT / "src" / "bench" / "Makefile").read_text()
    return set(re.search(r"^BENCHES := (.*)$", text, re.MULTILINE).group(1).split())


def built_by_checks() -> dict[str, set[str]]:
    """Each benchmark the checks build through a BenchBuild fixture, and which checks."""
    out: dict[str, set[str]] = {}
    for cls in check_classes().values():
        for fixture in cls._rfm_fixture_space.fixtures.values():
            if issubclass(fixture.cls, BenchBuild):
                out.setdefault(fixture.variables["bench"], set()).add(cls.__name__)
    return out


def test_every_benchmark_a_check_builds_is_a_make_target_and_a_package_variant():
    built = built_by_checks()
    assert {"matching", "pt2pt", "jacobi", "hybrid", "ring", "fabric", "affinity"} <= set(built)
    assert set(built) <= make_targets(), set(built) - make_targets()
    missing = {bench: sorted(checks) for bench, checks in built.items()
               if bench not in variant_values(PACKAGE, "bench")}
    assert not missing, f"the sentinel-bench package cannot build {missing}"


def test_the_package_offers_exactly_the_make_targets():
    assert variant_values(PACKAGE, "bench") == make_targets()


def test_the_debian_spack_environment_lists_every_benchmark():
    env = yaml.safe_load((ROOT / "spack-env" / "debian" / "spack.yaml").read_text())["spack"]
    benches = next(d["benches"] for d in env["definitions"] if "benches" in d)
    listed = {m.group(1) for s in benches if (m := re.match(r"sentinel-bench bench=(\w+)$", s))}
    assert listed == make_targets()


def test_a_package_missing_a_benchmark_is_caught(tmp_path):
    broken = tmp_path / "package.py"
    broken.write_text(PACKAGE.read_text().replace('"ring", ', ""))
    assert "ring" not in variant_values(broken, "bench")
    assert "ring" in built_by_checks()
