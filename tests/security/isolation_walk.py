"""The walker of the operation isolation tests: every URL, filled with one operation's ids and
with the other's, plus every list filter aimed at the other operation's values.

Routes come from the resolver and are classified by the access matrix
(tests/security/test_access_matrix.py), so a new URL fails both until someone decides who may
use it; a list filter without a bravo-aimed value here fails `probes()` the same way.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import cycle, islice
from typing import Any
from urllib.parse import quote, quote_plus, unquote, urlencode, urlsplit

import django_filters as df
from django.test import Client
from django.urls import get_resolver

from memory.filters import (
    AttackResultFilterSet,
    ConversationFilterSet,
    IdentifierIndexFilterSet,
    ScenarioResultFilterSet,
)
from scoring.calibration import OBJECT_FILTERS, SCORER_FILTERS
from scoring.models import ReviewClaim, ReviewSkip
from scoring.review import REVIEW_VIEWS
from tests.security.conftest import Memory
from tests.security.operation_worlds import (
    MARKER_RE,
    SHARED_CONVERTER,
    SHARED_TARGET,
    OperationData,
)
from tests.security.test_access_matrix import (
    EXPECTED,
    LOGOUTS,
    ROLES,
    _classify,
    _closed_admin_urls,
    _fill,
    all_routes,
)

# URL parameters that name a row of an operation: the bravo ones must answer 404.
SCOPED_PARAMS = frozenset(
    {
        "conversation_id",
        "attack_result_id",
        "objective_sha256",
        "sha256",
        "hash",
        "scenario_id",
        "content_id",
    }
)
# Routes whose `pk` is a row of an operation (the others' are seeds, datasets, admin rows).
SCOPED_PK = frozenset(
    {"api:message-piece-detail", "api:score-detail", "api:scenario-result-detail"}
)
# The HTML lists and the FilterSet each reads its query string with (the API's come from
# their viewsets' filterset_class).
PAGE_FILTERSETS: dict[str, type[df.FilterSet]] = {
    "memory:conversation_list": ConversationFilterSet,
    "memory:live_conversations": ConversationFilterSet,
    "scoring:attack_result_list": AttackResultFilterSet,
    "scoring:human_labels": AttackResultFilterSet,
    "export_memory_conversations": ConversationFilterSet,
    "export_memory_attack_results": AttackResultFilterSet,
    "scoring:review_queue": AttackResultFilterSet,
    "memory:scenario_list": ScenarioResultFilterSet,
    "memory:identifier_index": IdentifierIndexFilterSet,
}
# Filter values that select no operation in particular (each one probes what the filter adds
# to the answer: counts, choices, rows).
GENERIC_FILTER_VALUES: dict[str, list[str]] = {
    "outcome": ["success", "failure"],
    "kind": ["target", "scorer", "converter", "attack", "other"],
    "data_type": ["image_path", "text"],
    "not_data_type": ["text"],
    "original_data_type": ["image_path"],
    "role": ["system", "assistant"],
    "response_error": ["none"],
    "has_error": ["false"],
    "has_converters": ["true"],
    "score_type": ["true_false"],
    "score_value": ["true", "false"],
    "status": ["complete"],
    "source": ["human", "automated"],
    "min_turns": ["0"],
    "max_turns": ["100"],
    "after": ["2000-01-01"],
    "before": ["2100-01-01"],
    "scenario_version": ["2"],
    "run_state": ["COMPLETED"],
    "pyrit_version": ["1.1.0"],
    "used_as": ["target", "attack", "scorer", "converter"],
}
# Query strings of a page beyond its FilterSet.
PAGE_QUERIES: dict[str, list[str]] = {
    "scoring:attack_result_list": [f"review={v}" for v in REVIEW_VIEWS],
    "scoring:human_labels": [
        *(f"review={v}" for v in REVIEW_VIEWS),
        "raters=2",
    ],
    "export_memory_attack_results": [f"review={v}" for v in REVIEW_VIEWS],
    "scoring:review_queue": [f"view={v}" for v in REVIEW_VIEWS],
    "scoring:dashboard": ["label_key=operation", "label_key=operator"],
    "scoring:scorer_list": ["tf_sort=n", "fs_sort=-p_value", "format=jsonl"],
}
# The scorer calibration page and API, probed with every calibration filter aimed at bravo.
CALIBRATION_LISTS = ("scoring:scorer_list", "api:scorer-metrics")
MAX_PAGES = 40
# The columns of the access matrix the isolation callers stand for.
CALLERS = ("readonly_user", "reviewer", "adjudicator", "lead", "read_key", "ingest_key")


@dataclass(frozen=True)
class Probe:
    """One request of the walk: `target` says whose row the URL names (alpha, bravo, any)."""

    name: str
    kind: str
    method: str
    path: str
    target: str

    def allowed(self, caller: str) -> bool:
        """True when the access matrix lets this caller use the URL's class."""
        return EXPECTED[self.kind][ROLES.index(caller)] == "allowed"


