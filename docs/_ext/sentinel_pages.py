"""Pages generated from the code at build time, so that they cannot drift from it.

* ``_generated/checks/<file>.md``: one page per file of ``checks/``: its
  module docstring, each check class with its docstring, the performance
  variables its declaration lists, and the benchmark's own README where the
  check runs one of ``src/bench``;
* ``_generated/variables.md``: every declared performance variable (check,
  name, unit, which direction is better, meaning, headline), from
  :func:`sentinel.analysis.variables.all_specs`;
* ``_generated/cli.md``: the ``sentinel`` command line, every subcommand with
  its usage and every option with its help and default, from
  :func:`sentinel.results.cli.build_parser`.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
from pathlib import Path

from sentinel.analysis.variables import HIGHER, CheckSpec, all_specs
from sentinel.results import cli

ROOT = Path(__file__).resolve().parents[2]
CHECKS = ROOT / "checks"
BENCH = ROOT / "src" / "bench"


def _classes(path: Path) -> list[tuple[str, str]]:
    """The check classes of a check file with their docstrings, in file order."""
    tree = ast.parse(path.read_text())
    return [(node.name, ast.get_docstring(node) or "") for node in tree.body
            if isinstance(node, ast.ClassDef) and node.name.endswith("Check")]


def _variables_table(spec: CheckSpec) -> list[str]:
    """A Markdown table of a declaration's variables."""
    rows = ["| variable | unit | better | meaning |", "|---|---|---|---|"]
    for var in spec.variables:
        better = "higher" if var.better == HIGHER else "lower"
        meaning = var.meaning.replace("|", "\\|")
        rows.append(f"| `{var.template}` | {var.unit} | {better} | {meaning} |")
    return rows


def _rst(text: str) -> list[str]:
    """A docstring (reStructuredText) inside a MyST page."""
    return ["```{eval-rst}", text, "```", ""]


def check_page(path: Path, specs: dict[str, CheckSpec], page_dir: Path) -> str:
    """The page of one check file (written to ``page_dir``)."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    title = doc.splitlines()[0].rstrip(".") if doc else path.stem
    lines = [f"# {title}", "", f"`checks/{path.name}`", "", *_rst("\n".join(doc.splitlines()[1:]))]
    shown: set[str] = set()
    for name, text in _classes(path):
        lines += [f"## {name}", "", *_rst(text or "(no docstring)")]
        spec = specs.get(name)
        if spec is not None and spec.name not in shown:
            shown.add(spec.name)
            lines += ["Performance variables (declared once, in "
                      "`sentinel.analysis`; {doc}`the full list <../variables>`):", "",
                      *_variables_table(spec), ""]
    readme = BENCH / path.stem / "README.md"
    if readme.exists():
        lines += ["## The benchmark", "", f"`src/bench/{path.stem}/README.md`:", "",
                  f"```{{include}} {os.path.relpath(readme, page_dir)}",
                  ":heading-offset: 2", "```", ""]
    return "\n".join(lines) + "\n"


def variables_page(specs: dict[str, CheckSpec]) -> str:
    """Every declared performance variable, by declaration."""
    lines = ["# Performance variables", "",
             "Generated from the declarations (`sentinel.analysis.variables`): a name "
             "with `{field}` stands for one variable per value of the field.", ""]
    seen: set[str] = set()
    for spec in sorted(specs.values(), key=lambda s: s.name):
        if spec.name in seen:
            continue
        seen.add(spec.name)
        lines += [f"## {spec.name}", "", "Checks: " + ", ".join(f"`{c}`" for c in spec.checks),
                  ""]
        if spec.levels:
            lines += ["Indexed by " + ", ".join(f"`{lv.name}`" for lv in spec.levels), ""]
        lines += [*_variables_table(spec), ""]
    return "\n".join(lines) + "\n"


def _escape(text: str) -> str:
    """Plain text in Markdown: no markup, no raw HTML, no table cell break."""
    return re.sub(r"([\\`*_\[\]<>|{}])", r"\\\1", text)


def _md(text: str) -> str:
    """Plain text on one line (a table cell), escaped."""
    return _escape(" ".join(text.split()))


def _default(action: argparse.Action) -> str:
    """An option's default as the parser holds it ("" when it has none to show)."""
    if not action.option_strings and action.nargs in (argparse.REMAINDER, "*", "?"):
        return ""  # a positional that may be left out
    if action.required:
        return "required"
    if isinstance(action, argparse._StoreTrueAction):
        return "off"
    if action.default in (None, "", [], argparse.SUPPRESS):
        return ""
    return f"`{action.default}`"


