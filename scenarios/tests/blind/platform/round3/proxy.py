#!/usr/bin/env python3
"""Reverse proxy in front of the platform mock that breaks one rule of the contract.

Blind round 3: written from the interface spec, docs/interface.md and the README only.

    python3 proxy.py --upstream URL --listen 127.0.0.1:0 [--defect NAME]
                     [--webhook-secret S] [--list-defects] [--verbose]

Prints one line {"port": N} once listening.  Without --defect every request goes upstream
and every answer comes back unchanged (less hop-by-hop headers).  With --defect NAME one
rule is broken the way a real implementation could break it; see README.md and
`--list-defects`.  Python 3.11, standard library only.
"""

import argparse
import base64
import copy
import csv
import datetime as dt
import hashlib
import hmac
import http.client
import http.server
import io
import json
import re
import socketserver
import sys
import threading
import traceback
import urllib.parse
from zoneinfo import ZoneInfo, available_timezones

UTC = dt.timezone.utc
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
HOP_BY_HOP = {
    "connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer",
    "upgrade", "expect", "proxy-authenticate", "proxy-authorization",
}
HHMM = re.compile(r"^([01][0-9]|2[0-3]):[0-5][0-9]$")
TZ_NAMES = None  # filled lazily (available_timezones is slow-ish)


def tz_names():
    global TZ_NAMES
    if TZ_NAMES is None:
        TZ_NAMES = available_timezones()
    return TZ_NAMES


def dumps(obj):
    """Compact JSON as the platform writes it (serde_json: no spaces, UTF-8 as is)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def parse_time(s):
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00")).astimezone(UTC)


def fmt_time(t):
    t = t.astimezone(UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)


def b64url(s):
    return base64.urlsafe_b64encode(s.encode("utf-8")).decode("ascii").rstrip("=")


def unb64url(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4)).decode("utf-8")


# --------------------------------------------------------------------------------------
# Routes of the interface
# --------------------------------------------------------------------------------------

ORG = r"/orgs/(?P<org>[^/]+)/workspaces/(?P<ws>[^/]+)"
ROUTES = [
    ("outbound", r"^/api/outbounds/v1" + ORG + r"/outbounds/?$"),
    ("campaigns", r"^/api/scheduling/v1" + ORG + r"/campaigns/?$"),
    ("campaign_status", r"^/api/scheduling/v1" + ORG + r"/campaigns/(?P<cid>[^/]+)/status/?$"),
    ("cohort_upload", r"^/api/scheduling/v1" + ORG + r"/(?P<pkind>campaigns|deployments)/(?P<pid>[^/]+)/cohorts/upload/?$"),
    ("cohort_stream", r"^/api/scheduling/v1" + ORG + r"/(?P<pkind>campaigns|deployments)/(?P<pid>[^/]+)/cohorts/stream/?$"),
    ("cohorts", r"^/api/scheduling/v1" + ORG + r"/(?P<pkind>campaigns|deployments)/(?P<pid>[^/]+)/cohorts/?$"),
    ("cohort_file", r"^/api/scheduling/v1" + ORG + r"/(?P<pkind>campaigns|deployments)/(?P<pid>[^/]+)/cohorts/(?P<coh>[^/]+)/files/?$"),
    ("cohort", r"^/api/scheduling/v1" + ORG + r"/(?P<pkind>campaigns|deployments)/(?P<pid>[^/]+)/cohorts/(?P<coh>[^/]+)/?$"),
    ("campaign", r"^/api/scheduling/v1" + ORG + r"/campaigns/(?P<cid>[^/]+)/?$"),
    ("deployments", r"^/api/app-authoring/v1" + ORG + r"/deployments/?$"),
    ("deployment_status", r"^/api/app-authoring/v1" + ORG + r"/deployments/(?P<did>[^/]+)/status/?$"),
    ("deployment", r"^/api/app-authoring/v1" + ORG + r"/deployments/(?P<did>[^/]+)/?$"),
    ("inbound_calls", r"^/sim/v1" + ORG + r"/inbound-calls/?$"),
    ("deliveries", r"^/sim/v1" + ORG + r"/webhook-deliveries/?$"),
]
ROUTES = [(n, re.compile(p)) for n, p in ROUTES]


def match_route(path):
    for name, rx in ROUTES:
        m = rx.match(path)
        if m:
            return name, m.groupdict()
    return None, {}


class Ctx:
    """One client request."""

    def __init__(self, method, target, headers, body):
        self.method = method
        self.target = target
        split = urllib.parse.urlsplit(target)
        self.path = split.path
        self.query = split.query
        self.params = urllib.parse.parse_qsl(split.query, keep_blank_values=True)
        self.headers = headers  # list of (name, value), hop-by-hop removed
        self.body = body
        self.route, self.g = match_route(self.path)
        self.obj = None
        ct = self.header("content-type") or ""
        if body and ("json" in ct.lower()):
            try:
                self.obj = json.loads(body)
            except Exception:
                self.obj = None
        self.obj_orig = dumps(self.obj) if self.obj is not None else None
        self.key = self.header("x-api-key")
        self.host = self.header("host")
        self.note = {}

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def param(self, name, default=None):
        val = default
        for k, v in self.params:
            if k == name:
                val = v
        return val

    def set_param(self, name, value):
        ps = [(k, v) for k, v in self.params if k != name]
        if value is not None:
            ps.append((name, value))
        self.params = ps
        self.query = urllib.parse.urlencode(ps)
        self.target = self.path + ("?" + self.query if self.query else "")

    def is_api(self):
        return self.path.startswith("/api/")


class Resp:
    def __init__(self, status, reason, headers, body):
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
        self._obj = None
        self._parsed = False
        self._orig = None

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def set_header(self, name, value):
        self.headers = [(k, v) for k, v in self.headers if k.lower() != name.lower()]
        if value is not None:
            self.headers.append((name, value))

    @property
    def obj(self):
        if not self._parsed:
            self._parsed = True
            ct = (self.header("content-type") or "").lower()
            if self.body and "json" in ct:
                try:
                    self._obj = json.loads(self.body)
                    self._orig = dumps(self._obj)
                except Exception:
                    self._obj = None
        return self._obj

    @obj.setter
    def obj(self, value):
        self.obj  # parse first, to keep the original
        self._parsed = True
        self._obj = value

    def finish(self):
        """Serialise the JSON body again when a defect changed it."""
        if self._parsed and (self._obj is not None or self._orig is not None):
            new = dumps(self._obj)
            if new != self._orig:
                self.body = new

    def ok(self):
        return 200 <= self.status < 300


def json_resp(status, obj, reason=None):
    return Resp(status, reason or http.client.responses.get(status, ""), [("content-type", "application/json")], dumps(obj))


def iter_objs(obj):
    """The resource objects of an answer: the object itself and the items of a page."""
    if isinstance(obj, dict):
        yield obj
        items = obj.get("items")
        if isinstance(items, list):
            for it in items:
                if isinstance(it, dict):
                    yield it


# --------------------------------------------------------------------------------------
# Calling windows
# --------------------------------------------------------------------------------------

CAMPAIGN_FIELDS = {"key": "allowed_schedule", "tz": "timezone", "days": "allowed_days",
                   "start": "allowed_start_time", "end": "allowed_end_time"}
DEPLOYMENT_FIELDS = {"key": "inbound_config", "tz": "timezone", "days": "allowed_days",
                     "start": "start_time", "end": "end_time"}


def canon_day(name):
    if not isinstance(name, str):
        return None
    for d in WEEKDAYS:
        if d.lower() == name.lower():
            return d
    return None


def hm(s):
    return int(s[:2]) * 60 + int(s[3:5])


def hm_str(m):
    m %= 24 * 60
    return "%02d:%02d" % (m // 60, m % 60)


def sched_valid(s, f, allow_equal=False):
    """True when the schedule is one the platform takes (as far as this proxy knows)."""
    if not isinstance(s, dict):
        return False
    tz, days, start, end = s.get(f["tz"]), s.get(f["days"]), s.get(f["start"]), s.get(f["end"])
    if not isinstance(tz, str) or tz not in tz_names():
        return False
    if not isinstance(days, list) or not days or len(days) > 28 or any(canon_day(d) is None for d in days):
        return False
    if not isinstance(start, str) or not isinstance(end, str) or not HHMM.match(start) or not HHMM.match(end):
        return False
    if start == end and not allow_equal:
        return False
    return True


def sched_normal(s, f):
    """The schedule as the platform answers it: days deduplicated, in week order, spelt canonically."""
    days = sorted({canon_day(d) for d in s[f["days"]]}, key=WEEKDAYS.index)
    return {f["tz"]: s[f["tz"]], f["days"]: days, f["start"]: s[f["start"]], f["end"]: s[f["end"]]}


def offset_minutes(tzname, when):
    off = when.astimezone(ZoneInfo(tzname)).utcoffset()
    return int(off.total_seconds() // 60)


def etc_zone(minutes):
    """A fixed-offset IANA zone for a whole-hour offset (Etc/GMT signs are POSIX: inverted)."""
    if minutes % 60:
        return None
    h = minutes // 60
    name = "Etc/GMT" if h == 0 else "Etc/GMT%+d" % (-h)
    return name if name in tz_names() else None


def resolve_local(day, minutes, tz, which, gap_rule="after", fold_rule="doc"):
    """The instant of a local wall time on a date (docs/interface.md, Daylight saving)."""
    naive = dt.datetime.combine(day, dt.time()) + dt.timedelta(minutes=minutes)
    u0 = naive.replace(tzinfo=tz, fold=0).astimezone(UTC)
    u1 = naive.replace(tzinfo=tz, fold=1).astimezone(UTC)
    if u0 == u1:
        return u0
    if u0.astimezone(tz).replace(tzinfo=None) != naive:  # in a gap
        if gap_rule == "pre":
            return u0  # localised with the offset before the gap
        lo, hi = int(min(u0, u1).timestamp()), int(max(u0, u1).timestamp())
        off_lo = dt.datetime.fromtimestamp(lo, UTC).astimezone(tz).utcoffset()
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if dt.datetime.fromtimestamp(mid, UTC).astimezone(tz).utcoffset() == off_lo:
                lo = mid
            else:
                hi = mid
        return dt.datetime.fromtimestamp(hi, UTC)
    early, late = min(u0, u1), max(u0, u1)
    if which == "open":
        return early
    return late if fold_rule == "doc" else early


def window_open(cfg, f, t, gap_rule="after", fold_rule="doc", tail_own_day=False):
    tz = ZoneInfo(cfg[f["tz"]])
    days = {canon_day(d) for d in cfg[f["days"]]}
    s, e = hm(cfg[f["start"]]), hm(cfg[f["end"]])
    local = t.astimezone(tz)
    if tail_own_day and e <= s:
        tod = local.hour * 3600 + local.minute * 60 + local.second
        return WEEKDAYS[local.weekday()] in days and (tod >= s * 60 or tod < e * 60)
    for back in (2, 1, 0):
        d = local.date() - dt.timedelta(days=back)
        if WEEKDAYS[d.weekday()] not in days:
            continue
        o = resolve_local(d, s, tz, "open", gap_rule, fold_rule)
        c = resolve_local(d if e > s else d + dt.timedelta(days=1), e, tz, "close", gap_rule, fold_rule)
        if o <= t < c:
            return True
    return False


# --------------------------------------------------------------------------------------
# Defects
# --------------------------------------------------------------------------------------

DEFECTS = {}


def defect(name, rule, source, what, kind="error", half="window"):
    def deco(cls):
        cls.name = name
        cls.meta = {"name": name, "rule": rule, "source": source, "what": what, "kind": kind}
        cls.half = half
        DEFECTS[name] = cls
        return cls
    return deco


class Defect:
    events = False  # rewrite webhook URLs through the proxy

    def request(self, px, ctx):
        """May change ctx, or return a Resp to answer without going upstream."""
        return None

    def response(self, px, ctx, resp):
        pass

    def event(self, px, kind, obj, headers):
        """Event defects: change the event (obj) or the headers (dict); return the obj."""
        return obj

    def sign_body(self, px, body, obj):
        """The bytes the signature is computed over (the body itself, unless broken)."""
        return body


class Transparent(Defect):
    name = None


# ---- Half 1: calling windows --------------------------------------------------------

class Refuse(Exception):
    def __init__(self, detail):
        self.detail = detail


class Sched(Defect):
    """Alters a schedule going up, remembers the client's, and restores it in answers."""

    target = "campaign"

    @property
    def f(self):
        return CAMPAIGN_FIELDS if self.target == "campaign" else DEPLOYMENT_FIELDS

    allow_equal = False

    def transform(self, px, ctx, s):
        """s: the client's schedule (valid). Return the schedule to send, or raise Refuse."""
        return s

    def transform_none(self, px, ctx, creating):
        """The client sent no schedule (create) or null (PATCH). Return what to send, or
        the marker KEEP to send nothing different."""
        return KEEP

    def _writes(self, ctx):
        if self.target == "campaign":
            return (ctx.route == "campaigns" and ctx.method == "POST") or (ctx.route == "campaign" and ctx.method == "PATCH")
        return (ctx.route == "deployments" and ctx.method == "POST") or (ctx.route == "deployment" and ctx.method == "PATCH")

    def request(self, px, ctx):
        if not self._writes(ctx) or not isinstance(ctx.obj, dict):
            return None
        f = self.f
        creating = ctx.method == "POST"
        present = f["key"] in ctx.obj
        s = ctx.obj.get(f["key"])
        if s is None:
            if creating or present:
                new = self.transform_none(px, ctx, creating)
                if new is not KEEP:
                    ctx.note["sched"] = None
                    if new is DROP:
                        ctx.obj.pop(f["key"], None)
                    else:
                        ctx.obj[f["key"]] = new
            return None
        if not sched_valid(s, f, allow_equal=self.allow_equal):
            return None
        try:
            new = self.transform(px, ctx, copy.deepcopy(s))
        except Refuse as r:
            return json_resp(422, {"detail": r.detail}, "Unprocessable Entity")
        if new is DROP:
            ctx.obj.pop(f["key"], None)
        else:
            ctx.obj[f["key"]] = new
        ctx.note["sched"] = sched_normal(s, f)
        return None

    def response(self, px, ctx, resp):
        f = self.f
        if self._writes(ctx) and resp.ok() and "sched" in ctx.note and isinstance(resp.obj, dict):
            rid = resp.obj.get("campaign_id" if self.target == "campaign" else "deployment_id")
            if rid:
                px.sched_mem[rid] = ctx.note["sched"]
        if not ctx.is_api() or not isinstance(resp.obj, (dict, list)):
            return
        idkey = "campaign_id" if self.target == "campaign" else "deployment_id"
        for o in iter_objs(resp.obj):
            rid = o.get(idkey)
            if rid in px.sched_mem and f["key"] in o:
                want = px.sched_mem[rid]
                if want is None:
                    o[f["key"]] = None
                elif isinstance(o[f["key"]], dict):
                    o[f["key"]] = {k: want.get(k, v) for k, v in o[f["key"]].items()}
                else:
                    o[f["key"]] = dict(want)