@dataclass(frozen=True)
class Answer:
    """What a caller got: status, and the body with the headers that could carry data."""

    status: int
    text: str


def route_params(route: str) -> set[str]:
    """The parameter names of a route (path converters and regex groups)."""
    return set(re.findall(r"\(\?P<(\w+)>", route)) | set(re.findall(r"<(?:\w+:)?(\w+)>", route))


def alpha_fill(alpha: OperationData, seed_id: str, dataset_pk: int) -> Memory:
    """Alpha's main rows, and the rows both operations share (the target identifier, the image
    bytes, the objective and the loose text): each answers 200 to alpha's members."""
    return Memory(
        conversation_id=alpha.main_conversation,
        attack_result_id=alpha.main_result,
        objective_sha256=alpha.objective_sha256s[0],
        piece_id=alpha.piece_ids[0],
        score_id=alpha.score_ids[0],
        identifier_hash=SHARED_TARGET.hash,
        media_sha256=next(iter(alpha.media)),
        seed_id=seed_id,
        dataset_pk=dataset_pk,
        scenario_id=alpha.scenario_ids[0],
        content_id=alpha.content_ids[0],
    )


def bravo_fills(
    bravo: OperationData, alpha: OperationData, seed_id: str, dataset_pk: int
) -> list[Memory]:
    """Every row only bravo has, each kind cycled to the length of the longest list."""

    def own(values: list[str], shared: list[str]) -> list[str]:
        return [v for v in values if v not in shared]

    columns = {
        "conversation_id": own(bravo.conversation_ids, alpha.conversation_ids),
        "attack_result_id": own(bravo.attack_result_ids, alpha.attack_result_ids),
        "objective_sha256": own(bravo.objective_sha256s, alpha.objective_sha256s),
        "piece_id": own(bravo.piece_ids, alpha.piece_ids),
        "score_id": own(bravo.score_ids, alpha.score_ids),
        "identifier_hash": [n.hash for n in bravo.own_identifiers],
        "media_sha256": own(list(bravo.media), list(alpha.media)),
        "scenario_id": own(bravo.scenario_ids, alpha.scenario_ids),
        "content_id": own(bravo.content_ids, alpha.content_ids),
    }
    width = max(len(v) for v in columns.values())
    rows = {k: list(islice(cycle(v), width)) for k, v in columns.items()}
    return [
        Memory(seed_id=seed_id, dataset_pk=dataset_pk, **{k: rows[k][i] for k in rows})
        for i in range(width)
    ]


def _scoped(filterset: type[df.FilterSet]) -> bool:
    """True when the FilterSet lists rows that belong to operations."""
    model = getattr(filterset, "_meta").model  # noqa: B009  (django-filter's untyped Meta)
    return hasattr(model.objects, "visible_to")


def list_queries(
    name: str, filterset: type[df.FilterSet] | None, bravo: OperationData
) -> Iterator[str]:
    """Query strings aimed at bravo for one list: every filter, and the page's own options."""
    if filterset is not None and _scoped(filterset):
        for param in filterset.base_filters:
            values = bravo.filter_values.get(param) or GENERIC_FILTER_VALUES.get(param)
            assert values, f"give the isolation walk a bravo-aimed value for filter {param!r}"
            for value in values:
                yield urlencode({param: value})
    yield from PAGE_QUERIES.get(name, [])
    if name == "scoring:dashboard":
        yield from (urlencode({"label_key": k}) for k in bravo.filter_values["label_key"])
    if name == "scoring:human_labels":
        # A harm file is for one category: each of bravo's, and raters from both operations.
        for category in bravo.filter_values["harm_category"]:
            yield urlencode({"kind": "harm", "harm_category": category, "raters": "2"})
    if name in CALIBRATION_LISTS:
        # Scorer calibration reads its filters with several FilterSets (scoring.calibration).
        for param in (*SCORER_FILTERS, *OBJECT_FILTERS):
            values = bravo.filter_values.get(param) or GENERIC_FILTER_VALUES[param]
            yield from (urlencode({param: value}) for value in values)


