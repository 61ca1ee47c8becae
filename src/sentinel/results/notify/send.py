"""Delivering the summary: a mail through SMTP, a JSON payload to a webhook.

Each failure is an error naming the server or the URL and why; nothing is
retried (the next morning sends the next summary).
"""

from __future__ import annotations

import json
import smtplib
import urllib.request
from email.message import EmailMessage
from urllib.error import HTTPError, URLError

from sentinel.errors import SentinelError


def host_port(text: str, default_port: int) -> tuple[str, int]:
    """``host[:port]``; a port that is not a number is an error naming it."""
    host, _, port = text.rpartition(":") if ":" in text else (text, "", "")
    if not port:
        return text, default_port
    if not port.isdigit() or not host:
        raise SentinelError(f"--smtp {text!r}: expected HOST or HOST:PORT")
    return host, int(port)


def by_mail(msg: EmailMessage, server: str, starttls: bool, timeout: float = 30) -> None:
    """Send ``msg`` through the SMTP server ``host[:port]`` (25 by default)."""
    host, port = host_port(server, 25)
    try:
        with smtplib.SMTP(host, port, timeout=timeout) as smtp:
            if starttls:
                smtp.starttls()
            smtp.send_message(msg)
    except (OSError, smtplib.SMTPException) as err:
        raise SentinelError(f"--smtp {server}: the mail was not sent: {err}") from None


def by_webhook(url: str, payload: dict, timeout: float = 30) -> None:
    """POST ``payload`` as JSON to ``url``; a status other than 2xx is an error."""
    if not url.startswith(("http://", "https://")):
        raise SentinelError(f"--webhook {url!r}: an http:// or https:// URL")
    request = urllib.request.Request(url, data=json.dumps(payload).encode(),
                                     headers={"Content-Type": "application/json"},
                                     method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            reply.read()
    except HTTPError as err:
        raise SentinelError(f"--webhook {url}: the server answered {err.code} "
                            f"{err.reason}") from None
    except (URLError, OSError) as err:
        raise SentinelError(f"--webhook {url}: not sent: {err}") from None