KEEP = object()
DROP = object()


def ref_time(px, ctx):
    """The platform's now (simulated clock when it has one)."""
    st, obj = px.call("GET", "/sim/v1/clock", ctx)
    if st == 200 and isinstance(obj, dict) and "now" in obj:
        try:
            return parse_time(obj["now"])
        except Exception:
            pass
    return dt.datetime.now(UTC)


class TzToUtc(Sched):
    def transform(self, px, ctx, s):
        s[self.f["tz"]] = "UTC"
        return s


class TzSignInverted(Sched):
    def transform(self, px, ctx, s):
        off = offset_minutes(s[self.f["tz"]], ref_time(px, ctx))
        z = etc_zone(-off)
        if off and z:
            s[self.f["tz"]] = z
        return s


class HalfHourTruncated(Sched):
    def transform(self, px, ctx, s):
        off = offset_minutes(s[self.f["tz"]], ref_time(px, ctx))
        if off % 60:
            whole = int(off / 60) * 60  # towards zero, as int(hours) does
            z = etc_zone(whole)
            if z:
                s[self.f["tz"]] = z
        return s


class DstFixedStandard(Sched):
    hemisphere = "north"

    def transform(self, px, ctx, s):
        tz = s[self.f["tz"]]
        year = ref_time(px, ctx).year
        jan = offset_minutes(tz, dt.datetime(year, 1, 15, 12, tzinfo=UTC))
        jul = offset_minutes(tz, dt.datetime(year, 7, 15, 12, tzinfo=UTC))
        if self.hemisphere == "north" and jul > jan:
            z = etc_zone(jan)
        elif self.hemisphere == "south" and jan > jul:
            z = etc_zone(jul)
        else:
            z = None
        if z:
            s[self.f["tz"]] = z
        return s


def enum_detail(f, s, idxs, days_loc):
    return [{"loc": days_loc + [i], "msg": "Input should be 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday' or 'Sunday'",
             "type": "enum"} for i in idxs]


class DaysAll(Sched):
    def transform(self, px, ctx, s):
        s[self.f["days"]] = list(WEEKDAYS)
        return s


class DayMapped(Sched):
    """Each allowed day is matched as another day (mapping table or index base wrong)."""

    mapping = {}

    def transform(self, px, ctx, s):
        out = []
        for d in s[self.f["days"]]:
            c = self.mapping.get(canon_day(d), canon_day(d))
            if c not in out:
                out.append(c)
        s[self.f["days"]] = out
        return s