def _argument(action: argparse.Action) -> str:
    """What an option takes: its metavar, or nothing for a flag."""
    if action.nargs == 0:
        return ""
    if action.nargs == argparse.REMAINDER:
        return "`-- ...`"
    metavar = action.metavar or action.dest.upper()
    if action.nargs in ("+", "*"):
        return f"`{metavar} ...`"
    return f"`{metavar}`"


def subcommands(parser: argparse.ArgumentParser) -> dict[str, tuple[str, argparse.ArgumentParser]]:
    """Each subcommand of ``parser`` with its one-line help and its own parser."""
    out = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            out.update({name: (helps.get(name, ""), sub) for name, sub in action.choices.items()})
    return out


def _docstring_md(doc: str) -> list[str]:
    """A module docstring as Markdown: indented blocks as code, ``literals`` as code spans."""
    out = []
    for para in doc.strip().split("\n\n"):
        lines = para.splitlines()
        if all(line.startswith("    ") for line in lines):
            out += ["```text", *(line[4:] for line in lines), "```", ""]
            continue
        # ``literal`` and :role:`target` are code; the text between them plain
        parts = re.split(r"(?::[\w:]+:)?``?([^`]+?)``?", " ".join(lines))
        out += ["".join(f"`{part}`" if i % 2 else _escape(part)
                        for i, part in enumerate(parts)), ""]
    return out


def cli_page(parser: argparse.ArgumentParser, doc: str) -> str:
    """The ``sentinel`` command line: every subcommand, its options, their help and defaults."""
    lines = ["# The sentinel command", "",
             "Generated from the parser itself (`sentinel.results.cli.build_parser()`), so "
             "it cannot drift from it; `sentinel <command> --help` prints the same.", "",
             "```text", parser.format_usage().strip(), "```", "",
             *_docstring_md(doc), "| command | what it does |", "|---|---|"]
    subs = subcommands(parser)
    for name, (text, _) in subs.items():
        lines.append(f"| [`{name}`](#sentinel-{name}) | {_md(text)} |")
    lines.append("")
    for name, (text, sub) in subs.items():
        lines += [f"## sentinel {name}", "", _md(text)[:1].upper() + _md(text)[1:] + ".", "",
                  "```text", sub.format_usage().strip(), "```", "",
                  "| option | takes | default | what it does |", "|---|---|---|---|"]
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            names = ", ".join(f"`{o}`" for o in action.option_strings) or f"`{action.dest}`"
            helptext = action.help or ""
            if "%(" in helptext:
                helptext = helptext % {**vars(action), "prog": sub.prog}
            lines.append(f"| {names} | {_argument(action)} | {_default(action)} | "
                         f"{_md(helptext)} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def generate(out: Path) -> None:
    """Write the generated pages under ``out``."""
    specs = all_specs()
    (out / "checks").mkdir(parents=True, exist_ok=True)
    files = sorted(CHECKS.glob("*.py"))
    for path in files:
        _write(out / "checks" / f"{path.stem}.md", check_page(path, specs, out / "checks"))
    index = ["# Checks", "", "One page per file of `checks/`.", "", "```{toctree}",
             ":maxdepth: 1", "", *(path.stem for path in files), "```", ""]
    _write(out / "checks" / "index.md", "\n".join(index))
    _write(out / "variables.md", variables_page(specs))
    _write(out / "cli.md", cli_page(cli.build_parser(), cli.__doc__ or ""))


def _write(path: Path, text: str) -> None:
    """Write ``text`` unless the file already holds it (Sphinx rebuilds what changed)."""
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def setup(app) -> dict:
    """Sphinx extension entry: generate the pages before the sources are read."""
    app.connect("builder-inited", lambda app: generate(Path(app.srcdir) / "_generated"))
    return {"parallel_read_safe": True}
