"""What each operation answered in a Schemathesis run, and the verdict on it.

The hooks of both runs (hooks.py, byok_hooks.py) call `record` after every request
Schemathesis sends: one JSON line per request in the file named by ST_TALLY (operation,
phase, generation mode, status, whether the hooks gave it real ids). After the run,
.ci/schemathesis.sh prints the table:

    python3 .ci/schemathesis/tally.py NAME TALLY DOCUMENT CONFIG [LINKS]

one row per operation the configuration leaves enabled: its requests, its positive ones
(data the schema allows), how many of those were answered 2xx and 404, how many of all its
requests reached a 2xx, and how many of the stateful phase's did. It exits 1 when an
operation never reached a 2xx, or when more than MAX_POSITIVE_404 of an operation's positive
requests in the phases where the hooks give ids (examples, coverage, fuzzing) were answered
404 (an id that does not exist), and says which.

`LinkRecorder`, an event handler of Schemathesis's CLI, writes the stateful phase's links to
the file named by ST_LINKS (adding to what earlier passes of the run wrote there): those it
followed (as Schemathesis counts a link covered: the link's values were used) and those after
which the follow-up reached a 2xx. The table ends with the document's links, covered or not,
and the run fails when LINKS was given and the stateful phase followed no more than
MIN_LINKS_FOLLOWED of them (or wrote no file: it did not run).
"""

from __future__ import annotations

import json
import os
import sys
import tomllib

from schemathesis import cli
from schemathesis.engine import Status, events
from schemathesis.engine.run import PhaseName

# Above this share of 404 answers to positive requests, an operation is not reached with
# real ids: the hooks keep one generated id in twenty (hooks.KEEP_ONE_IN), so a run that works
# stays well below it.
MAX_POSITIVE_404 = 0.25

# "Most links covered": at or below this share of the document's links followed, the stateful
# phase does not reach what the links lead to (CI's run, seed 1, has followed 27 to 33 of 33:
# how far a pass goes depends on the answers it meets, see docs/guide/fuzzing.md).
MIN_LINKS_FOLLOWED = 0.5

_METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
UNIT_PHASES = ("examples", "coverage", "fuzzing")


class LinkRecorder(cli.EventHandler):
    """Collects the stateful phase's links: followed, and followed to a 2xx."""

    def __init__(self, *args, **params) -> None:
        self.followed: set[str] = set()
        self.served: set[str] = set()

    def handle_event(self, ctx, event) -> None:
        if not isinstance(event, events.ScenarioFinished) or event.phase != PhaseName.STATEFUL_TESTING:
            return
        # The scenarios Schemathesis counts for its "links covered": not a replay of a failure,
        # not interrupted or skipped.
        if event.is_final or event.status in (Status.INTERRUPTED, Status.SKIP, None):
            return
        recorder = event.recorder
        for key, node in recorder.cases.items():
            if node.transition is None or not node.is_transition_applied:
                continue
            self.followed.add(node.transition.id)
            interaction = recorder.interactions.get(key)
            if interaction is not None and interaction.response is not None:
                if 200 <= interaction.response.status_code < 300:
                    self.served.add(node.transition.id)

    def shutdown(self, ctx) -> None:
        path = os.environ.get("ST_LINKS")
        if not path:
            return
        # A later pass of the same run (another seed) adds to what the earlier ones followed.
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                earlier = json.load(f)
            self.followed.update(earlier["followed"])
            self.served.update(earlier["served"])
        with open(path, "w", encoding="utf-8") as out:
            json.dump({"followed": sorted(self.followed), "served": sorted(self.served)}, out, indent=1)


# Registered with the CLI when the hooks import this module (`cli.handler()` returns nothing,
# so it is not used as a decorator: the class stays importable).
cli.handler()(LinkRecorder)


def _operation_id(case) -> str:
    return case.operation.definition.raw.get("operationId") or case.operation.label


def _mode(case) -> str | None:
    meta = case.meta
    if meta is None:
        return None
    return str(meta.generation.mode.value)


def _phase(case) -> str | None:
    meta = case.meta
    if meta is None:
        return None
    return str(meta.phase.name.value)


def record(case, status: int | None, ids: str | None = None, detail: str | None = None) -> None:
    """Appends one request to the tally file (nothing when ST_TALLY is not set)."""
    path = os.environ.get("ST_TALLY")
    if not path:
        return
    line = {
        "op": _operation_id(case),
        "phase": _phase(case),
        "mode": _mode(case),
        "status": status,
        "ids": ids,
    }
    if detail is not None:
        line["detail"] = detail
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(line, sort_keys=True) + "\n")


def document_links(document: dict, operations: list[str]) -> list[str]:
    """The document's links between selected operations, named as Schemathesis names them."""
    labels = {}
    for path, item in document.get("paths", {}).items():
        for method, op in item.items():
            if method in _METHODS and isinstance(op, dict) and op.get("operationId"):
                labels[op["operationId"]] = f"{method.upper()} {path}"
    found = []
    for path, item in document.get("paths", {}).items():
        for method, op in item.items():
            if method not in _METHODS or not isinstance(op, dict) or op.get("operationId") not in operations:
                continue
            for status, answer in op.get("responses", {}).items():
                for name, link in (answer.get("links") or {}).items():
                    if link.get("operationId") in operations:
                        found.append(f"{labels[op['operationId']]} -> [{status}] {name} -> {labels[link['operationId']]}")
    return found