class DaysDropped(Sched):
    """Some spellings of day names never match; a list left empty is refused as the enum would."""

    def drops(self, name):
        return False

    def transform(self, px, ctx, s):
        days = s[self.f["days"]]
        keep = [d for d in days if not self.drops(d)]
        if not keep:
            loc = ["body", self.f["key"], self.f["days"]]
            raise Refuse(enum_detail(self.f, s, range(len(days)), loc))
        s[self.f["days"]] = keep
        return s


class OvernightCut(Sched):
    def transform(self, px, ctx, s):
        f = self.f
        if s[f["end"]] != "00:00" and hm(s[f["end"]]) < hm(s[f["start"]]):
            s[f["end"]] = "00:00"
        return s


class EndInclusive(Sched):
    def transform(self, px, ctx, s):
        f = self.f
        new_end = hm_str(hm(s[f["end"]]) + 1)
        if new_end != s[f["start"]]:
            s[f["end"]] = new_end
        return s


# ---------- campaign windows

@defect("campaign_timezone_ignored",
        "Calls are placed only inside allowed_schedule (timezone, days, time range)",
        "spec: What the service does 2; interface.md: `allowed_schedule` field names",
        "a campaign's allowed_schedule.timezone is ignored: the window is read in UTC (the answer still shows the client's zone)")
class CampaignTzUtc(TzToUtc):
    target = "campaign"


@defect("campaign_timezone_sign_inverted",
        "Calls are placed only inside allowed_schedule (timezone, days, time range)",
        "spec: What the service does 2; interface.md: Time zones",
        "the zone's UTC offset is applied with the wrong sign (UTC-5 read as UTC+5, the POSIX Etc/GMT+N trap)")
class CampaignTzSign(TzSignInverted):
    target = "campaign"


@defect("campaign_half_hour_zone_truncated",
        "Calls are placed only inside allowed_schedule (timezone, days, time range)",
        "spec: What the service does 2; interface.md: Time zones (IANA names)",
        "zones with a non-whole-hour offset (Asia/Kolkata +05:30) are read with the offset truncated to whole hours (+05:00)")
class CampaignHalfHour(HalfHourTruncated):
    target = "campaign"


@defect("campaign_dst_ignored_north",
        "Calls are placed only inside allowed_schedule (timezone, days, time range)",
        "spec: What the service does 2; interface.md: Daylight saving, Time zones",
        "a northern-hemisphere zone with daylight saving (America/New_York) is read with its standard offset all year")
class CampaignDstNorth(DstFixedStandard):
    target = "campaign"
    hemisphere = "north"


@defect("campaign_dst_ignored_south",
        "Calls are placed only inside allowed_schedule (timezone, days, time range)",
        "spec: What the service does 2; interface.md: Daylight saving, Time zones",
        "a southern-hemisphere zone with daylight saving (Australia/Sydney) is read with its standard offset all year")
class CampaignDstSouth(DstFixedStandard):
    target = "campaign"
    hemisphere = "south"


@defect("campaign_allowed_days_ignored",
        "Calls are placed only inside allowed_schedule (timezone, days, time range)",
        "spec: What the service does 2; interface.md: Calling windows",
        "allowed_days is stored but not consulted: the window opens on every day of the week")
class CampaignDaysAll(DaysAll):
    target = "campaign"


@defect("campaign_sunday_as_saturday",
        "Calls are placed only inside allowed_schedule (timezone, days, time range)",
        "spec: What the service does 2; interface.md: Weekday names",
        "one entry of the day table is off by one: an allowed Sunday is dialled as Saturday")
class CampaignSunday(DayMapped):
    target = "campaign"
    mapping = {"Sunday": "Saturday"}


@defect("campaign_weekday_case_sensitive",
        "Weekday names: English, case-insensitive on input, answered as Monday ... Sunday",
        "interface.md: Time, calling windows, numbers: Weekday names",
        "a day name not spelt exactly `Monday`...`Sunday` (`monday`) is accepted but never matches a day (a list of only such names is refused as an enum)",
        kind="assumed")
class CampaignCase(DaysDropped):
    target = "campaign"

    def drops(self, name):
        return name not in WEEKDAYS


@defect("campaign_weekday_abbreviation_table",
        "Calls are placed only inside allowed_schedule (timezone, days, time range)",
        "spec: What the service does 2; interface.md: Weekday names",
        "day names are looked up by their first three letters in a table spelt Mon/Tues/Wed/Thurs/...: Tuesday and Thursday never match")
class CampaignAbbrev(DaysDropped):
    target = "campaign"

    def drops(self, name):
        return canon_day(name) in ("Tuesday", "Thursday")


@defect("campaign_overnight_cut_at_midnight",
        "Calling windows: when the end is not after the start the window closes the next day (overnight windows are supported)",
        "interface.md: Time, calling windows, numbers: Calling windows",
        "an overnight window (22:00-02:00) closes at midnight; the part after midnight is never dialled",
        kind="assumed")
class CampaignOvernightCut(OvernightCut):
    target = "campaign"


@defect("campaign_overnight_refused",
        "Calling windows: overnight windows are supported; only start equal to end is refused",
        "interface.md: Time, calling windows, numbers: Calling windows",
        "a window whose end is earlier than its start is refused with 422 (end must be after start)",
        kind="assumed")
class CampaignOvernightRefused(Sched):
    target = "campaign"

    def transform(self, px, ctx, s):
        f = self.f
        if s[f["end"]] != "00:00" and hm(s[f["end"]]) < hm(s[f["start"]]):
            raise Refuse([{"loc": ["body", f["key"], f["end"]],
                           "msg": "Value error, %s must be after %s" % (f["end"], f["start"]),
                           "type": "value_error"}])
        return s


@defect("campaign_equal_times_accepted",
        "Calling windows: start equal to end is refused",
        "interface.md: Time, calling windows, numbers: Calling windows; The OpenAPI documents (distinct window ends)",
        "allowed_start_time equal to allowed_end_time is accepted (read as a whole day less a minute) instead of a 422",
        kind="assumed")
class CampaignEqualAccepted(Sched):
    target = "campaign"
    allow_equal = True

    def transform(self, px, ctx, s):
        f = self.f
        if s[f["start"]] == s[f["end"]]:
            s[f["end"]] = hm_str(hm(s[f["start"]]) - 1)
        return s


@defect("campaign_window_end_inclusive",
        "Calls are placed only inside allowed_schedule; the window closes at the end time",
        "spec: What the service does 2; interface.md: Calling windows, Dialling: Calling window",
        "the end is compared as HH:MM with <=, so the whole minute starting at allowed_end_time is still dialled",
        kind="assumed")
class CampaignEndInclusive(EndInclusive):
    target = "campaign"


@defect("campaign_midnight_end_as_2359",
        "Calling windows: `00:00` as the end means midnight",
        "interface.md: Time, calling windows, numbers: Calling windows",
        "an end of 00:00 is stored as 23:59, so the last minute before midnight is never dialled",
        kind="assumed")
class CampaignMidnight(Sched):
    target = "campaign"

    def transform(self, px, ctx, s):
        f = self.f
        if s[f["end"]] == "00:00" and s[f["start"]] != "23:59":
            s[f["end"]] = "23:59"
        return s


@defect("campaign_patch_schedule_ignored",
        "Campaign PATCH applies while scheduled or paused (allowed_schedule among its fields)",
        "interface.md: Fields the spec marks \"not shown\": Campaign PATCH; spec: What the service does 2",
        "a PATCH of allowed_schedule is answered (and read back) with the new schedule, but dialling keeps the old one")
class CampaignPatchSchedIgnored(Sched):
    target = "campaign"

    def _writes(self, ctx):
        return (ctx.route == "campaign" and ctx.method == "PATCH") or (ctx.route == "campaigns" and ctx.method == "POST")

    def transform(self, px, ctx, s):
        if ctx.method == "PATCH":
            return DROP
        return s


# ---------- deployment (inbound) windows

@defect("inbound_timezone_ignored",
        "An inbound call is answered only inside the deployment's schedule (inbound_config.timezone)",
        "spec: What the service does 3, Deployment InboundConfig; interface.md: Inbound calls: Schedule rules",
        "a deployment's inbound_config.timezone is ignored: the schedule is read in UTC")
class DepTzUtc(TzToUtc):
    target = "deployment"


@defect("inbound_timezone_sign_inverted",
        "An inbound call is answered only inside the deployment's schedule (inbound_config.timezone)",
        "spec: What the service does 3; interface.md: Inbound calls: Schedule rules",
        "the inbound schedule's UTC offset is applied with the wrong sign")
class DepTzSign(TzSignInverted):
    target = "deployment"


