"""Bounded work: hostile-but-valid memory never makes a request slow, huge, or a 500.

Every hostile class of tests/security/hostile_payloads.py (identifier trees that cycle or fan
out, repetitive diff tokens, runs of invisible characters, thousands of labels, ids that are
not URL-safe, identifiers without a usable hash) is ingested through the API with varied
parameters; then every list page, the conversation, result, objective and identifier pages,
the identifier diff and the API reads are fetched. Each answer must be a non-5xx within a
generous ceiling (MAX_SECONDS catches a super-linear blowup, not a slow machine) and at most
MAX_RESPONSE_BYTES. Unit tests per class follow (trees, diff, collapse, ids).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import resolve, reverse

from memory.models import AttackResult, ComponentIdentifier
from memory.querysets import pieces_for_conversation
from redteam.client import path_id
from redteam.common.access import Scope
from redteam.common.idpath import decode_id
from redteam.common.models import ApiKey
from redteam.common.templatetags.display import first_items, more_count, visible
from redteam.core.textview import MAX_DISPLAY_CHARS, MAX_STAND_INS, visible_segments, word_diff
from redteam.core.trees import (
    MARKER_KEY,
    MAX_TREE_DEPTH,
    MAX_TREE_NODES,
    rebuild_from_rows,
    tree_from_dump,
)
from tests.access import bind_everywhere, grant_everywhere
from tests.memory import factories as builders
from tests.security import hostile_payloads as hp

pytestmark = pytest.mark.django_db
# Nodes a tree may emit: the budget, plus one "truncated" marker per open level once spent.
NODE_CEILING = MAX_TREE_NODES + MAX_TREE_DEPTH + 2


@pytest.fixture
def reviewer(db: None) -> Client:
    """A reviewer's session; a request that raises fails the test instead of being a 500."""
    user = get_user_model().objects.create_user("bounded-reviewer")
    grant_everywhere(user, "reviewer")
    client = Client(raise_request_exception=True)
    client.force_login(user)
    return client


@pytest.fixture
def api(db: None) -> Client:
    """An API client with an ingest+read key."""
    owner = get_user_model().objects.create_user("bounded-pusher")
    _row, key = ApiKey.objects.create_key(name="k", user=owner, scopes=["ingest", "read"])
    bind_everywhere(_row)
    return Client(HTTP_AUTHORIZATION=f"Bearer {key}", raise_request_exception=True)


def ingest(api: Client, case: hp.HostileCase) -> None:
    """Post the case's bodies in order; every item must be stored."""
    for body in case.bodies:
        response = api.post("/api/v1/ingest/", hp.encode_body(body), "application/json")
        assert response.status_code == 200, (case.name, response.content[:3000])


def fetch_all(reviewer: Client, api: Client, case: hp.HostileCase, hashes: list[str]) -> None:
    """Every URL of the case: no 5xx, not-found only where nothing is stored, bounded."""
    for url in case.urls(hashes):
        client = api if url.startswith("/api/") else reviewer
        started = time.perf_counter()
        response = client.get(url)
        elapsed = time.perf_counter() - started
        assert response.status_code == 200, (case.name, url, response.status_code)
        size = len(response.content)
        assert size <= hp.size_limit(url, case.body_bytes), (case.name, url, size)
        assert elapsed <= hp.MAX_SECONDS, (case.name, url, elapsed)


def _new_hashes(before: set[str]) -> list[str]:
    return sorted(set(ComponentIdentifier.objects.values_list("hash", flat=True)) - before)[:12]


