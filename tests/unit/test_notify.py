"""The morning summary's message: summary first, cut groups counted, HTML escaped; bad input named.

Composed from this project's captured vet session (node v2 drifted) and
nightly matching session (values left unresolved).
"""

from __future__ import annotations

import pytest

from sentinel.errors import SentinelError
from sentinel.results import changes
from sentinel.results.notify import message, send
from sentinel.results.report import summary, tables
from sentinel.results.report.files import load_reports
from sentinel.results.report.load import Inputs
from tests.conftest import DATA


def _message(shown: int = message.SHOWN) -> message.Message:
    inputs = Inputs()
    load_reports([DATA / "vet" / "each-node-v2-drifted.json",
                  DATA / "run-report-matching-nightly.json"], inputs)
    acc = tables.acceptance(inputs.cases)
    s = summary.summarise(inputs, acc, changes.find(inputs.history))
    old, message.SHOWN = message.SHOWN, shown
    try:
        return message.compose(s, acc, ["local"], "https://ci.example.org/report.html")
    finally:
        message.SHOWN = old


def test_the_summary_comes_first_then_what_is_not_measured_then_the_verdict():
    msg = _message()
    assert msg.subject == ("MPI Sentinel local: 6 failing line(s), 12 not measured, "
                           "acceptance FAIL")
    text = msg.text
    assert text.index("What changed") < text.index("What is not measured") \
        < text.index("Acceptance: FAIL")
    assert "  FAIL: nodes that failed vetting (3)\n    local:slurm-vet v2: " in text
    assert text.rstrip().endswith("The report: https://ci.example.org/report.html")
    assert msg.payload()["text"].startswith(f"*{msg.subject}*\nSession ")


def test_a_long_group_is_cut_and_counted_and_a_short_one_is_not():
    assert not [line for line in _message().text.splitlines()
                if line.strip().startswith("and ") and line.endswith(" more")]
    cut = _message(shown=1).text
    assert "    and 2 more\n" in cut  # the 3 failing test cases, 1 shown


def test_the_html_escapes_what_the_text_says_plainly():
    msg = _message()
    assert "< 0.0063 ns" in msg.text
    assert "&lt; 0.0063 ns" in msg.html and "< 0.0063 ns" not in msg.html
    mail = msg.mail("sentinel@example.org", ["ops@example.org", "hpc@example.org"])
    assert mail["To"] == "ops@example.org, hpc@example.org"
    assert [p.get_content_type() for p in mail.iter_parts()] == ["text/plain", "text/html"]


@pytest.mark.parametrize("server, expected", [("mail.example.org", ("mail.example.org", 25)),
                                              ("127.0.0.1:2525", ("127.0.0.1", 2525))])
def test_an_smtp_server_is_a_host_and_an_optional_port(server, expected):
    assert send.host_port(server, 25) == expected


def test_a_bad_server_or_url_is_named():
    with pytest.raises(SentinelError, match="--smtp 'mail:smtp': expected HOST or HOST:PORT"):
        send.host_port("mail:smtp", 25)
    with pytest.raises(SentinelError, match="--webhook 'hooks.example.org/x': an http"):
        send.by_webhook("hooks.example.org/x", {})