@defect("inbound_half_hour_zone_truncated",
        "An inbound call is answered only inside the deployment's schedule (inbound_config.timezone)",
        "spec: What the service does 3; interface.md: Inbound calls: Schedule rules",
        "an inbound schedule in Asia/Kolkata (+05:30) is read at +05:00")
class DepHalfHour(HalfHourTruncated):
    target = "deployment"


@defect("inbound_dst_ignored_south",
        "An inbound call is answered only inside the deployment's schedule (inbound_config.timezone)",
        "spec: What the service does 3; interface.md: Inbound calls: Schedule rules (daylight saving)",
        "an inbound schedule in a southern zone with daylight saving (Australia/Sydney) is read at its standard offset all year")
class DepDstSouth(DstFixedStandard):
    target = "deployment"
    hemisphere = "south"


@defect("inbound_weekdays_shifted",
        "An inbound call is answered only inside the deployment's schedule (inbound_config.allowed_days)",
        "spec: What the service does 3, InboundConfig allowed_days; interface.md: Weekday names",
        "weekday indexes are Monday-first on one side and Sunday-first on the other: every allowed day is matched one day early")
class DepShift(DayMapped):
    target = "deployment"
    mapping = {WEEKDAYS[i]: WEEKDAYS[(i - 1) % 7] for i in range(7)}


@defect("inbound_weekday_case_sensitive",
        "Weekday names: English, case-insensitive on input, answered as Monday ... Sunday",
        "interface.md: Time, calling windows, numbers: Weekday names; Inbound calls: Schedule rules",
        "an inbound schedule's day written `monday` is accepted but never matches (a list of only such names is refused)",
        kind="assumed")
class DepCase(DaysDropped):
    target = "deployment"

    def drops(self, name):
        return name not in WEEKDAYS


@defect("inbound_overnight_cut_at_midnight",
        "inbound_config is read as a calling window with the same rules as campaign windows (overnight)",
        "interface.md: Inbound calls: Schedule rules; Calling windows",
        "an overnight inbound schedule (22:00-02:00) stops answering at midnight",
        kind="assumed")
class DepOvernightCut(OvernightCut):
    target = "deployment"


@defect("inbound_end_inclusive",
        "An inbound call is answered only inside the deployment's schedule (end_time closes it)",
        "spec: What the service does 3; interface.md: Inbound calls: Schedule rules",
        "end_time is compared as HH:MM with <=: calls in the minute starting at end_time are still answered",
        kind="assumed")
class DepEndInclusive(EndInclusive):
    target = "deployment"


@defect("inbound_patch_null_schedule_kept",
        "Deployment PATCH: `null` clears inbound_config (then calls are answered at all times)",
        "interface.md: The spec's numbered open points 4 (null semantics assumed); spec: What the service does 3",
        "PATCH inbound_config: null is answered as null but the old schedule keeps refusing calls",
        kind="assumed")
class DepPatchNullKept(Sched):
    target = "deployment"

    def transform_none(self, px, ctx, creating):
        return KEEP if creating else DROP


@defect("inbound_default_business_hours",
        "Without inbound_config a deployment accepts calls at all times",
        "spec: What the service does 3",
        "a deployment created without inbound_config gets a hidden default of 09:00-17:00 UTC Monday to Friday")
class DepDefaultHours(Sched):
    target = "deployment"

    def transform_none(self, px, ctx, creating):
        if not creating:
            return KEEP
        return {"start_time": "09:00", "end_time": "17:00", "allowed_days": WEEKDAYS[:5], "timezone": "UTC"}


class InboundOverride(Defect):
    """At each simulated inbound call, decide with a defective window rule; when it differs
    from the documented rule, make the platform give the defective answer by switching the
    deployment's schedule for the one call (and hiding the switch from every answer)."""

    gap_rule = "after"
    fold_rule = "doc"
    tail_own_day = False

    def request(self, px, ctx):
        if ctx.route != "inbound_calls" or ctx.method != "POST" or not isinstance(ctx.obj, dict):
            return None
        dialled = ctx.obj.get("dialled")
        if not isinstance(dialled, str):
            return None
        g = ctx.g
        base = "/api/app-authoring/v1/orgs/%s/workspaces/%s/deployments" % (g["org"], g["ws"])
        st, page = px.call("GET", base + "?limit=100&search=" + urllib.parse.quote(dialled, safe=""), ctx)
        if st != 200 or not isinstance(page, dict):
            return None
        dep = None
        for it in page.get("items") or []:
            if dialled in (it.get("phone_numbers") or []):
                dep = it
        if not dep or dep.get("status") != "active" or not isinstance(dep.get("inbound_config"), dict):
            return None
        cfg = dep["inbound_config"]
        f = DEPLOYMENT_FIELDS
        if not sched_valid(cfg, f):
            return None
        now = ref_time(px, ctx)
        right = window_open(cfg, f, now)
        wrong = window_open(cfg, f, now, self.gap_rule, self.fold_rule, self.tail_own_day)
        if right == wrong:
            return None
        did = dep["deployment_id"]
        if did not in px.hidden:
            px.hidden[did] = {"visible": (dep.get("updated_at"), dep.get("updated_by")), "stamps": set()}
        if wrong:
            tmp = None
        else:
            day = WEEKDAYS[(now.weekday() + 3) % 7]
            tmp = {"start_time": "00:00", "end_time": "00:01", "allowed_days": [day], "timezone": "UTC"}
        path = base + "/" + did
        st1, a = px.call("PATCH", path, ctx, {"inbound_config": tmp})
        ctx.note["restore"] = (path, cfg, did)
        if st1 == 200 and isinstance(a, dict):
            px.hidden[did]["stamps"].add(a.get("updated_at"))
        return None

    def response(self, px, ctx, resp):
        if "restore" in ctx.note:
            path, cfg, did = ctx.note["restore"]
            st, a = px.call("PATCH", path, ctx, {"inbound_config": cfg})
            if st == 200 and isinstance(a, dict):
                px.hidden[did]["stamps"].add(a.get("updated_at"))
            return
        if ctx.route in ("deployment", "deployment_status") and ctx.method in ("PATCH", "PUT") and resp.ok():
            px.hidden.pop(ctx.g.get("did"), None)
            return
        if not ctx.is_api() or not isinstance(resp.obj, dict):
            return
        for o in iter_objs(resp.obj):
            h = px.hidden.get(o.get("deployment_id"))
            if h and o.get("updated_at") in h["stamps"]:
                o["updated_at"], o["updated_by"] = h["visible"]


@defect("inbound_dst_gap_opening_late",
        "Daylight saving: a local time in a spring-forward gap resolves to the first instant after the gap",
        "interface.md: Time, calling windows, numbers: Daylight saving; Inbound calls: Schedule rules",
        "an inbound schedule opening inside the skipped hour (02:30 on the spring-forward night) is localised with the offset before the gap, so it opens 03:30 instead of 03:00",
        kind="assumed")
class DepDstGap(InboundOverride):
    gap_rule = "pre"


@defect("inbound_dst_fold_closing_early",
        "Daylight saving: an ambiguous local time resolves to the later instant for a closing",
        "interface.md: Time, calling windows, numbers: Daylight saving; Inbound calls: Schedule rules",
        "an inbound schedule closing inside the repeated hour (01:30 on the fall-back night) closes at the first 01:30, an hour early",
        kind="assumed")
class DepDstFold(InboundOverride):
    fold_rule = "early"


@defect("inbound_overnight_tail_own_day",
        "Calling windows: the opening day must be allowed (an overnight window belongs to the day it opens)",
        "interface.md: Time, calling windows, numbers: Calling windows; Inbound calls: Schedule rules",
        "the hours after midnight of an overnight inbound schedule are judged by the weekday they fall on, not the day the window opened",
        kind="assumed")
class DepOvernightOwnDay(InboundOverride):
    tail_own_day = True


# ---- Half 2: values and exactness ---------------------------------------------------

OFFSET_TS = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?)([+-])(\d\d):?(\d\d)$")


@defect("campaign_timestamp_offset_dropped",
        "start_timestamp / end_timestamp are ISO 8601 date-times; the campaign starts and ends at those instants",
        "spec: Campaign create fields; States: scheduled -> active when start_timestamp is reached",
        "a start or end written with a non-zero UTC offset (+05:30) keeps its wall time and loses the offset (read as UTC)",
        half="values")
class TsOffsetDropped(Defect):
    def request(self, px, ctx):
        if not isinstance(ctx.obj, dict):
            return None
        if not ((ctx.route == "campaigns" and ctx.method == "POST") or (ctx.route == "campaign" and ctx.method == "PATCH")):
            return None
        for k in ("start_timestamp", "end_timestamp"):
            v = ctx.obj.get(k)
            if isinstance(v, str):
                m = OFFSET_TS.match(v)
                if m and (m.group(3), m.group(4)) != ("00", "00"):
                    ctx.obj[k] = m.group(1) + "Z"
        return None


