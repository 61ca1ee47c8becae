"""``sentinel notify``: the morning summary by mail and to a chat webhook, only when asked.

    sentinel notify [RUN_REPORT ...] [--db FILE] [--smtp HOST[:PORT] --from ADDR --to ADDR ...]
                    [--webhook URL] [--link URL]

Reads what ``sentinel report`` reads and composes its summary: what
changed since the previous comparable session, what was not measured, the
acceptance verdict. Without ``--smtp`` or ``--webhook`` it prints the mail's
text and sends nothing.
"""

from __future__ import annotations

import argparse

from sentinel.errors import SentinelError
from sentinel.results import changes
from sentinel.results.notify import message, send
from sentinel.results.report import inputs as report_inputs
from sentinel.results.report import summary, tables


def add_parser(sub: argparse._SubParsersAction) -> None:
    """The ``notify`` subcommand's options."""
    p = sub.add_parser("notify", help="the morning summary by mail (SMTP) and to a chat "
                                      "webhook; printed only, unless asked to send")
    report_inputs.add_arguments(p)
    p.add_argument("--smtp", default=None, metavar="HOST[:PORT]",
                   help="send the mail through this SMTP server (port 25 by default)")
    p.add_argument("--starttls", action="store_true", help="with --smtp: STARTTLS first")
    p.add_argument("--from", dest="sender", default=None, help="with --smtp: the sender")
    p.add_argument("--to", action="append", default=None,
                   help="with --smtp: a recipient (repeatable)")
    p.add_argument("--webhook", default=None, metavar="URL",
                   help="POST the summary as JSON ({\"text\": ...}) to this URL")
    p.add_argument("--link", default="", help="a URL of the HTML report, put in the message")


def notify_command(args: argparse.Namespace) -> int:
    """Compose the summary; send it where asked, else print it."""
    if args.smtp and (not args.sender or not args.to):
        raise SentinelError("--smtp needs --from and at least one --to")
    if not args.smtp and (args.sender or args.to):
        raise SentinelError("--from and --to address a mail: give --smtp to send it")
    inputs = report_inputs.read_args(args)
    acc = tables.acceptance(inputs.cases, inputs.contracts)
    found = changes.find(inputs.history)
    msg = message.compose(summary.summarise(inputs, acc, found), acc,
                          sorted({c.system for c in inputs.cases}), args.link)
    if args.smtp:
        send.by_mail(msg.mail(args.sender, args.to), args.smtp, args.starttls)
        print(f"sentinel notify: mailed to {', '.join(args.to)} through {args.smtp}: "
              f"{msg.subject}")
    if args.webhook:
        send.by_webhook(args.webhook, msg.payload())
        print(f"sentinel notify: posted to {args.webhook}: {msg.subject}")
    if not args.smtp and not args.webhook:
        print(msg.subject, msg.text, sep="\n\n", end="")
    return 0