CASE_BUILDERS: dict[str, Callable[..., hp.HostileCase]] = {
    **{
        f"tree-{shape}-f{f}": (lambda shape=shape, f=f, **_: hp.tree_case(shape, f))
        for shape in hp.TREE_SHAPES
        for f in (2, 3, 8)
    },
    **{
        f"diff-{name}": (lambda name=name, pair=pair, **_: hp.diff_case(name, *pair))
        for name, pair in hp.diff_patterns().items()
    },
    **{
        f"invisible-{kind}-{run}": (lambda kind=kind, run=run, **_: hp.invisible_case(kind, run))
        for kind in ("repeated", "alternating", "tags")
        for run in hp.INVISIBLE_RUNS
    },
    # A list page filled with such rows is served by tests/reliability/test_bounded_work_served.py;
    # four conversations keep this in-process twin quick.
    "labels-10000": lambda fixtures_dir, **_: hp.labels_case(
        10_000, hp.attack_result_template(fixtures_dir), conversations=4
    ),
    "ids": lambda fixtures_dir, **_: hp.ids_case(hp.attack_result_template(fixtures_dir)),
    "scores": lambda fixtures_dir, **_: hp.scores_case(hp.score_template(fixtures_dir)),
    "unhashed": lambda fixtures_dir, **_: hp.unhashed_case(
        hp.attack_result_template(fixtures_dir), hp.score_template(fixtures_dir)
    ),
    **{
        f"scenarios-{count}-{run}": (lambda count=count, run=run, **_: hp.scenario_case(count, run))
        for count in hp.LABEL_COUNTS
        for run in hp.INVISIBLE_RUNS
    },
}


@pytest.mark.parametrize("name", list(CASE_BUILDERS))
def test_hostile_class_costs_bounded_time_and_bytes_on_every_page_and_api_read(
    name: str, fixtures_dir: Path, reviewer: Client, api: Client
) -> None:
    case = CASE_BUILDERS[name](fixtures_dir=fixtures_dir)
    before = set(ComponentIdentifier.objects.values_list("hash", flat=True))
    ingest(api, case)
    fetch_all(reviewer, api, case, _new_hashes(before))


# --- trees --------------------------------------------------------------------------------


@pytest.mark.parametrize("fanout", range(2, 9))
@pytest.mark.parametrize("shape", ["self", "mutual", "dag"])
def test_identifier_api_tree_is_cut_at_the_node_budget_and_says_so(
    shape: str, fanout: int, api: Client
) -> None:
    case = hp.tree_case(shape, fanout)
    ingest(api, case)
    body = api.get(f"/api/v1/identifiers/{case.identifier_roots[0]}/").json()
    assert body["node_count"] <= NODE_CEILING
    assert body["tree_budget"]["max_nodes"] == MAX_TREE_NODES
    markers = _markers(body["tree"])
    if shape == "dag":
        # No cycle, but fanout**13 paths: the budget (or depth) cuts it.
        assert body["truncated"]
        assert "truncated" in markers
        assert not body["cycles"]
    else:
        assert body["cycles"]
        assert "cycle" in markers


def _markers(tree: Any) -> set[str]:
    found: set[str] = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            if MARKER_KEY in node:
                found.add(node[MARKER_KEY])
            stack.extend(v for k, v in node.items() if k == "children")
            if isinstance(node.get("children"), dict):
                stack.extend(node["children"].values())
    return found


class _Row:
    """A stored identifier row, as the tree reader sees it."""

    def __init__(self, h: str, children: dict[str, Any]) -> None:
        self.hash, self.children = h, children
        self.class_name, self.class_module = "C", "m"
        self.params: dict[str, Any] = {"p": "x" * 10}
        self.attributes: dict[str, Any] = {}
        self.pyrit_version: str | None = None
        self.eval_hash: str | None = None


@pytest.mark.parametrize("fanout", range(2, 9))
def test_rebuild_cuts_self_cycles_and_caps_nodes_for_any_fanout(fanout: int) -> None:
    rows = {"a": _Row("a", {"kids": ["a"] * fanout, "one": "b"}), "b": _Row("b", {"up": "a"})}
    rebuilt = rebuild_from_rows(rows["a"], rows)
    assert rebuilt.cycles == ["a"]
    assert rebuilt.nodes <= NODE_CEILING
    assert rebuilt.tree["children"]["kids"][0] == {"hash": "a", MARKER_KEY: "cycle"}
    assert rebuilt.tree["children"]["one"]["children"]["up"][MARKER_KEY] == "cycle"