@defect("deployment_patch_clears_description",
        "PATCH /deployments/{id} is a partial update: fields it does not name keep their values",
        "spec: Endpoints: Deployments (PATCH partial update); interface.md: open point 4",
        "a deployment PATCH that does not name description clears it (the handler builds the row from the body)",
        half="values")
class DepPatchClearsDesc(Defect):
    def request(self, px, ctx):
        if ctx.route == "deployment" and ctx.method == "PATCH" and isinstance(ctx.obj, dict) and "description" not in ctx.obj:
            ctx.obj["description"] = None
        return None


@defect("campaign_patch_retry_config_reset",
        "Campaign PATCH: omitted retry_config fields keep their values",
        "interface.md: Fields the spec marks \"not shown\": Campaign PATCH",
        "a PATCH naming only some retry_config fields resets the others to their defaults (retry_on emptied, threshold 10)",
        kind="assumed", half="values")
class CampPatchRetryReset(Defect):
    def request(self, px, ctx):
        if ctx.route == "campaign" and ctx.method == "PATCH" and isinstance(ctx.obj, dict):
            ac = ctx.obj.get("app_config")
            rc = ac.get("retry_config") if isinstance(ac, dict) else None
            if isinstance(rc, dict):
                defaults = {"max_retries": 0, "retry_on": [], "threshold_seconds": 10, "retry_interval_minutes": 30}
                if isinstance(rc.get("retry_on"), dict):
                    defaults.pop("threshold_seconds")
                for k, v in defaults.items():
                    rc.setdefault(k, v)
        return None


@defect("deployment_list_phone_numbers_first_connection",
        "Deployment list items additionally show phone_numbers (every number of every connection)",
        "spec: Deployment response (list items show phone_numbers); interface.md: Deployment connection config",
        "a list item's phone_numbers holds only the numbers of its first connection",
        half="values")
class DepListPhones(Defect):
    def response(self, px, ctx, resp):
        if ctx.route == "deployments" and ctx.method == "GET" and resp.ok() and isinstance(resp.obj, dict):
            for it in resp.obj.get("items") or []:
                cc = it.get("connection_configs") or []
                if len(cc) > 1 and isinstance(cc[0], dict):
                    it["phone_numbers"] = list(cc[0].get("phone_numbers") or [])


@defect("deployment_list_total_is_page_size",
        "Paginated deployment list: total is the number of matches for the query",
        "spec: Paginated deployment list (total)",
        "total counts the items of this page instead of every match",
        half="values")
class DepListTotal(Defect):
    def response(self, px, ctx, resp):
        if ctx.route == "deployments" and ctx.method == "GET" and resp.ok() and isinstance(resp.obj, dict):
            items = resp.obj.get("items")
            if isinstance(items, list):
                resp.obj["total"] = len(items)


def strip_query(uri, keep=("offset", "limit")):
    s = urllib.parse.urlsplit(uri)
    ps = [(k, v) for k, v in urllib.parse.parse_qsl(s.query, keep_blank_values=True) if k in keep]
    return urllib.parse.urlunsplit((s.scheme, s.netloc, s.path, urllib.parse.urlencode(ps), s.fragment))


def with_offset(uri, offset):
    s = urllib.parse.urlsplit(uri)
    ps = [(k, str(offset) if k == "offset" else v) for k, v in urllib.parse.parse_qsl(s.query, keep_blank_values=True)]
    return urllib.parse.urlunsplit((s.scheme, s.netloc, s.path, urllib.parse.urlencode(ps), s.fragment))


@defect("deployment_page_uris_drop_query",
        "next_page_uri / prev_page_uri lead to the next / previous page of the same query",
        "spec: Paginated deployment list; README: Pagination (page URIs keep the other query parameters)",
        "the page URIs keep only offset and limit: following them loses search, sort_by and sort_order",
        half="values")
class DepUrisDropQuery(Defect):
    def response(self, px, ctx, resp):
        if ctx.route == "deployments" and ctx.method == "GET" and resp.ok() and isinstance(resp.obj, dict):
            for k in ("next_page_uri", "prev_page_uri"):
                if isinstance(resp.obj.get(k), str):
                    resp.obj[k] = strip_query(resp.obj[k])


@defect("deployment_prev_page_uri_negative_offset",
        "prev_page_uri leads to the previous page (offset is at least 0)",
        "spec: Paginated deployment list (prev_page_uri), List query parameters (offset at least 0)",
        "prev_page_uri is offset - limit without clamping: from offset 3 with limit 5 it points at offset=-2, which the platform itself refuses",
        half="values")
class DepPrevNegative(Defect):
    def response(self, px, ctx, resp):
        if ctx.route == "deployments" and ctx.method == "GET" and resp.ok() and isinstance(resp.obj, dict):
            o = resp.obj
            off, lim = o.get("offset"), o.get("limit")
            if isinstance(off, int) and isinstance(lim, int) and 0 < off < lim and isinstance(o.get("prev_page_uri"), str):
                o["prev_page_uri"] = with_offset(o["prev_page_uri"], off - lim)


def page_uri(ctx, offset, limit):
    ps = [(k, v) for k, v in ctx.params if k not in ("offset", "limit")]
    ps += [("offset", str(offset)), ("limit", str(limit))]
    return "http://%s%s?%s" % (ctx.host, ctx.path, urllib.parse.urlencode(ps))


@defect("campaign_next_page_uri_on_exact_last_page",
        "next_page_uri is null on the last page",
        "spec: Paginated list (next_page_uri null on the last page); interface.md: Campaign list (the paginated list shape)",
        "when the last page is exactly full (offset + limit == total) next_page_uri still points at an empty page (<= instead of <)",
        half="values")
class CampNextExact(Defect):
    def response(self, px, ctx, resp):
        if ctx.route == "campaigns" and ctx.method == "GET" and resp.ok() and isinstance(resp.obj, dict):
            o = resp.obj
            items, total, off, lim = o.get("items"), o.get("total"), o.get("offset"), o.get("limit")
            if o.get("next_page_uri") is None and isinstance(items, list) and items and isinstance(total, int) \
                    and isinstance(off, int) and isinstance(lim, int) and off + lim == total and len(items) == lim:
                o["next_page_uri"] = page_uri(ctx, off + lim, lim)


@defect("deployment_search_crosses_workspaces",
        "Every platform endpoint requires the X-API-Key of the workspace; lists show only that workspace's items",
        "spec: Authentication 1; interface.md: Scopes (keys per org and workspace); The platform check: Lists of two workspaces",
        "a deployment list with `search` also shows matching deployments of the org's other workspaces (the search query forgot the workspace filter)",
        half="values")
class DepSearchCross(Defect):
    def response(self, px, ctx, resp):
        if ctx.route != "deployments" or ctx.method != "GET" or not resp.ok() or not isinstance(resp.obj, dict):
            return
        search = ctx.param("search")
        if not search:
            return
        org, ws = ctx.g["org"], ctx.g["ws"]
        extra = []
        for (o2, w2), key in list(px.keys.items()):
            if o2 != org or w2 == ws:
                continue
            path = "/api/app-authoring/v1/orgs/%s/workspaces/%s/deployments?limit=100&search=%s" % (
                o2, w2, urllib.parse.quote(search, safe=""))
            st, page = px.call("GET", path, ctx, key=key)
            if st == 200 and isinstance(page, dict):
                extra += page.get("items") or []
        if extra:
            items = resp.obj.get("items") or []
            room = max(0, (resp.obj.get("limit") or 20) - len(items))
            resp.obj["items"] = items + extra[:room]
            resp.obj["total"] = (resp.obj.get("total") or 0) + len(extra)


@defect("campaign_cohort_list_shows_other_campaigns",
        "A cohort is uploaded to one campaign; the campaign's cohort list shows that campaign's cohorts",
        "spec: Cohort (uploaded to a campaign or a deployment); interface.md: Cohort list",
        "a campaign's cohort list also shows the cohorts of the workspace's other campaigns (the query filters by workspace only)",
        half="values")
class CohortListOthers(Defect):
    def response(self, px, ctx, resp):
        if ctx.route != "cohorts" or ctx.method != "GET" or ctx.g["pkind"] != "campaigns" or not resp.ok() \
                or not isinstance(resp.obj, dict):
            return
        g = ctx.g
        extra = []
        for coh, (o2, w2, pk, pid) in list(px.cohorts.items()):
            if (o2, w2, pk) != (g["org"], g["ws"], "campaigns") or pid == g["pid"]:
                continue
            st, c = px.call("GET", "/api/scheduling/v1/orgs/%s/workspaces/%s/campaigns/%s/cohorts/%s" % (o2, w2, pid, coh), ctx)
            if st == 200 and isinstance(c, dict):
                extra.append(c)
        if extra:
            items = resp.obj.get("items") or []
            room = max(0, (resp.obj.get("limit") or 20) - len(items))
            resp.obj["items"] = items + extra[:room]
            resp.obj["total"] = (resp.obj.get("total") or 0) + len(extra)


