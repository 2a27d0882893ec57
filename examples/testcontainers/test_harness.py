"""The harness image under Testcontainers (Python): a client test that starts the stack,
waits for /healthz, makes a call and reads the verdict on it.

    pip install testcontainers pytest
    TESTCONTAINERS_RYUK_DISABLED=true HARNESS_IMAGE=voice-harness:dev pytest examples/testcontainers

(Ryuk, Testcontainers' reaper, is an image of its own; where no image can be pulled it is
turned off, and the `with` block removes the container.)
"""

import json
import os
import time
import urllib.error
import urllib.request

from testcontainers.core.container import DockerContainer

IMAGE = os.environ.get("HARNESS_IMAGE", "voice-harness:dev")
API_KEY = "sk-testcontainers-1"
DEPLOYMENTS = "/api/app-authoring/v1/orgs/org-1/workspaces/ws-1/deployments"


def wait_healthy(base, timeout=30.0):
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=2) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError):
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{base}/healthz did not answer 200 within {timeout} s")
        time.sleep(0.05)


def call(base, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("X-API-Key", API_KEY)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def deployment(**extra):
    """A deployment create body, with `extra` fields beside the required ones."""
    return {
        "name": "Front desk",
        "app_id": "receptionist",
        "app_version": 1,
        "connection_configs": [{"connection_id": "main", "phone_numbers": ["+14155550100"]}],
        **extra,
    }


def verdict(container):
    """`harness verify -v` (every check listed) inside the stack's own container: exit code
    and report text."""
    code, output = container.exec(
        ["harness", "verify", "-v", "--url", "http://127.0.0.1:8080", "--api-key", API_KEY]
    )
    return code, output.decode()


def stack():
    return (
        DockerContainer(IMAGE)
        .with_command(["up", "--clock", "simulated", "--api-key", API_KEY])
        .with_exposed_ports(8080)
    )


def test_a_client_that_keeps_the_contract_gets_a_green_verdict():
    with stack() as c:
        base = f"http://{c.get_container_host_ip()}:{c.get_exposed_port(8080)}"
        wait_healthy(base)
        status, body = call(base, "POST", DEPLOYMENTS, deployment())
        assert status == 200, body
        assert body["status"] == "active"
        code, report = verdict(c)
        assert code == 0, report
        assert "PASS  deployments.create_deployment" in report, report


def test_a_misspelled_field_fails_the_verdict_and_names_it():
    with stack() as c:
        base = f"http://{c.get_container_host_ip()}:{c.get_exposed_port(8080)}"
        wait_healthy(base)
        status, _ = call(base, "POST", DEPLOYMENTS, deployment(desciption="misspelled"))
        assert status == 200  # the platform ignores the unknown field...
        code, report = verdict(c)
        assert code == 1, report  # ...but the verdict does not
        assert "desciption" in report, report
