"""Whether a run report has the shape the report reads: each field of its JSON type.

A field of the wrong type is a ValueError naming it (``'runs' must be a
list, got an object``), so that no malformed report reaches the code that
reads it.
"""

from __future__ import annotations

from collections.abc import Callable

#: The fields every test case has, as strings.
_REQUIRED = ("name", "system", "partition", "environ", "result")

#: JSON's words for the type of each value that ``json.loads`` returns (bool before number).
_JSON_TYPES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "a boolean"), ((int, float), "a number"), (str, "a string"),
    (list, "a list"), (dict, "an object"), (type(None), "null"))


def is_number(value: object) -> bool:
    """Whether ``value`` is a JSON number (not a boolean)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


#: What a field must be, and the test of it.
_KINDS: dict[str, Callable[[object], bool]] = {
    "a list": lambda v: isinstance(v, list),
    "an object": lambda v: isinstance(v, dict),
    "a string": lambda v: isinstance(v, str),
    "a number or null": lambda v: v is None or is_number(v),
}


def expect(value: object, kind: str, what: str) -> None:
    """Raise ValueError "<what> must be <kind>, got <what value is>" unless it is."""
    if not _KINDS[kind](value):
        got = next((name for t, name in _JSON_TYPES if isinstance(value, t)),
                   type(value).__name__)
        raise ValueError(f"{what} must be {kind}, got {got}")


def _check_testcase(tc: object, where: str, source: str) -> None:
    """ValueError unless ``tc`` is an object with the fields every test case has."""
    expect(tc, "an object", where)
    for key in _REQUIRED:
        if key not in tc:
            raise ValueError(f"{source}: a test case lacks {key!r} (a partial run report?)")
        expect(tc[key], "a string", f"{where}: {key!r}")
    if "display_name" in tc:
        expect(tc["display_name"], "a string", f"{where}: 'display_name'")


def checked_session(report: object, source: str) -> dict:
    """The session of a run report whose runs and test cases have the right types.

    ValueError names the first field of the wrong type.
    """
    if not isinstance(report, dict) or "runs" not in report or "session_info" not in report:
        raise ValueError(f"{source}: not a ReFrame run report (no 'session_info' and 'runs')")
    session, runs = report["session_info"], report["runs"]
    expect(session, "an object", f"{source}: 'session_info'")
    expect(session.get("time_start_unix"), "a number or null",
           f"{source}: session_info: 'time_start_unix'")
    expect(runs, "a list", f"{source}: 'runs'")
    for i, run in enumerate(runs):
        expect(run, "an object", f"{source}: runs[{i}]")
        expect(run.get("testcases", []), "a list", f"{source}: runs[{i}]: 'testcases'")
        for j, tc in enumerate(run.get("testcases", [])):
            _check_testcase(tc, f"{source}: runs[{i}].testcases[{j}]", source)
    return session