@defect("rejected_records_values_trimmed",
        "Rejected records file: the original columns plus rejected_reason, each rejected row with its original field values",
        "interface.md: open point 7 (ref: original columns plus rejected_reason); Cohorts: Rejected records file",
        "the rejected-records file is written from the parsed rows: spaces around each value are trimmed, so the file no longer holds the values as uploaded",
        kind="assumed", half="values")
class RejectedTrimmed(Defect):
    def response(self, px, ctx, resp):
        if ctx.route != "cohort_file" or ctx.method != "GET" or resp.status != 200 or ctx.param("file_type") != "rejected_records":
            return
        text = resp.body.decode("utf-8", "replace")
        nl = "\r\n" if "\r\n" in text else "\n"
        rows = list(csv.reader(io.StringIO(text)))
        if not any(c != c.strip() for r in rows[1:] for c in r):
            return
        out = io.StringIO()
        w = csv.writer(out, lineterminator=nl)
        w.writerow(rows[0])
        for r in rows[1:]:
            w.writerow([c.strip() for c in r[:-1]] + r[-1:])
        resp.body = out.getvalue().encode("utf-8")


@defect("cohort_file_line_endings_normalised",
        "Cohort file `cohort`: the CSV byte for byte as uploaded",
        "interface.md: Cohorts: Files",
        "the uploaded CSV is stored through a text-mode reader: CRLF line endings come back as LF",
        kind="assumed", half="values")
class CohortFileNewlines(Defect):
    def response(self, px, ctx, resp):
        if ctx.route == "cohort_file" and ctx.method == "GET" and resp.status == 200 and ctx.param("file_type") == "cohort":
            resp.body = resp.body.replace(b"\r\n", b"\n")


@defect("cohort_total_records_counts_header",
        "Cohort result: total_records, valid_records, rejected_records count the data rows (total = valid + rejected)",
        "interface.md: Cohort record fields (result); Row numbers (data rows count after the header)",
        "total_records counts the CSV's lines, the header included: one more than valid + rejected",
        half="values")
class CohortTotalHeader(Defect):
    def response(self, px, ctx, resp):
        if ctx.route in ("cohorts", "cohort", "cohort_upload", "cohort_stream") and resp.ok():
            for o in iter_objs(resp.obj):
                r = o.get("result")
                if "cohort_id" in o and isinstance(r, dict) and isinstance(r.get("total_records"), int):
                    r["total_records"] += 1


@defect("attempt_budget_ignores_retries",
        "Rule 3: effective attempt budget = cohort_size x (1 + max_retries)",
        "spec: Rules 3; interface.md: Statistics (attempt_budget)",
        "statistics.attempt_budget is the number of users, without the retries (and the capacity warning follows it)",
        half="values")
class BudgetNoRetries(Defect):
    def response(self, px, ctx, resp):
        if not ctx.is_api() or not isinstance(resp.obj, dict):
            return
        for o in iter_objs(resp.obj):
            st = o.get("statistics")
            if isinstance(st, dict) and isinstance(st.get("users_total"), int):
                st["attempt_budget"] = st["users_total"]
                cap = st.get("attempt_capacity")
                if isinstance(cap, int) and st["attempt_budget"] <= cap:
                    st["capacity_warning"] = None


@defect("cohort_upload_answers_202",
        "Success status codes: 200 with a JSON body everywhere (DELETE 204)",
        "interface.md: open point 6 (ref: 200)",
        "the cohort upload, processed asynchronously, answers 202 Accepted instead of 200",
        half="values")
class Upload202(Defect):
    def response(self, px, ctx, resp):
        if ctx.route == "cohort_upload" and resp.status == 200:
            resp.status, resp.reason = 202, "Accepted"


@defect("deployment_app_version_float_after_patch",
        "app_version is an integer (agent version)",
        "spec: Deployment response app_version integer; Endpoints: PATCH accepts app_version (integer)",
        "after a PATCH of app_version the value is stored as a float and answered as 2.0",
        half="values")
class DepVersionFloat(Defect):
    def response(self, px, ctx, resp):
        if ctx.route == "deployment" and ctx.method == "PATCH" and resp.ok() and isinstance(ctx.obj, dict) \
                and isinstance(ctx.obj.get("app_version"), int):
            px.flags.setdefault("float", set()).add(ctx.g["did"])
        ids = px.flags.get("float", set())
        if not ids or not ctx.is_api() or not isinstance(resp.obj, dict):
            return
        for o in iter_objs(resp.obj):
            if o.get("deployment_id") in ids and isinstance(o.get("app_version"), int):
                o["app_version"] = float(o["app_version"])


@defect("campaign_updated_by_null_until_updated",
        "Campaign summary carries the last updater (updated_by, a string)",
        "spec: Campaign summary (creator, last updater); interface.md: Campaign summary field names",
        "updated_by is null until the campaign is first changed (as a deployment's), where the campaign summary requires a string",
        half="values")
class CampUpdatedByNull(Defect):
    def response(self, px, ctx, resp):
        upd = px.flags.setdefault("updated", set())
        if ctx.route in ("campaign", "campaign_status") and ctx.method in ("PATCH", "PUT") and resp.ok():
            upd.add(ctx.g["cid"])
        if not ctx.is_api() or not isinstance(resp.obj, dict):
            return
        for o in iter_objs(resp.obj):
            if "campaign_id" in o and "updated_by" in o and o["campaign_id"] not in upd:
                o["updated_by"] = None


@defect("deployment_list_connection_configs_null",
        "Deployment response: connection_configs (required, an array) in create answers and list items",
        "spec: Deployment response (connection_configs required), Paginated deployment list items",
        "list items carry connection_configs: null (the list query does not load the connections; phone_numbers is still filled)",
        half="values")
class DepListCcNull(Defect):
    def response(self, px, ctx, resp):
        if ctx.route == "deployments" and ctx.method == "GET" and resp.ok() and isinstance(resp.obj, dict):
            for it in resp.obj.get("items") or []:
                it["connection_configs"] = None


@defect("validation_loc_indexes_as_strings",
        "`loc` elements: strings for object keys, integers for array indices",
        "interface.md: Validation and errors: `loc` elements",
        "422 answers write array indices in loc as strings (\"0\") instead of integers",
        kind="assumed", half="values")
class LocStrings(Defect):
    def response(self, px, ctx, resp):
        if ctx.is_api() and resp.status == 422 and isinstance(resp.obj, dict):
            for d in resp.obj.get("detail") or []:
                if isinstance(d, dict) and isinstance(d.get("loc"), list):
                    d["loc"] = [str(x) if isinstance(x, int) else x for x in d["loc"]]


@defect("validation_custom_errors_lack_type",
        "Validation errors: {detail: [{loc, msg, type}]}",
        "spec: Errors (instant outbound validation shape); interface.md: Validation body",
        "422 items raised by the platform's own validators (value_error: phone numbers, time zones, times) have loc and msg but no type",
        half="values")
class NoType(Defect):
    def response(self, px, ctx, resp):
        if ctx.is_api() and resp.status == 422 and isinstance(resp.obj, dict):
            for d in resp.obj.get("detail") or []:
                if isinstance(d, dict) and d.get("type") == "value_error":
                    del d["type"]


@defect("conflict_answered_as_detail_string",
        "Other platform errors: {\"error\": {\"message\", \"type\", \"code\"}} (409 included)",
        "interface.md: Validation and errors: Other platform errors (ref shape)",
        "a 409 is raised as the framework's HTTPException: {\"detail\": \"<message>\"}",
        half="values")
class ConflictDetail(Defect):
    def response(self, px, ctx, resp):
        if ctx.is_api() and resp.status == 409 and isinstance(resp.obj, dict) and isinstance(resp.obj.get("error"), dict):
            resp.obj = {"detail": resp.obj["error"].get("message")}


@defect("deployment_delete_error_code_integer",
        "Deployment list and delete errors: {error: {message, type, code}}, all three strings",
        "spec: Errors (deployment list and delete)",
        "a failed DELETE answers error.code as the HTTP status number (404) instead of a string",
        half="values")
class DeleteCodeInt(Defect):
    def response(self, px, ctx, resp):
        if ctx.route == "deployment" and ctx.method == "DELETE" and resp.status >= 400 and isinstance(resp.obj, dict):
            e = resp.obj.get("error")
            if isinstance(e, dict):
                e["code"] = resp.status


@defect("deployment_updated_at_never_bumped",
        "Deployment response: updated_at is the time of the last update",
        "spec: Deployment response (created_at, updated_at); Campaign summary (last-update timestamp)",
        "updated_at stays the creation time after PATCH and status changes (no on-update hook)",
        half="values")
