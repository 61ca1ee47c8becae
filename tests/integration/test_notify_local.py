"""``sentinel notify``: the morning mail through a real SMTP server, the JSON to a webhook.

Both servers listen on loopback, started by the test: aiosmtpd (an SMTP
server in Python) and http.server. The summary is the project's captured
vet session (node v2 drifted) and nightly matching session (values left
unresolved). Nothing is sent unless asked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from email import message_from_bytes, policy
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from aiosmtpd.controller import Controller

from tests.cluster.prometheus import free_port
from tests.conftest import DATA

pytestmark = pytest.mark.integration

INPUTS = [str(DATA / "vet" / "each-node-v2-drifted.json"),
          str(DATA / "run-report-matching-nightly.json")]


class _Inbox:
    """What the SMTP server received: (envelope sender, recipients, message bytes)."""

    def __init__(self) -> None:
        self.mails: list[tuple[str, list[str], bytes]] = []

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd's name)
        self.mails.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content))
        return "250 Message accepted for delivery"


def _notify(args: list[str], tmp_path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SENTINEL_OUTPUT": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "sentinel.results.cli", "notify", *INPUTS,
                           *args], capture_output=True, text=True, env=env, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_the_mail_arrives_with_the_summary_first(tmp_path):
    inbox = _Inbox()
    smtp = Controller(inbox, hostname="127.0.0.1", port=free_port())
    smtp.start()
    try:
        sent = _notify(["--smtp", f"127.0.0.1:{smtp.port}", "--from", "sentinel@example.org",
                        "--to", "ops@example.org", "--to", "hpc@example.org"], tmp_path)
    finally:
        smtp.stop()
    assert sent.returncode == 0, sent.stdout + sent.stderr
    ((sender, rcpt, data),) = inbox.mails
    assert (sender, rcpt) == ("sentinel@example.org", ["ops@example.org", "hpc@example.org"])
    mail = message_from_bytes(data, policy=policy.default)
    assert str(mail["Subject"]).strip().startswith("MPI Sentinel local: 6 failing line(s)")
    text = mail.get_body(("plain",)).get_content()
    assert text.startswith("Session ") and text.index("What changed") < text.index(
        "What is not measured") < text.index("Acceptance: FAIL")
    assert "local:slurm-vet v2: " in text
    html = mail.get_body(("html",)).get_content()
    assert html.index("What changed") < html.index("Acceptance") and "&lt; 0.0063 ns" in html


def test_the_webhook_gets_the_summary_as_json_and_nothing_is_sent_unasked(tmp_path):
    got: list[dict] = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            length = int(self.headers["Content-Length"])
            got.append({"type": self.headers["Content-Type"],
                        "body": json.loads(self.rfile.read(length))})
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", free_port()), Hook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_port}/hooks/sentinel"
    try:
        posted = _notify(["--webhook", url], tmp_path)
        printed = _notify([], tmp_path)
    finally:
        server.shutdown()
        thread.join(timeout=10)
    assert posted.returncode == 0, posted.stderr
    ((hook,),) = [got]
    assert hook["type"] == "application/json"
    assert hook["body"]["text"].startswith("*MPI Sentinel local: 6 failing line(s)")
    # without --smtp or --webhook: printed, nothing sent
    assert printed.returncode == 0 and len(got) == 1
    assert printed.stdout.startswith("MPI Sentinel local: 6 failing line(s)")


def test_a_server_that_does_not_answer_is_named(tmp_path):
    port = free_port()  # nothing listens there
    failed = _notify(["--smtp", f"127.0.0.1:{port}", "--from", "a@example.org", "--to",
                      "b@example.org"], tmp_path)
    assert failed.returncode == 1
    assert f"--smtp 127.0.0.1:{port}: the mail was not sent: " in failed.stderr
