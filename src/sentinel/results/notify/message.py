"""The morning summary as a mail (text and HTML) and as a webhook's JSON payload.

Summary first: what changed since the previous comparable session, then
what was not measured, then the acceptance verdict (the same groups as the
HTML report's summary, :mod:`sentinel.results.report.summary`), each group
cut to :data:`SHOWN` lines with the count of the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from email.message import EmailMessage

import jinja2

from sentinel.results.report.summary import Group, Summary, when
from sentinel.results.report.tables import Acceptance

#: Lines shown of each group; the rest are counted.
SHOWN = 20


@dataclass(frozen=True)
class Shown:
    """A group as the message shows it."""

    title: str
    verdict: str
    count: int
    lines: list[str]
    more: int


@dataclass(frozen=True)
class Message:
    """What is sent: a subject, the text, the HTML and the webhook's JSON."""

    subject: str
    text: str
    html: str

    def payload(self) -> dict[str, str]:
        """The webhook's JSON: ``text`` (Slack, Mattermost and Teams read it)."""
        return {"text": f"*{self.subject}*\n{self.text}"}

    def mail(self, sender: str, to: list[str]) -> EmailMessage:
        """The mail: plain text, with the HTML as its alternative."""
        msg = EmailMessage()
        msg["Subject"], msg["From"], msg["To"] = self.subject, sender, ", ".join(to)
        msg.set_content(self.text)
        msg.add_alternative(self.html, subtype="html")
        return msg


def _shown(group: Group) -> Shown:
    return Shown(group.title, group.verdict, len(group.lines),
                 [line.text for line in group.lines[:SHOWN]], max(len(group.lines) - SHOWN, 0))


def _text(intro: str, sections: list[tuple[str, list[Shown]]], acceptance: str,
          link: str) -> str:
    out = [intro, ""]
    for title, groups in sections:
        out.append(title)
        if not groups:
            out.append("  nothing")
        for g in groups:
            out.append(f"  {g.verdict}: {g.title} ({g.count})")
            out += [f"    {line}" for line in g.lines]
            if g.more:
                out.append(f"    and {g.more} more")
        out.append("")
    out.append(f"Acceptance: {acceptance}")
    if link:
        out.append(f"The report: {link}")
    return "\n".join(out) + "\n"


def compose(summary: Summary, acc: Acceptance, systems: list[str], link: str = "") -> Message:
    """The message of one summary: subject, text and HTML, summary first."""
    changed = [_shown(g) for g in summary.changed]
    unmeasured = [_shown(g) for g in summary.unmeasured]
    failing = sum(g.count for g in changed if g.verdict == "FAIL")
    session = str(summary.newest.get("uuid") or "")[:8]
    subject = (f"MPI Sentinel {', '.join(systems)}: {failing} failing line(s), "
               f"{sum(g.count for g in unmeasured)} not measured, acceptance {acc.verdict}")
    intro = (f"Session {session} started {when(summary.newest)}, compared with "
             f"{summary.compared}.")
    acceptance = acc.said
    sections = [("What changed", changed), ("What is not measured", unmeasured)]
    env = jinja2.Environment(loader=jinja2.PackageLoader("sentinel.results.notify", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    html = env.get_template("mail.html").render(subject=subject, intro=intro,
                                                sections=sections, acceptance=acceptance,
                                                link=link)
    return Message(subject, _text(intro, sections, acceptance, link), html)