def probes(
    alpha: OperationData, bravo: OperationData, seed_id: str, dataset_pk: int
) -> list[Probe]:
    """Every URL of the project, filled with alpha's rows and with each of bravo's own rows,
    and every list with every filter aimed at bravo."""
    closed = _closed_admin_urls()
    alpha_row = alpha_fill(alpha, seed_id, dataset_pk)
    bravo_rows = bravo_fills(bravo, alpha, seed_id, dataset_pk)
    found: list[Probe] = []
    seen: set[tuple[str, str]] = set()

    def add(name: str, kind: str, method: str, path: str, target: str) -> None:
        if (method, path) not in seen:
            seen.add((method, path))
            found.append(Probe(name, kind, method, path, target))

    resolver = get_resolver()
    for route, name in all_routes():
        classified = _classify(name, closed)
        assert classified is not None, f"classify {name!r} in the access matrix"
        kind, method = classified
        params = route_params(route)
        if params & SCOPED_PARAMS or name in SCOPED_PK:
            add(name, kind, method, _fill(route, name, alpha_row), "alpha")
            for row in bravo_rows:
                add(name, kind, method, _fill(route, name, row), "bravo")
            continue
        path = _fill(route, name, alpha_row)
        add(name, kind, method, path, "any")
        if method != "GET":
            continue
        filterset = PAGE_FILTERSETS.get(name)
        if filterset is None and name.endswith("-list"):
            view = getattr(resolver.resolve(path).func, "cls", None)
            filterset = getattr(view, "filterset_class", None)
        for query in list_queries(name, filterset, bravo):
            add(name, kind, method, f"{path}?{query}", "any")
        if name.endswith("-list"):
            # Small pages: the walk follows every `next` link.
            add(name, kind, method, f"{path}?page_size=1", "any")
        if name.startswith("admin:") and name.endswith("_changelist"):
            add(name, kind, method, f"{path}?q={bravo.filter_values['q'][0]}", "any")
    _special_probes(alpha, bravo, add)
    return found


def _special_probes(
    alpha: OperationData, bravo: OperationData, add: Callable[[str, str, str, str, str], None]
) -> None:
    """Pages that take rows in their query string (the identifier diff, a conversation in
    review-queue mode), and the dashboard's rebuild."""
    diff = "/identifiers/diff/"
    kind = "page_read"
    shared, other_shared = SHARED_TARGET.hash, SHARED_CONVERTER.hash
    add("memory:identifier_diff", kind, "GET", f"{diff}?a={shared}&b={other_shared}", "alpha")
    for own in bravo.own_identifiers:
        add("memory:identifier_diff", kind, "GET", f"{diff}?a={shared}&b={own.hash}", "bravo")
        add("memory:identifier_diff", kind, "GET", f"{diff}?a={own.hash}&b={own.hash}", "bravo")
    for view in REVIEW_VIEWS:
        page = f"/conversations/{alpha.main_conversation}/?queue={view}"
        add("scoring:conversation_detail", kind, "GET", page, "alpha")
    # Rebuilding the dashboard's counts (reviewers): what it shows afterwards is walked too.
    add("scoring:dashboard", "page_verdict", "POST", "/dashboard/", "any")


def client_for(caller: str, users: dict[str, Any], keys: dict[str, str]) -> Client:
    """A test client signed in as a user, or sending an API key."""
    client = Client(raise_request_exception=False)
    if caller in keys:
        client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {keys[caller]}"
    else:
        client.force_login(users[caller])
    return client


def _text(response: Any) -> str:
    if getattr(response, "streaming", False):
        body = b"".join(response.streaming_content)
    else:
        body = response.content
    headers = " ".join(
        f"{h}: {response.headers[h]}"
        for h in ("Location", "Content-Disposition", "Link")
        if h in response.headers
    )
    return body.decode("latin-1") + "\n" + headers