class DepUpdatedAt(Defect):
    def response(self, px, ctx, resp):
        if not ctx.is_api() or not isinstance(resp.obj, dict):
            return
        for o in iter_objs(resp.obj):
            if "deployment_id" in o and isinstance(o.get("created_at"), str) and "updated_at" in o:
                o["updated_at"] = o["created_at"]


@defect("campaign_status_answer_partial",
        "PUT /campaigns/{id}/status answers the updated resource",
        "interface.md: open point 7 (ref: status updates answer the resource)",
        "the campaign status change answers only {campaign_id, status}",
        half="values")
class CampStatusPartial(Defect):
    def response(self, px, ctx, resp):
        if ctx.route == "campaign_status" and ctx.method == "PUT" and resp.status == 200 and isinstance(resp.obj, dict):
            resp.obj = {"campaign_id": resp.obj.get("campaign_id"), "status": resp.obj.get("status")}


@defect("deployment_get_ignores_workspace",
        "A key opens one workspace; another workspace's key cannot reach this workspace's ids",
        "spec: Authentication 1; interface.md: Scopes, roles, issuing of X-API-Key",
        "GET .../deployments/{id} looks the deployment up by id alone: another workspace's key on its own path reads it",
        half="values")
class DepGetIdor(Defect):
    def response(self, px, ctx, resp):
        if ctx.route != "deployment" or ctx.method not in ("GET", "HEAD") or resp.status != 404:
            return
        did = ctx.g["did"]
        owner = px.deployments.get(did)
        if not owner or owner == (ctx.g["org"], ctx.g["ws"]):
            return
        key = px.keys.get(owner)
        if not key:
            return
        path = "/api/app-authoring/v1/orgs/%s/workspaces/%s/deployments/%s" % (owner[0], owner[1], did)
        st, obj = px.call("GET", path, ctx, key=key)
        if st == 200 and isinstance(obj, dict):
            resp.status, resp.reason = 200, "OK"
            resp.obj = obj
            if ctx.method == "HEAD":
                resp.set_header("Content-Length", str(len(dumps(obj))))


# ---- Half 2: events -----------------------------------------------------------------

class EventDefect(Defect):
    events = True


@defect("event_retry_attempt_one_based",
        "retry_attempt: 0 for the first dial, then 1, 2, ...",
        "interface.md: Outcomes and retries: `retry_attempt` (ref)",
        "campaign events count retry_attempt from 1",
        half="values")
class EvRetry1(EventDefect):
    def event(self, px, kind, obj, headers):
        if kind == "campaign" and isinstance(obj.get("retry_attempt"), int):
            obj["retry_attempt"] += 1
        return obj


@defect("event_executed_at_is_send_time",
        "executed_at: when the attempt was dialled",
        "interface.md: The platform check: Observing dials (executed_at); Events (campaign attempt payload, ref)",
        "executed_at is stamped when the event is sent (the call's end, or a retry of the delivery), not when the dial was made",
        half="values")
class EvExecutedAt(EventDefect):
    def event(self, px, kind, obj, headers):
        ts = headers.get("x-webhook-timestamp")
        if kind == "campaign" and ts and ts.isdigit():
            obj["executed_at"] = fmt_time(dt.datetime.fromtimestamp(int(ts), UTC))
        return obj


@defect("event_signature_over_reserialised_body",
        "Signing: HMAC-SHA256 of {timestamp}.{raw body}",
        "interface.md: Events: Signing (ref); Webhook delivery: Signature",
        "the signature is computed over the event re-serialised with spaces (json.dumps defaults), not over the bytes sent",
        half="values")
class EvSignature(EventDefect):
    def sign_body(self, px, body, obj):
        return json.dumps(obj).encode("utf-8")


@defect("event_attempt_id_reused_by_retries",
        "Each dial is one attempt (one event per attempt, each with its attempt_id)",
        "spec: Rules 1; interface.md: Webhook delivery (one event per attempt), Ids",
        "a retry's event carries the attempt_id of the user's first dial (the id is kept per user, not per dial)",
        half="values")
class EvAttemptId(EventDefect):
    def event(self, px, kind, obj, headers):
        if kind != "campaign":
            return obj
        k = (obj.get("campaign_id"), obj.get("cohort_id"), obj.get("user_phone_number"))
        with px.lock:
            first = px.flags.setdefault("first_attempt", {})
            if obj.get("retry_attempt") == 0 or k not in first:
                first.setdefault(k, obj.get("attempt_id"))
            else:
                obj["attempt_id"] = first[k]
        return obj


RETRY_NEXT = {"busy": "retry", "no_answer": "retry", "voicemail": "retry", "failed": "retry",
              "short_duration": "short_duration_retry", "provider_error": "provider_error_retry",
              "internal_error": "internal_error_retry"}


@defect("event_next_action_retry_when_out_of_retries",
        "next_action_status: null when the user is finished (max_retries N allows N+1 attempts)",
        "interface.md: Outcomes and retries: `next_action_status`; spec: Rules 1",
        "the last allowed attempt still says next_action_status retry when its outcome is in retry_on (the dials left are not consulted)",
        kind="assumed", half="values")
class EvNextAction(EventDefect):
    def response(self, px, ctx, resp):
        if ctx.route == "campaigns" and ctx.method == "POST" and resp.ok() and isinstance(ctx.obj, dict) \
                and isinstance(resp.obj, dict):
            ac = ctx.obj.get("app_config") or {}
            rc = ac.get("retry_config") or {}
            ro = rc.get("retry_on") or []
            if isinstance(ro, dict):
                ro = [k for k, v in ro.items() if isinstance(v, dict) and v.get("enabled")]
            px.flags.setdefault("retry_on", {})[resp.obj.get("campaign_id")] = set(ro)

    def event(self, px, kind, obj, headers):
        if kind != "campaign" or obj.get("next_action_status") is not None or obj.get("completion_status") == "completed":
            return obj
        ro = px.flags.get("retry_on", {}).get(obj.get("campaign_id"), set())
        if obj.get("completion_status") == "partial":
            outcome = "short_duration"
        elif obj.get("connectivity_status") in ("busy", "no_answer", "failed"):
            outcome = obj["connectivity_status"]
        else:
            outcome = obj.get("failure_reason")
        if outcome in ro:
            obj["next_action_status"] = RETRY_NEXT.get(outcome, "retry")
        return obj


@defect("outbound_event_metadata_dropped",
        "webhook_config.metadata: free-form, attached to the webhook",
        "spec: Outbound call request (webhook_config.metadata); Events",
        "the instant outbound event carries webhook_config without its metadata (null)",
        half="values")
class EvMetadata(EventDefect):
    def event(self, px, kind, obj, headers):
        wc = obj.get("webhook_config")
        if kind == "outbound" and isinstance(wc, dict):
            wc["metadata"] = None
        return obj


# --------------------------------------------------------------------------------------
# The proxy
# --------------------------------------------------------------------------------------

URL_RX = re.compile(r"^[Hh][Tt][Tt][Pp][Ss]?://[^\s/?#]+([/?#]\S*)?$")