@pytest.mark.parametrize("fanout", range(2, 9))
def test_rebuild_of_a_dag_emits_at_most_the_node_budget(fanout: int) -> None:
    rows = {str(i): _Row(str(i), {"next": [str(i + 1)] * fanout}) for i in range(40)}
    started = time.perf_counter()
    rebuilt = rebuild_from_rows(rows["0"], rows, absent={"40"})
    assert time.perf_counter() - started < hp.MAX_SECONDS
    assert rebuilt.truncated
    assert rebuilt.nodes <= NODE_CEILING
    assert len(json.dumps(rebuilt.tree)) < 200_000
    display = tree_from_dump(rebuilt.tree, "0" * 64)
    assert display.budget_exhausted
    assert display.node_count <= NODE_CEILING


def test_rebuild_tells_missing_rows_from_rows_not_fetched() -> None:
    root = _Row("r", {"gone": "x", "far": "y"})
    rebuilt = rebuild_from_rows(root, {"r": root}, absent={"x"})
    assert rebuilt.missing == ["x"]
    assert rebuilt.tree["children"]["far"] == {"hash": "y", MARKER_KEY: "truncated"}


def test_rebuild_stops_at_the_depth_limit() -> None:
    rows = {str(i): _Row(str(i), {"next": str(i + 1)}) for i in range(MAX_TREE_DEPTH + 5)}
    rebuilt = rebuild_from_rows(rows["0"], rows)
    node, depth = rebuilt.tree, 0
    while MARKER_KEY not in node:
        node, depth = node["children"]["next"], depth + 1
    assert depth == MAX_TREE_DEPTH + 1
    assert node[MARKER_KEY] == "truncated"


def test_display_tree_links_only_usable_hashes_and_the_root_by_its_ingest_hash() -> None:
    dump = {"__type__": "Old", "children": {"a": {"class_name": "C", "hash": "a/b"}}}
    tree = tree_from_dump(dump, "f" * 64)
    assert tree.class_name == "Old"
    assert tree.link_hash == "f" * 64
    assert tree.children[0].nodes[0].link_hash is None


def test_display_tree_caps_params_and_shows_invisible_names() -> None:
    dump = {"class_name": "C\u200b", **{f"p{i}": "v" * 5_000 for i in range(1_000)}}
    tree = tree_from_dump(dump)
    assert tree.class_name == "C⟨U+200B⟩"
    assert tree.truncated
    assert sum(len(v) for _, v in tree.params) < 1_100_000


# --- diff ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(hp.diff_patterns()))
def test_word_diff_finishes_fast_on_every_pattern(name: str) -> None:
    original, converted = hp.diff_patterns()[name]
    started = time.perf_counter()
    diff = word_diff(original, converted)
    assert time.perf_counter() - started < 1.0
    if diff.chunks is not None:
        kept = "".join(c for op, segs in diff.chunks if op != "insert" for _, c in segs)
        assert kept == original


