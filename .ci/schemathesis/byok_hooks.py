"""Schemathesis hooks for the key service's run (loaded by .ci/schemathesis.sh).

A generated `encrypted_key` is a well-formed envelope that no alias of the service wrapped,
so `/decrypt-key` answers 422 DECRYPTION_FAILED (or 404 KEY_NOT_FOUND for a generated alias)
to almost every request the schema allows. Just before each request of the examples,
coverage and fuzzing phases is sent (`before_call`), these hooks put in a positive
`/decrypt-key` body an alias of the service and a key the service wrapped for it (asked once
of its admin API, `POST /_admin/keys/{alias}/wrap`), and in a positive `/rotate-key` body
that names an alias, an alias of the service. One request in KEEP_ONE_IN keeps what was
generated (chosen by a CRC of the body, so a seeded run stays reproducible), so the refusals
are still tested. The stateful phase is left alone: its link from `/rotate-key` to
`/decrypt-key` carries the key the rotation made. (That link's body is merged over the
generated one after Schemathesis generated it, and can undo a mutation meant to make it
invalid; the hook has Schemathesis judge such a body again, as it does bodies a hook changed,
so a valid key is not reported as invalid data accepted.)

`after_call` writes every request and its status to the tally (tally.py).

Environment (set by the script): KMS_URL, KMS_ADMIN_TOKEN, ST_TALLY, ST_DEBUG.
"""

from __future__ import annotations

import json
import os
import urllib.request
import zlib

import schemathesis
from schemathesis.core.parameters import ParameterLocation

import tally

KEEP_ONE_IN = 20
# The example configuration's enabled aliases (tenant-old is disabled: 403).
ALIASES = ("tenant-a", "tenant-b")
UNIT_PHASES = ("examples", "coverage", "fuzzing")

_WRAPPED: dict[str, str] = {}
# The service is local: no proxy of the environment in between.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def wrapped(alias: str) -> str:
    """A data key the service wrapped for `alias` (asked once)."""
    if alias not in _WRAPPED:
        request = urllib.request.Request(
            os.environ["KMS_URL"].rstrip("/") + f"/_admin/keys/{alias}/wrap",
            data=b"",
            method="POST",
            headers={"Authorization": f"Bearer {os.environ['KMS_ADMIN_TOKEN']}"},
        )
        with _OPENER.open(request, timeout=30) as answer:
            _WRAPPED[alias] = json.load(answer)["encrypted_key"]
    return _WRAPPED[alias]


def operation_id(case) -> str:
    return case.operation.definition.raw.get("operationId")


@schemathesis.hook
def before_call(ctx, case, kwargs):
    meta = case.meta
    if meta is None:
        return
    if str(meta.phase.name.value) == "stateful":
        # A link's body (the rotated key) is merged over the generated one after generation,
        # and may undo the mutation that made the case negative. Schemathesis judges again
        # what a hook changed; have it judge the body sent.
        if meta.is_negative_at(ParameterLocation.BODY):
            meta.mark_dirty(ParameterLocation.BODY)
        return
    if str(meta.phase.name.value) not in UNIT_PHASES or meta.is_negative_at(ParameterLocation.BODY):
        return
    op = operation_id(case)
    body = case.body
    data = body.get("data") if isinstance(body, dict) else None
    if op not in ("byok_decrypt_key", "byok_rotate_key") or not isinstance(data, dict):
        return
    crc = zlib.crc32(json.dumps([op, body], sort_keys=True, default=repr).encode())
    if crc % KEEP_ONE_IN == 0:
        return
    alias = ALIASES[(crc // KEEP_ONE_IN) % len(ALIASES)]
    if op == "byok_decrypt_key":
        data["key_alias"] = alias
        data["encrypted_key"] = wrapped(alias)
    elif "key_alias" in data:
        data["key_alias"] = alias


@schemathesis.hook
def after_call(ctx, case, response):
    detail = None
    positive = case.meta is not None and case.meta.generation.mode.value == "positive"
    if os.environ.get("ST_DEBUG") and positive and not 200 <= response.status_code < 300:
        detail = response.content[:300].decode(errors="replace")
    tally.record(case, response.status_code, None, detail)
