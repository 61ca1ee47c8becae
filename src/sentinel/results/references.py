"""Validation of reference files ``config/references/<system>.yaml``.

A reference file holds, per check class, ReFrame's ``$ref`` format indexed by
``[$partition, $environ, transport_name, mapping]``, then performance
variable -> ``[value, lower, upper, unit]``. Every key must name something
that exists, so that nothing silently falls back to another entry, and every
entry must be able to fail.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

import yaml

from sentinel.analysis.variables import HIGHER, LOWER, CheckSpec, all_specs
from sentinel.mpi.mappings import MAPPINGS


@dataclass(frozen=True)
class SystemInfo:
    """What the configuration says about one system."""

    name: str
    #: partition full name -> environment names.
    partitions: Mapping[str, list[str]]
    #: environment name -> its features (includes the transports it offers).
    env_features: Mapping[str, set[str]]


def systems_from_config(site_configuration: dict) -> dict[str, SystemInfo]:
    """Index a ReFrame ``site_configuration`` dict by system name."""
    out = {}
    for sysconf in site_configuration["systems"]:
        name = sysconf["name"]
        envs = {e["name"]: set(e.get("features", []))
                for e in site_configuration["environments"]
                if name in e.get("target_systems", ["*"]) or "*" in e.get("target_systems", ["*"])}
        parts = {f"{name}:{p['name']}": list(p["environs"]) for p in sysconf["partitions"]}
        out[name] = SystemInfo(name, parts, envs)
    return out


def _number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _closed(better: str, lower: object, upper: object) -> tuple[object, ...]:
    """The bounds that must be numbers: the worse side's (both without a direction)."""
    return {HIGHER: (lower,), LOWER: (upper,)}.get(better, (lower, upper))


def _worse_side(better: str) -> str:
    return {HIGHER: "lower", LOWER: "upper"}.get(better, "both")


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


class _Walker:
    def __init__(self, path: Path, system: SystemInfo) -> None:
        self.path, self.system = path, system
        self.errors: list[str] = []

    def err(self, node: yaml.Node, msg: str) -> None:
        self.errors.append(f"{self.path}:{node.start_mark.line + 1}: {msg}")

    def mapping(self, node: yaml.Node, what: str) -> list[tuple[yaml.Node, yaml.Node]]:
        if not isinstance(node, yaml.MappingNode):
            self.err(node, f"{what} must be a mapping")
            return []
        return node.value

    def check_file(self, root: yaml.Node) -> None:
        specs = all_specs()
        for knode, vnode in self.mapping(root, "the file"):
            check = knode.value
            if check not in specs:
                self.err(knode, f"unknown check {check!r} (known: {', '.join(specs)})")
                continue
            self.check_class(check, specs[check], vnode)

    def check_class(self, check: str, spec: CheckSpec, node: yaml.Node) -> None:
        items = self.mapping(node, check)
        index = [v for k, v in items if k.value == "$index"]
        expected = list(spec.index)
        if not index or yaml.safe_load(yaml.serialize(index[0])) != expected:
            self.err(node, f"{check}: $index must be {expected}")
        for knode, vnode in items:
            if knode.value == "$index":
                continue
            part = knode.value
            if part not in self.system.partitions:
                self.err(knode, f"{check}: partition {part!r} is not configured for system "
                                f"{self.system.name!r} (configured: "
                                f"{', '.join(sorted(self.system.partitions))})")
                continue
            for enode, tmap in self.mapping(vnode, part):
                self.check_environ(check, spec, part, enode, tmap)

    def check_environ(self, check: str, spec: CheckSpec, part: str, enode: yaml.Node,
                      tmap: yaml.Node) -> None:
        env = enode.value
        if env not in self.system.partitions[part]:
            self.err(enode, f"{check}: environment {env!r} is not in partition {part!r} "
                            f"(has: {', '.join(self.system.partitions[part])})")
            return
        features = self.system.env_features.get(env, set())
        for tnode, mmap in self.mapping(tmap, f"{part}/{env}"):
            if tnode.value not in features:
                self.err(tnode, f"{check}: transport {tnode.value!r} is not offered by "
                                f"environment {env!r} (its features)")
                continue
            for mnode, metrics in self.mapping(mmap, f"{part}/{env}/{tnode.value}"):
                if mnode.value not in MAPPINGS:
                    self.err(mnode, f"{check}: unknown mapping {mnode.value!r} "
                                    f"(known: {', '.join(MAPPINGS)})")
                    continue
                self.check_extra_levels(check, spec, metrics, spec.levels)

    def check_extra_levels(self, check: str, spec: CheckSpec, node: yaml.Node,
                           levels: tuple) -> None:
        if not levels:
            for pnode, value in self.mapping(node, "the performance variables"):
                self.check_value(check, spec, pnode, value)
            return
        level = levels[0]
        for knode, sub in self.mapping(node, level.name):
            if knode.value not in level.values:
                self.err(knode, f"{check}: unknown {level.name} {knode.value!r} "
                                f"(known: {', '.join(level.values)})")
                continue
            self.check_extra_levels(check, spec, sub, levels[1:])

    def check_value(self, check: str, spec: CheckSpec, pnode: yaml.Node,
                    vnode: yaml.Node) -> None:
        metric = pnode.value
        var = spec.lookup(metric)
        if var is None:
            self.err(pnode, f"{check} has no performance variable {metric!r}")
            return
        unit = var.unit
        value = yaml.safe_load(yaml.serialize(vnode))
        if not (isinstance(value, list) and len(value) == 4):
            self.err(vnode, f"{metric}: expected [value, lower, upper, unit], got {value!r}")
            return
        ref, lower, upper, got_unit = value
        texts = [x for x in (ref, lower, upper) if isinstance(x, str) and _is_float(x)]
        if texts:
            self.err(vnode, f"{metric}: {texts[0]!r} is text to YAML: write exponents "
                            f"with a sign and a dot (1.0e+9, 1.0e-9): {value!r}")
        elif not all(_number(x) for x in (ref, *_closed(var.better, lower, upper))):
            self.err(vnode, f"{metric}: the value and the bound on the worse side "
                            f"({_worse_side(var.better)}) must be numbers (a null bound there "
                            f"makes a reference that can never fail): {value!r}")
        elif not all(x is None or _number(x) for x in (lower, upper)):
            self.err(vnode, f"{metric}: a bound is a number or null: {value!r}")
        elif not (-1 <= (lower or 0) <= 0 <= (upper or 0)):
            # ReFrame's relative thresholds: lower in [-1, 0], upper >= 0.
            self.err(vnode, f"{metric}: bounds must satisfy -1 <= lower <= 0 <= upper: "
                            f"{value!r}")
        if got_unit != unit:
            self.err(vnode, f"{metric}: unit must be {unit!r}, got {got_unit!r}")


def validate_file(path: Path, systems: Mapping[str, SystemInfo]) -> list[str]:
    """Every problem in one reference file, each naming the file and line."""
    system = systems.get(path.stem)
    if system is None:
        return [f"{path}: no configured system named {path.stem!r} "
                f"(configured: {', '.join(sorted(systems))})"]
    try:
        root = yaml.compose(path.read_text())
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        what = " ".join(filter(None, (err.context, err.problem)))
        return [f"{where}: not valid YAML: {what}"]
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        return [f"{path}: not valid YAML: {err}"]
    if root is None:
        return [f"{path}: empty file"]
    walker = _Walker(path, system)
    walker.check_file(root)
    return walker.errors
