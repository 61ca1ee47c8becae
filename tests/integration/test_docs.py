"""The documentation builds (Sphinx, warnings as errors) and holds what it promises.

Every check class of ``checks/`` is on its file's page, every declared
performance variable is in the generated reference, every subcommand and
option of the ``sentinel`` command is in its generated reference, and every
link between the built pages resolves, to the anchor.
"""

from __future__ import annotations

import argparse
import ast
import html
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from sentinel.analysis.variables import all_specs
from sentinel.results.cli import build_parser
from tests.conftest import ROOT
from tests.integration.conftest import browser

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The documentation built by ``make docs``'s command into a fresh directory."""
    out = tmp_path_factory.mktemp("docs")
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b",
                           "html", str(ROOT / "docs"), str(out)], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out


def test_every_check_class_has_its_page(site):
    for path in sorted((ROOT / "checks").glob("*.py")):
        page = (site / "_generated" / "checks" / f"{path.stem}.html").read_text()
        classes = [node.name for node in ast.parse(path.read_text()).body
                   if isinstance(node, ast.ClassDef) and node.name.endswith("Check")]
        assert classes, path
        for name in classes:
            assert f'id="{name.lower()}"' in page, (path.name, name)


def test_every_declared_variable_is_in_the_reference(site):
    page = (site / "_generated" / "variables.html").read_text()
    for spec in all_specs().values():
        for var in spec.variables:
            assert html.escape(var.template) in page, (spec.name, var.template)


def _text(page: Path) -> str:
    """A built page's text, without its markup."""
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))


def test_every_subcommand_and_option_is_in_the_cli_reference(site):
    page = site / "_generated" / "cli.html"
    text = _text(page)
    ids = set(re.findall(r'id="([^"]+)"', page.read_text()))
    commands = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert commands and commands[0].choices
    for name, sub in commands[0].choices.items():
        assert f"sentinel {name}" in text and f"sentinel-{name}" in ids, name
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            for option in action.option_strings or [action.dest]:
                assert option in text, (name, option)
            if action.help:
                assert " ".join(action.help.split()) in text, (name, action.help)


def test_every_link_between_the_pages_resolves(site):
    ids: dict[Path, set[str]] = {}
    links = 0
    for page in site.rglob("*.html"):
        for href in re.findall(r'href="([^"]+)"', page.read_text()):
            parts = urlsplit(html.unescape(href))
            if parts.scheme or parts.netloc or href.startswith("_sources"):
                continue
            target = (page.parent / parts.path).resolve() if parts.path else page
            assert target.exists(), f"{page.relative_to(site)}: {href} leads nowhere"
            if parts.fragment and target.suffix == ".html":
                if target not in ids:
                    ids[target] = set(re.findall(r'id="([^"]+)"', target.read_text()))
                assert parts.fragment in ids[target], f"{page.relative_to(site)}: {href}"
            links += 1
    assert links > 100


def test_the_manual_in_headless_chromium(site):
    """From the front page to a check's page and its variables by clicks, offline."""
    driver, chromium = browser()
    requests: list[str] = []
    with driver as p:
        chrome = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = chrome.new_page()
        page.on("request", lambda r: requests.append(r.url))
        page.goto((site / "index.html").as_uri(), wait_until="load")
        page.get_by_role("link", name="Checks", exact=True).first.click()
        page.get_by_role("link", name=re.compile("Point-to-point")).first.click()
        assert page.locator("#pt2ptcheck h2").first.inner_text().startswith("Pt2ptCheck")
        assert page.locator("table code", has_text="latency_{size}B").count() >= 1
        page.get_by_role("link", name="the full list").first.click()
        assert page.locator("h1").first.inner_text().startswith("Performance variables")
        chrome.close()
    assert all(url.startswith("file://") for url in requests), \
        [u for u in requests if not u.startswith("file://")]
