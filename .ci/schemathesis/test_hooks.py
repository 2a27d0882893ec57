"""Tests of the hooks' pure parts and of the tally (run by .ci/schemathesis.sh before the
servers start, with the venv's Python: `python -m unittest discover -s .ci/schemathesis`)."""

import json
import os
import tempfile
import types
import unittest
import uuid
from unittest import mock

from schemathesis.engine import Status, events
from schemathesis.engine.run import PhaseName

import hooks
import tally


class Bodies(unittest.TestCase):
    def test_a_window_that_ends_when_it_starts_ends_an_hour_later(self):
        window = {"allowed_start_time": "23:30", "allowed_end_time": "23:30"}
        hooks.distinct_window(window, "allowed_start_time", "allowed_end_time")
        self.assertEqual(window["allowed_end_time"], "00:30")
        other = {"start_time": "09:00", "end_time": "17:00"}
        hooks.distinct_window(other, "start_time", "end_time")
        self.assertEqual(other["end_time"], "17:00")
        hooks.distinct_window(None, "start_time", "end_time")

    def test_the_short_call_threshold_given_twice_agrees(self):
        app = {"retry_config": {"threshold_seconds": 12, "retry_on": {"short_duration": {"enabled": True, "threshold_seconds": 40}}}}
        hooks.one_threshold(app)
        self.assertEqual(app["retry_config"]["retry_on"]["short_duration"]["threshold_seconds"], 12)
        listed = {"retry_config": {"threshold_seconds": 12, "retry_on": ["busy"]}}
        hooks.one_threshold(listed)
        self.assertEqual(listed["retry_config"]["retry_on"], ["busy"])

    def test_a_deployment_takes_each_number_once(self):
        connections = [
            {"connection_id": "a", "phone_numbers": ["+14155550100", "+14155550101"]},
            {"connection_id": "b", "phone_numbers": ["+14155550100"]},
        ]
        hooks.numbers_once(connections)
        self.assertEqual(connections[0]["phone_numbers"], ["+14155550100", "+14155550101"])
        self.assertEqual(len(connections[1]["phone_numbers"]), 1)
        self.assertNotIn(connections[1]["phone_numbers"][0], connections[0]["phone_numbers"])

    def test_times_are_written_as_the_platform_writes_them(self):
        t = hooks.parse_time("2026-03-02T08:00:00.250Z")
        self.assertEqual(hooks.rfc3339(t), "2026-03-02T08:00:00.250Z")