@pytest.mark.parametrize("seed", range(30))
def test_word_diff_chunks_rebuild_both_values(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = [f"w{i}" for i in range(rng.randint(2, 30))]
    a = " ".join(rng.choice(alphabet) for _ in range(rng.randint(0, 300)))
    b = " ".join(rng.choice(alphabet) for _ in range(rng.randint(0, 300)))
    diff = word_diff(a, b)
    if diff.chunks is not None:
        assert "".join(c for op, s in diff.chunks if op != "insert" for _, c in s) == a
        assert "".join(c for op, s in diff.chunks if op != "delete" for _, c in s) == b


def test_word_diff_over_its_budget_falls_back_to_side_by_side() -> None:
    diff = word_diff("a b " * 500 + "end", "b a " * 500 + "end", budget=100)
    assert diff.chunks is None
    assert diff.over_budget


def test_conversation_page_labels_the_side_by_side_fallback(reviewer: Client, api: Client) -> None:
    case = hp.diff_case("over", "x " * 30_000, "y x " * 15_000)
    ingest(api, case)
    page = reviewer.get(f"/conversations/{path_id(case.conversation_ids[0])}/").content.decode()
    assert "too long or too many changes for an inline diff" in page


# --- invisible characters -----------------------------------------------------------------


@pytest.mark.parametrize("run", [2, 10, 1_000, 100_000])
def test_a_run_of_one_invisible_character_is_one_stand_in_with_its_count(run: int) -> None:
    segments = visible_segments("a" + "\u200b" * run + "b")
    assert segments == [("t", "a"), ("x", f"⟨U+200B \N{MULTIPLICATION SIGN}{run:,}⟩"), ("t", "b")]


@pytest.mark.parametrize("length", [MAX_STAND_INS + 1, 50_000])
def test_mixed_invisible_characters_past_the_cap_are_counted_not_listed(length: int) -> None:
    text = "a\u200b\u200c" * length
    segments = visible_segments(text)
    stand_ins = [s for kind, s in segments if kind == "x"]
    assert len(stand_ins) == MAX_STAND_INS + 1
    assert stand_ins[-1].startswith(f"⟨{2 * length - MAX_STAND_INS:,} more invisible")


def test_visible_filter_shows_and_cuts_short_text() -> None:
    assert visible("op\u202eer") == "op⟨U+202E⟩er"
    assert visible("x" * 500, 10) == "x" * 10 + "…"
    assert visible(None) == ""


def test_list_filters_keep_the_first_items_and_count_the_rest() -> None:
    labels = {f"k{i}": "v" for i in range(10_000)}
    assert len(first_items(labels)) == 8
    assert more_count(labels) == 9_992
    assert first_items(["a", "b"], 5) == ["a", "b"]
    assert more_count(["a", "b"], 5) == 0
    assert first_items(None) == []
    assert more_count(None) == 0


def test_list_page_shows_a_count_instead_of_ten_thousand_labels(
    fixtures_dir: Path, reviewer: Client, api: Client
) -> None:
    case = hp.labels_case(10_000, hp.attack_result_template(fixtures_dir), conversations=2)
    ingest(api, case)
    for url in ("/conversations/", "/attack-results/", "/review/unreviewed/"):
        html = reviewer.get(url).content.decode()
        assert "+9,992 more labels" in html or "+9992 more labels" in html, url


# --- ids ----------------------------------------------------------------------------------


@pytest.mark.parametrize("cid", [*hp.ID_SHAPES, "", "é", "\U000e0041", "plain-uuid.v4_ok"])
def test_every_id_round_trips_through_its_path_segment(cid: str) -> None:
    segment = path_id(cid)
    assert "/" not in segment
    assert segment not in {".", ".."}
    assert "\n" not in segment
    assert decode_id(segment) == cid
    url = reverse("scoring:conversation_detail", args=[cid])
    assert resolve(url).kwargs["conversation_id"] == cid
    api_url = reverse("api:conversation-messages", args=[cid])
    assert resolve(api_url).kwargs["conversation_id"] == cid


@pytest.mark.parametrize("seed", range(20))
def test_random_ids_round_trip(seed: int) -> None:
    rng = random.Random(seed)
    cid = "".join(
        chr(rng.choice([rng.randint(32, 126), rng.randint(0x80, 0x2FFF)]))
        for _ in range(rng.randint(1, 60))
    )
    assert decode_id(path_id(cid)) == cid


@pytest.mark.parametrize("segment", ["~!!", "~YQ", "~", "..", "a b"])
def test_non_canonical_segments_are_not_ids(segment: str) -> None:
    if segment == "~":
        assert decode_id(segment) == ""
        return
    with pytest.raises(
        ValueError, match=r"^not (a plain id|an encoded id|the canonical spelling)$"
    ):
        decode_id(segment)


def test_verdicts_on_results_with_hostile_ids_return_to_their_page(
    fixtures_dir: Path, reviewer: Client, api: Client
) -> None:
    case = hp.ids_case(hp.attack_result_template(fixtures_dir))
    ingest(api, case)
    for result in AttackResult.objects.filter(conversation_id__in=hp.ID_SHAPES):
        response = reviewer.post(
            reverse("scoring:verdict", args=[result.pk]),
            {"verdict": "true", "rationale": "checked", "submission": str(uuid.uuid4())},
        )
        assert response.status_code == 302
        target = response["Location"].split("#")[0].split("?")[0]
        assert resolve(target).kwargs["conversation_id"] == result.conversation_id


def test_links_never_resolve_outside_the_conversation_pages(
    fixtures_dir: Path, reviewer: Client, api: Client
) -> None:
    case = hp.ids_case(hp.attack_result_template(fixtures_dir))
    ingest(api, case)
    html = reviewer.get("/conversations/").content.decode()
    assert "/admin/auth/user" not in html
    for cid in hp.ID_SHAPES:
        assert f'href="/conversations/{path_id(cid)}/"' in html


def test_unknown_conversation_segment_is_a_404_not_a_500(reviewer: Client, api: Client) -> None:
    assert reviewer.get("/conversations/~!!/").status_code == 404
    assert api.get(f"/api/v1/conversations/{path_id(str(uuid.uuid4()))}/").status_code == 404


@pytest.mark.parametrize("pieces", [15, 40])
def test_conversation_page_shares_one_text_budget_across_its_pieces(
    pieces: int, reviewer: Client, api: Client
) -> None:
    from memory.presenters import MAX_PAGE_TEXT_CHARS

    cid = f"budget-{uuid.uuid4()}"
    items = [hp.piece(cid, i, f"{i:03d}" + "w" * 99_997) for i in range(pieces)]
    ingest(api, hp.HostileCase("budget", f"budget-{pieces}", [{"message_pieces": items}], [cid]))
    html = reviewer.get(f"/conversations/{path_id(cid)}/").content.decode()
    assert html.count("w" * 1000) <= MAX_PAGE_TEXT_CHARS // 1000
    assert len(html) < MAX_PAGE_TEXT_CHARS + 1_000_000
    # Pieces past the budget still appear (their place and length), not their text.
    assert html.count("Showing the first") == max(0, pieces - MAX_PAGE_TEXT_CHARS // 100_000)


def test_conversation_page_reads_only_the_start_of_each_value(
    reviewer: Client, api: Client
) -> None:
    """A value longer than a page shows stays in the database: the page reads its first
    MAX_DISPLAY_CHARS characters, its length and whether it equals the other value."""
    cid = f"long-values-{uuid.uuid4()}"
    original = "word " * 60_000
    converted = original.upper()
    # A NUL right at the cut: its escape pair straddles the head's last stored character.
    at_cut = "x" * (MAX_DISPLAY_CHARS - 1) + "\x00tail"
    rows = [
        builders.piece(
            conversation_id=cid,
            original_value=original,
            converted_value=converted,
            converted_value_sha256=hashlib.sha256(converted.encode()).hexdigest(),
        ),
        builders.piece(conversation_id=cid, sequence=1, role="assistant", original_value=at_cut),
    ]
    response = api.post("/api/v1/ingest/", json.dumps({"message_pieces": rows}), "application/json")
    assert response.json()["stored"] == 2, response.content
    pieces = list(pieces_for_conversation(Scope.everything_scope(), cid))
    user, assistant = (vars(p) for p in pieces)  # the queryset's annotations
    for p in pieces:
        assert {"original_value", "converted_value"} <= p.get_deferred_fields()
    for read in (user, assistant):
        assert max(len(read["original_head"]), len(read["converted_head"])) <= MAX_DISPLAY_CHARS
    assert (user["original_length"], user["converted_length"], user["values_equal"]) == (
        len(original),
        len(converted),
        False,
    )
    assert user["converted_head"] == converted[:MAX_DISPLAY_CHARS]
    assert assistant["original_head"] == "x" * (MAX_DISPLAY_CHARS - 1)
    assert (assistant["original_length"], assistant["values_equal"]) == (len(at_cut), True)

    page = reviewer.get(f"/conversations/{cid}/")
    assert page.status_code == 200
    notes = re.findall(r"Showing the first ([\d,]+) characters of ([\d,]+)", page.content.decode())
    shown = [(int(a.replace(",", "")), int(b.replace(",", ""))) for a, b in notes]
    assert (MAX_DISPLAY_CHARS, len(converted)) in shown
    assert (MAX_DISPLAY_CHARS - 1, len(at_cut)) in shown