def render_links(name: str, links: list[str], followed: set[str], served: set[str]) -> str:
    out = [
        f"schemathesis: {name}: the document's links followed by the stateful phase: "
        f"{sum(1 for link in links if link in followed)} of {len(links)} "
        f"({sum(1 for link in links if link in served)} to a 2xx); "
        f"links it inferred and followed: {len(followed - set(links))}"
    ]
    for link in links:
        mark = "2xx" if link in served else "followed" if link in followed else "NOT FOLLOWED"
        out.append(f"  {mark:<12} {link}")
    return "\n".join(out)


def link_problems(links: list[str], followed: set[str]) -> list[str]:
    """What fails the run in the links: too few of the document's links followed."""
    count = sum(1 for link in links if link in followed)
    if links and count <= MIN_LINKS_FOLLOWED * len(links):
        return [
            f"the stateful phase followed {count} of the document's {len(links)} links "
            f"(at most {MIN_LINKS_FOLLOWED:.0%}): it does not reach what they lead to"
        ]
    return []


def selected_operations(document: dict, config: dict) -> list[str]:
    """The document's operationIds, less those the configuration disables."""
    disabled: set[str] = set()
    for entry in config.get("operations", []):
        if entry.get("enabled", True):
            continue
        ids = entry.get("include-operation-id", [])
        disabled.update([ids] if isinstance(ids, str) else ids)
    found = []
    for item in document.get("paths", {}).values():
        for method, op in item.items():
            if method in _METHODS and isinstance(op, dict) and op.get("operationId"):
                if op["operationId"] not in disabled:
                    found.append(op["operationId"])
    return found


def _ok(line: dict) -> bool:
    return line["status"] is not None and 200 <= line["status"] < 300


def summarize(lines: list[dict], operations: list[str]) -> tuple[list[dict], list[str]]:
    """One row per operation, and what fails the run."""
    rows = []
    problems = []
    for op in operations:
        mine = [line for line in lines if line["op"] == op]
        positive = [line for line in mine if line.get("mode") == "positive"]
        given = [line for line in positive if line.get("phase") in UNIT_PHASES]
        given_404 = sum(1 for line in given if line["status"] == 404)
        row = {
            "op": op,
            "requests": len(mine),
            "positive": len(positive),
            "positive_2xx": sum(1 for line in positive if _ok(line)),
            "given": len(given),
            "given_404": given_404,
            "2xx": sum(1 for line in mine if _ok(line)),
            "stateful_2xx": sum(1 for line in mine if line.get("phase") == "stateful" and _ok(line)),
        }
        rows.append(row)
        if row["2xx"] == 0:
            problems.append(f"{op}: no request reached a 2xx ({len(mine)} sent)")
        elif given and given_404 / len(given) > MAX_POSITIVE_404:
            problems.append(
                f"{op}: {given_404} of {len(given)} positive requests of the examples, coverage and "
                f"fuzzing phases answered 404 (more than {MAX_POSITIVE_404:.0%}): the run does not "
                "reach it with real ids"
            )
    return rows, problems


def render(name: str, rows: list[dict]) -> str:
    width = max([len("operation")] + [len(row["op"]) for row in rows])
    out = [
        f"schemathesis: {name}, requests per operation (positive: data the schema allows; "
        "404: of the positive requests of the examples, coverage and fuzzing phases)",
        f"{'operation':<{width}}  requests  2xx  positive  positive 2xx     404  stateful 2xx",
    ]
    for row in rows:
        share = f"{row['given_404'] / row['given']:.0%}" if row["given"] else "-"
        out.append(
            f"{row['op']:<{width}}  {row['requests']:>8}  {row['2xx']:>3}  {row['positive']:>8}  "
            f"{row['positive_2xx']:>12}  {row['given_404']:>3} {share:>3}  {row['stateful_2xx']:>12}"
        )
    total = sum(row["requests"] for row in rows)
    reached = sum(1 for row in rows if row["2xx"])
    out.append(f"schemathesis: {name}: {reached} of {len(rows)} operations reached a 2xx ({total} requests)")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    if len(argv) not in (5, 6):
        print(__doc__, file=sys.stderr)
        return 2
    name, tally_path, document_path, config_path = argv[1:5]
    links_path = argv[5] if len(argv) == 6 else None
    with open(document_path, encoding="utf-8") as f:
        document = json.load(f)
    with open(config_path, "rb") as f:
        config = tomllib.load(f)
    lines = []
    if os.path.exists(tally_path):
        with open(tally_path, encoding="utf-8") as f:
            lines = [json.loads(line) for line in f if line.strip()]
    operations = selected_operations(document, config)
    rows, problems = summarize(lines, operations)
    print(render(name, rows))
    if links_path and os.path.exists(links_path):
        with open(links_path, encoding="utf-8") as f:
            seen = json.load(f)
        links = document_links(document, operations)
        print(render_links(name, links, set(seen["followed"]), set(seen["served"])))
        problems += link_problems(links, set(seen["followed"]))
    elif links_path:
        problems.append(f"no links recorded ({links_path}): the stateful phase did not run")
    for problem in problems:
        print(f"schemathesis: {name}: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