class Tally(unittest.TestCase):
    document = {
        "paths": {
            "/a": {"get": {"operationId": "get_a"}, "post": {"operationId": "add_a"}},
            "/b": {"get": {"operationId": "get_b"}, "parameters": []},
        }
    }

    def test_disabled_operations_are_not_counted(self):
        config = {"operations": [{"include-operation-id": ["add_a"], "enabled": False}, {"include-operation-id": "get_b"}]}
        self.assertEqual(tally.selected_operations(self.document, config), ["get_a", "get_b"])

    def test_an_operation_without_a_2xx_fails_the_run(self):
        lines = [
            {"op": "get_a", "mode": "positive", "status": 200, "phase": "fuzzing"},
            {"op": "get_a", "mode": "negative", "status": 422, "phase": "fuzzing"},
            {"op": "get_b", "mode": "positive", "status": 422, "phase": "fuzzing"},
        ]
        rows, problems = tally.summarize(lines, ["get_a", "get_b"])
        self.assertEqual(rows[0]["2xx"], 1)
        self.assertEqual(rows[0]["requests"], 2)
        self.assertEqual(len(problems), 1)
        self.assertIn("get_b", problems[0])

    def test_too_many_404s_to_valid_data_fail_the_run(self):
        lines = [{"op": "get_a", "mode": "positive", "status": 200, "phase": "coverage"}] * 2
        lines += [{"op": "get_a", "mode": "positive", "status": 404, "phase": "coverage"}]
        _, problems = tally.summarize(lines, ["get_a"])
        self.assertEqual(len(problems), 1)
        self.assertIn("404", problems[0])
        lines += [{"op": "get_a", "mode": "positive", "status": 200, "phase": "fuzzing"}] * 8
        rows, problems = tally.summarize(lines, ["get_a"])
        self.assertEqual(problems, [])
        self.assertEqual((rows[0]["given"], rows[0]["given_404"]), (11, 1))

    def test_the_stateful_phase_follows_links_and_is_not_judged_on_404s(self):
        lines = [{"op": "get_a", "mode": "positive", "status": 200, "phase": "fuzzing"}]
        lines += [{"op": "get_a", "mode": "positive", "status": 404, "phase": "stateful"}] * 5
        lines += [{"op": "get_a", "mode": "positive", "status": 200, "phase": "stateful"}] * 2
        rows, problems = tally.summarize(lines, ["get_a"])
        self.assertEqual(problems, [])
        self.assertEqual(rows[0]["stateful_2xx"], 2)
        self.assertEqual(rows[0]["2xx"], 3)

    def test_links_are_named_as_schemathesis_names_them(self):
        document = {
            "paths": {
                "/a": {"post": {"operationId": "add_a", "responses": {"200": {"links": {"GetA": {"operationId": "get_a"}}}}}},
                "/a/{id}": {"get": {"operationId": "get_a", "responses": {}}},
            }
        }
        links = tally.document_links(document, ["add_a", "get_a"])
        self.assertEqual(links, ["POST /a -> [200] GetA -> GET /a/{id}"])
        self.assertEqual(tally.document_links(document, ["add_a"]), [])
        text = tally.render_links("x", links, set(links), set())
        self.assertIn("1 of 1", text)
    def test_too_few_links_followed_fail_the_run(self):
        links = [f"L{i}" for i in range(10)]
        self.assertEqual(tally.link_problems(links, set(links[:6])), [])
        problems = tally.link_problems(links, set(links[:5]) | {"inferred"})
        self.assertEqual(len(problems), 1)
        self.assertIn("5 of the document's 10 links", problems[0])
        self.assertEqual(tally.link_problems([], set()), [])


class LinkRecorder(unittest.TestCase):
    """The stateful phase's scenarios, as the CLI hands them to the recorder."""

    @staticmethod
    def scenario(steps, phase=PhaseName.STATEFUL_TESTING, status=Status.SUCCESS, is_final=False):
        """A finished scenario whose steps are (link id or None, applied, status answered)."""
        cases, interactions = {}, {}
        for n, (link, applied, answered) in enumerate(steps):
            transition = None if link is None else types.SimpleNamespace(id=link)
            cases[str(n)] = types.SimpleNamespace(transition=transition, is_transition_applied=applied)
            response = None if answered is None else types.SimpleNamespace(status_code=answered)
            interactions[str(n)] = types.SimpleNamespace(response=response)
        return events.ScenarioFinished(
            id=uuid.uuid4(),
            phase=phase,
            suite_id=uuid.uuid4(),
            label=None,
            status=status,
            recorder=types.SimpleNamespace(cases=cases, interactions=interactions),
            elapsed_time=0.0,
            skip_reason=None,
            is_final=is_final,
        )

    def test_links_followed_and_served_add_up_over_passes(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "links.json")
            with mock.patch.dict(os.environ, {"ST_LINKS": path}):
                first = tally.LinkRecorder()
                first.handle_event(None, self.scenario([(None, False, 200), ("A", True, 200), ("B", True, 409)]))
                # Not applied, a replay of a failure, another phase, an interrupted scenario:
                # Schemathesis does not count these links covered.
                first.handle_event(None, self.scenario([("C", False, 200)]))
                first.handle_event(None, self.scenario([("D", True, 200)], is_final=True))
                first.handle_event(None, self.scenario([("E", True, 200)], phase=PhaseName.FUZZING))
                first.handle_event(None, self.scenario([("F", True, 200)], status=Status.INTERRUPTED))
                first.handle_event(None, self.scenario([("G", True, None)], status=Status.FAILURE))
                first.shutdown(None)
                second = tally.LinkRecorder()
                second.handle_event(None, self.scenario([("B", True, 201)]))
                second.shutdown(None)
            with open(path, encoding="utf-8") as f:
                self.assertEqual(json.load(f), {"followed": ["A", "B", "G"], "served": ["A", "B"]})


if __name__ == "__main__":
    unittest.main()