def send(client: Client, probe: Probe) -> Iterator[tuple[str, Answer]]:
    """The answer to a probe, then to every `next` page of an API list."""
    path = probe.path
    for _ in range(MAX_PAGES):
        if probe.method == "POST":
            response = client.post(path, "{}", content_type="application/json")
        else:
            response = client.get(path)
        text = _text(response)
        yield path, Answer(response.status_code, text)
        if probe.method != "GET" or not response.headers.get("Content-Type", "").startswith(
            "application/json"
        ):
            return
        try:
            following = json.loads(response.content).get("next")
        except (ValueError, AttributeError):
            return
        if not isinstance(following, str) or not following:
            return
        parts = urlsplit(following)
        path = f"{parts.path}?{parts.query}"


def walk(
    new_client: Callable[[str], Client], walked: Iterable[Probe]
) -> dict[tuple[str, str, str], Answer]:
    """Every probe as every caller: (caller, method, path) -> answer. Logging out would end
    the caller's session, so logout URLs get a client of their own."""
    answers: dict[tuple[str, str, str], Answer] = {}
    walked = list(walked)
    # Opening a queue's item claims it and skipping one moves it: each walk starts from none
    # of the previous walk's claims and skips.
    ReviewClaim.objects.all().delete()
    ReviewSkip.objects.all().delete()
    for caller in CALLERS:
        client = new_client(caller)
        for probe in walked:
            sender = new_client(caller) if probe.name in LOGOUTS else client
            for path, answer in send(sender, probe):
                answers[(caller, probe.method, path)] = answer
    return answers


def echoes(path: str) -> list[str]:
    """What a page may repeat of its own URL (a search box, a cursor link, a login `next`):
    each in the spellings HTML, URLs and JSON give it. Longest first."""
    parts = urlsplit(path)
    values = {path, parts.path, *[s for s in parts.path.split("/") if s]}
    for pair in parts.query.split("&"):
        _, _, raw = pair.partition("=")
        value = unquote(raw.replace("+", " "))
        values.add(value)
        values.update(re.split(r"[:=]", value))
    spelled = set()
    for value in values:
        if not value:
            continue
        spelled.update(
            {value, quote(value, safe=""), quote(value), quote_plus(value), html.escape(value)}
        )
    return sorted(spelled, key=len, reverse=True)


def leaks(path: str, answer: Answer, forbidden: Iterable[str]) -> list[str]:
    """Markers and bravo ids in an answer, once what the request itself said is taken out
    (compared without case: a page may lower-case or slugify what it shows)."""
    text = answer.text.lower()
    for echo in echoes(path):
        text = text.replace(echo.lower(), "")
    found = {m.upper() for m in MARKER_RE.findall(text)}
    found |= {m.upper() for m in MARKER_RE.findall(re.sub(r"[_\-\s]", "", text))}
    found |= {f for f in forbidden if f.lower() in text}
    return sorted(found)


# Parts of a page that change from one rendering to the next whatever the data.
VOLATILE = (
    (re.compile(r'name="csrfmiddlewaretoken" value="[^"]*"'), 'name="csrfmiddlewaretoken"'),
    (re.compile(r'name="submission" value="[^"]*"'), 'name="submission"'),
    (re.compile(r'nonce="[^"]*"'), "nonce"),
    (re.compile(r"last rebuild took \d+ ms"), "last rebuild took ms"),
    # When the dashboard's counts were last rebuilt (the walk rebuilds them).
    (re.compile(r"ingested up to \d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)?"), "ingested up to"),
    (re.compile(r"snapshot taken \d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)?"), "snapshot taken"),
    # Until when a queue's item is held (claims last minutes from the moment of opening).
    (re.compile(r"until \d\d:\d\d</span>"), "until</span>"),
    # Where the dashboard's live check starts: the snapshot's watermark when no result arrived
    # since (the walk rebuilds the snapshot).
    (re.compile(r"/live/dashboard/\?since=[\w=-]*"), "/live/dashboard/?since="),
)


def normalized(answer: Answer) -> str:
    """The answer without what changes between two renderings of the same data."""
    text = answer.text
    for pattern, replacement in VOLATILE:
        text = pattern.sub(replacement, text)
    return text