class Proxy:
    def __init__(self, upstream, defect, secret, verbose):
        self.upstream = urllib.parse.urlsplit(upstream)
        self.prefix = self.upstream.path.rstrip("/")
        self.defect = defect or Transparent()
        self.secret = secret
        self.verbose = verbose
        self.lock = threading.RLock()
        self.sched_mem = {}
        self.hidden = {}
        self.flags = {}
        self.keys = {}  # (org, ws) -> a key that opened it
        self.deployments = {}  # deployment id -> (org, ws)
        self.cohorts = {}  # cohort id -> (org, ws, parent kind, parent id)
        self.hook_base = None

    def log(self, *a):
        if self.verbose:
            print(*a, file=sys.stderr, flush=True)

    # -- upstream
    def send(self, method, target, headers, body):
        u = self.upstream
        cls = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
        conn = cls(u.hostname, u.port or (443 if u.scheme == "https" else 80), timeout=300)
        try:
            conn.putrequest(method, self.prefix + target, skip_host=True, skip_accept_encoding=True)
            has_host = False
            for k, v in headers:
                if k.lower() == "content-length":
                    continue
                if k.lower() == "host":
                    has_host = True
                conn.putheader(k, v)
            if not has_host:
                conn.putheader("Host", u.netloc)
            if body is not None:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body if body else None)
            r = conn.getresponse()
            data = r.read()
            hdrs = [(k, v) for k, v in r.getheaders() if k.lower() not in HOP_BY_HOP]
            return Resp(r.status, r.reason, hdrs, data)
        finally:
            conn.close()

    def call(self, method, path, ctx, obj=None, key=None):
        """A request of the proxy's own (for a defect), with the client's key and Host."""
        headers = [("X-API-Key", key or ctx.key or "")]
        if ctx is not None and ctx.host:
            headers.append(("Host", ctx.host))
        body = None
        if obj is not None or method in ("POST", "PUT", "PATCH"):
            body = dumps(obj)
            headers.append(("Content-Type", "application/json"))
        try:
            r = self.send(method, path, headers, body)
        except Exception as e:
            self.log("internal call failed", method, path, e)
            return 599, None
        try:
            return r.status, json.loads(r.body) if r.body else None
        except Exception:
            return r.status, r.body

    # -- learning what the client made (for defects that need other workspaces' ids)
    def learn(self, ctx, resp):
        g = ctx.g
        if "org" in g and ctx.key and 200 <= resp.status < 300:
            self.keys[(g["org"], g["ws"])] = ctx.key
        if not resp.ok() or not isinstance(resp.obj, dict):
            return
        if ctx.route in ("deployments", "deployment"):
            for o in iter_objs(resp.obj):
                if isinstance(o.get("deployment_id"), str):
                    self.deployments.setdefault(o["deployment_id"], (g["org"], g["ws"]))
        if ctx.route in ("cohort_upload", "cohort_stream") and isinstance(resp.obj.get("cohort_id"), str):
            self.cohorts[resp.obj["cohort_id"]] = (g["org"], g["ws"], g["pkind"], g["pid"])

    # -- webhooks through the proxy (event defects only)
    def hook_url(self, url):
        return self.hook_base + b64url(url)

    def rewrite_hooks(self, ctx):
        if not isinstance(ctx.obj, dict):
            return
        wc = None
        if ctx.route == "outbound" and ctx.method == "POST":
            wc = ctx.obj.get("webhook_config")
        elif (ctx.route == "campaigns" and ctx.method == "POST") or (ctx.route == "campaign" and ctx.method == "PATCH"):
            ac = ctx.obj.get("app_config")
            wc = ac.get("webhook_config") if isinstance(ac, dict) else None
        if isinstance(wc, dict) and isinstance(wc.get("url"), str) and URL_RX.match(wc["url"]) \
                and urllib.parse.urlsplit(wc["url"]).hostname:
            wc["url"] = self.hook_url(wc["url"])

    def restore_hooks(self, body):
        if not body or self.hook_base is None:
            return body
        pat = re.escape(self.hook_base.encode()) + rb"([A-Za-z0-9_-]+)"

        def sub(m):
            try:
                return json.dumps(unb64url(m.group(1).decode()), ensure_ascii=False)[1:-1].encode("utf-8")
            except Exception:
                return m.group(0)
        return re.sub(pat, sub, body)

    def handle_hook(self, token, headers, body):
        try:
            url = unb64url(token)
        except Exception:
            return json_resp(404, {"error": {"message": "unknown hook", "type": "not_found_error", "code": "route_not_found"}})
        hd = {k.lower(): v for k, v in headers}
        raw = self.restore_hooks(body)
        out = raw
        try:
            obj = json.loads(raw)
        except Exception:
            obj = None
        if isinstance(obj, dict):
            kind = "outbound" if "channel_info" in obj else ("campaign" if "campaign_id" in obj else "deployment")
            before = dumps(obj)
            obj = self.defect.event(self, kind, obj, hd)
            after = dumps(obj)
            if after != before:
                out = after
            signed = self.defect.sign_body(self, out, obj)
        else:
            signed = out
        ts = hd.get("x-webhook-timestamp")
        fwd = []
        for k, v in headers:
            kl = k.lower()
            if kl in HOP_BY_HOP or kl in ("host", "content-length"):
                continue
            if kl == "x-webhook-signature" and self.secret is not None and ts is not None and (out != body or signed != out):
                v = hmac.new(self.secret.encode(), ts.encode() + b"." + signed, hashlib.sha256).hexdigest()
            fwd.append((k, v))
        s = urllib.parse.urlsplit(url)
        cls = http.client.HTTPSConnection if s.scheme.lower() == "https" else http.client.HTTPConnection
        try:
            conn = cls(s.hostname, s.port or (443 if s.scheme.lower() == "https" else 80), timeout=8)
            target = (s.path or "/") + ("?" + s.query if s.query else "")
            conn.putrequest("POST", target, skip_host=True, skip_accept_encoding=True)
            conn.putheader("Host", s.netloc)
            for k, v in fwd:
                conn.putheader(k, v)
            conn.putheader("Content-Length", str(len(out)))
            conn.endheaders(out)
            r = conn.getresponse()
            data = r.read()
            conn.close()
            return Resp(r.status, r.reason, [(k, v) for k, v in r.getheaders() if k.lower() not in HOP_BY_HOP], data)
        except Exception as e:
            self.log("hook forward failed", url, e)
            return json_resp(502, {"error": {"message": "webhook receiver unreachable", "type": "api_error", "code": "bad_gateway"}})

    # -- one request
    def handle(self, method, target, headers, body):
        if target.startswith("/__hooks/") and method == "POST":
            return self.handle_hook(target[len("/__hooks/"):].split("?")[0], headers, body or b"")
        ctx = Ctx(method, target, headers, body)
        d = self.defect
        early = None
        with self.lock:
            try:
                if d.events:
                    self.rewrite_hooks(ctx)
                early = d.request(self, ctx)
            except Exception:
                self.log(traceback.format_exc())
        if early is not None:
            resp = early
        else:
            if ctx.obj is not None and dumps(ctx.obj) != ctx.obj_orig:
                ctx.body = dumps(ctx.obj)
            try:
                resp = self.send(method, ctx.target, headers, ctx.body)
            except Exception as e:
                self.log("upstream failed", e)
                return json_resp(502, {"error": {"message": "upstream unreachable: %s" % e, "type": "api_error", "code": "bad_gateway"}})
        with self.lock:
            try:
                if early is None:
                    self.learn(ctx, resp)
                d.response(self, ctx, resp)
            except Exception:
                self.log(traceback.format_exc())
            resp.finish()
            if d.events:
                resp.body = self.restore_hooks(resp.body)
        return resp


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    px = None

    def log_message(self, fmt, *args):
        if self.px.verbose:
            sys.stderr.write("proxy: " + (fmt % args) + "\n")

    def _read_body(self):
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            out = bytearray()
            while True:
                line = self.rfile.readline(65537)
                if not line:
                    raise ValueError("cut chunked body")
                size = int(line.split(b";")[0].strip() or b"x", 16)
                if size == 0:
                    while True:
                        t = self.rfile.readline(65537)
                        if t in (b"\r\n", b"\n", b""):
                            break
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline(3)
        cl = self.headers.get("Content-Length")
        if cl is not None:
            n = int(cl)
            return self.rfile.read(n) if n else b""
        return None

    def _any(self):
        try:
            body = self._read_body()
        except Exception:
            self.close_connection = True
            r = json_resp(400, {"error": {"message": "malformed request body framing", "type": "invalid_request_error", "code": "bad_request"}})
            return self._write(r)
        headers = [(k, v) for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP]
        try:
            resp = self.px.handle(self.command, self.path, headers, body)
        except Exception:
            self.px.log(traceback.format_exc())
            resp = json_resp(502, {"error": {"message": "proxy failure", "type": "api_error", "code": "bad_gateway"}})
        self._write(resp)

    def _write(self, resp):
        self.send_response_only(resp.status, resp.reason)
        no_body = self.command == "HEAD" or resp.status in (204, 304) or 100 <= resp.status < 200
        for k, v in resp.headers:
            if k.lower() in HOP_BY_HOP or (k.lower() == "content-length" and not (self.command == "HEAD")):
                continue
            self.send_header(k, v)
        if not no_body:
            self.send_header("Content-Length", str(len(resp.body or b"")))
        self.end_headers()
        if not no_body and resp.body:
            self.wfile.write(resp.body)
        self.wfile.flush()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_TRACE = do_CONNECT = _any


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--upstream")
    ap.add_argument("--listen", default="127.0.0.1:0")
    ap.add_argument("--defect")
    ap.add_argument("--webhook-secret")
    ap.add_argument("--list-defects", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args(argv)
    if a.list_defects:
        print(json.dumps([DEFECTS[n].meta for n in DEFECTS], indent=2, ensure_ascii=False))
        return 0
    if a.defect and a.defect not in DEFECTS:
        print("unknown defect %r; --list-defects lists them" % a.defect, file=sys.stderr)
        return 2
    if not a.upstream:
        print("--upstream is required", file=sys.stderr)
        return 2
    host, _, port = a.listen.rpartition(":")
    d = DEFECTS[a.defect]() if a.defect else None
    px = Proxy(a.upstream, d, a.webhook_secret, a.verbose)
    Handler.px = px
    srv = Server((host or "127.0.0.1", int(port)), Handler)
    real_port = srv.server_address[1]
    px.hook_base = "http://%s:%d/__hooks/" % (host or "127.0.0.1", real_port)
    print(json.dumps({"port": real_port}), flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
