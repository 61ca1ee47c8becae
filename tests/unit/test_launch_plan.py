"""The launch plan: which plan a test case gets, where it reads each launch, and that only it asks.

The plan is a decision on a test case's transport, mode and run; here on
stand-ins that have just what :meth:`LaunchPlan.of` and
:meth:`LaunchPlan.launches` read. The plans run for real in
``tests/integration/test_packing_local.py`` (packed job and members) and
``test_vetting_local.py`` (a packed job on each node of a Slurm allocation).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import pytest

from sentinel.rfm.launch_plan import LaunchPlan
from tests.conftest import ROOT


@dataclass
class _Test:
    """What the plan reads of a test case."""

    is_packed_job: bool = False
    in_packed_job: bool = False
    each_node: bool = False
    packed_job_name: str = "Pt2ptCheck_packed"
    stagedir: str = ""
    transport_name: str = "ob1-tcp"
    deps: dict = field(default_factory=dict)

    def getdep(self, name: str):
        return self.deps[name]


@dataclass
class _Output:
    text: str

    def evaluate(self) -> str:
        return self.text


@dataclass
class _Job:
    stagedir: str


def test_each_kind_of_test_case_gets_its_plan():
    assert LaunchPlan.of(_Test(), 0).describe == "alone"
    packed = LaunchPlan.of(_Test(is_packed_job=True), 0)
    assert packed.describe == "a packed job" and not packed.measures
    member = LaunchPlan.of(_Test(in_packed_job=True), 0)
    assert member.describe == "a member of Pt2ptCheck_packed" and member.measures
    assert LaunchPlan.of(_Test(in_packed_job=True, each_node=True), 0).describe == \
        "a member of Pt2ptCheck_packed on each node"
    assert LaunchPlan.of(_Test(is_packed_job=True, each_node=True), 0).describe == \
        "a packed job on each node"


def test_a_members_retry_runs_a_job_of_its_own():
    assert LaunchPlan.of(_Test(in_packed_job=True), 1).describe == "alone"


def test_launches_are_the_stage_directory_or_each_nodes_own_or_in_the_packed_job(tmp_path):
    job, own = tmp_path / "job", tmp_path / "own"
    for node in ("n1", "n2"):
        (job / "nodes" / node / "packed" / "ob1-tcp").mkdir(parents=True)
        (own / "nodes" / node).mkdir(parents=True)
    test = _Test(stagedir=str(own), deps={"Pt2ptCheck_packed": _Job(str(job))})
    test.stdout, test.stderr = _Output("rfm_job.out"), _Output("rfm_job.err")
    alone = LaunchPlan.of(test, 0).launches(test)
    assert [(h.where, h.out, h.node) for h in alone] == [(str(own), "rfm_job.out", "")]
    test.each_node = True
    mine = LaunchPlan.of(test, 0).launches(test)
    assert [(h.where, h.out, h.node) for h in mine] == [
        (str(own / "nodes" / n), "rfm_node.out", n) for n in ("n1", "n2")]
    test.in_packed_job = True
    theirs = LaunchPlan.of(test, 0).launches(test)
    assert [(h.where, h.out, h.node) for h in theirs] == [
        (str(job / "nodes" / n / "packed" / "ob1-tcp"), "rfm_packed.out", n)
        for n in ("n1", "n2")]


#: The modules that implement the launch plans: the only ones that may ask.
PLAN_MODULES = {"launch_plan.py", "packing.py", "each_node.py", "repetition.py"}

#: What asking whether a test case is packed or on each node looks like.
FLAGS = re.compile(r"\b(is_packed_job|in_packed_job|from_packed_job|pack_transports|"
                   r"each_node|per_transport|per_node|member_of)\b")


def _sources():
    for path in sorted([*(ROOT / "src" / "sentinel").rglob("*.py"),
                        *(ROOT / "checks").glob("*.py")]):
        if path.name not in PLAN_MODULES:
            yield path


@pytest.mark.parametrize("path", list(_sources()), ids=lambda p: str(p.relative_to(ROOT)))
def test_only_the_launch_plan_asks_whether_a_test_case_is_packed_or_on_each_node(path):
    # Attribute reads in code (not docstrings, not command-line option strings).
    tree = ast.parse(path.read_text())
    asked = [f"{path.name}:{node.lineno} .{node.attr}" for node in ast.walk(tree)
             if isinstance(node, ast.Attribute) and FLAGS.fullmatch(node.attr)]
    assert not asked, f"ask the launch plan instead: {asked}"


def test_every_check_holds_the_sanity_path_and_has_what_it_asks():
    from sentinel.rfm.sanity import Judged, SanityPath
    from tests.offline import check_classes

    asked = set(Judged.__annotations__)
    for name, cls in check_classes().items():
        assert isinstance(cls.sanity_path, SanityPath), name
        missing = sorted(n for n in asked if not hasattr(cls, n))
        assert not missing, f"{name} lacks {missing}, which its sanity path asks"
