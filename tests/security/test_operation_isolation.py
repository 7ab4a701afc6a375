"""Two operations on one server: a member of one finds nothing of the other.

op-alpha and op-bravo overlap (the same objective text, identifiers, media bytes and loose
text); everything only bravo has carries a marker (tests/security/operation_worlds.py). Members
of alpha in every role, and API keys bound to alpha (their owner a member of bravo too), walk
every URL of the project (tests/security/isolation_walk.py): filled with alpha's rows and with
each of bravo's, every list with every filter aimed at bravo, every API list page by page.
Then:

- no answer (any status, HTML or JSON, headers included) holds a bravo marker or id;
- a URL naming a bravo row answers 404, never 403 or 200; one naming alpha's answers 200;
- every answer is the same, byte for byte (tokens aside), as before bravo existed: no row,
  count or filter choice of bravo shows through;
- keys bound to alpha cannot write into bravo, link bravo's pieces, or learn what bravo holds
  from the ingest and media answers; curators cannot promote bravo's pieces; the export of
  alpha holds nothing of bravo.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import pathlib
import sqlite3
import uuid
import zipfile
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from memory.models import (
    AttackResult,
    Conversation,
    IdentifierDump,
    IdentifierOperation,
    MessagePiece,
    ScenarioResult,
    ScorableContent,
    Score,
)
from redteam.common.models import ApiKey, Operation, OperationRole
from redteam.site.ingest import ingest_batch
from seeds.models import Seed, SeedDataset
from tests.access import grant
from tests.api.factories import seed as seed_dict
from tests.security.isolation_walk import (
    CALLERS,
    Answer,
    Probe,
    client_for,
    leaks,
    normalized,
    probes,
    walk,
)
from tests.security.operation_worlds import (
    ALPHA,
    BRAVO,
    MARKER_RE,
    OperationData,
    Planted,
    build_operation,
    make_reviewer,
    populate,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("quiet_request_log")]

MEMBER_ROLES = {
    "readonly_user": OperationRole.READ_ONLY,
    "reviewer": OperationRole.REVIEWER,
    "adjudicator": OperationRole.ADJUDICATOR,
    "lead": OperationRole.LEAD,
}


@dataclass
class World:
    """alpha stored, bravo built (stored by `add_bravo`), and alpha's callers."""

    alpha: OperationData
    bravo: OperationData
    planted: Planted
    users: dict[str, Any]
    keys: dict[str, str]
    key_owner: Any
    probes: list[Probe]

    def add_bravo(self) -> None:
        """Store bravo's rows, media and its reviewer's verdict. The owner of alpha's keys
        joins bravo too: a key reads only the operations it is bound to."""
        populate(self.bravo, make_reviewer(self.bravo))
        grant(self.key_owner, BRAVO, OperationRole.LEAD)

    def client(self, caller: str) -> Client:
        """A client of one caller (a session for a user, the key's header for a key)."""
        return client_for(caller, self.users, self.keys)

    def describe(self, leak: str) -> str:
        """A leaked string and where bravo holds it."""
        if MARKER_RE.fullmatch(leak):
            return self.planted.describe(leak)
        if leak == BRAVO:
            return f"the operation's name {leak}"
        return f"bravo id {leak}"


@pytest.fixture
def world(db: None) -> World:
    """Alpha's rows and callers: a user per role, a read key and an ingest key bound to alpha."""
    planted = Planted()
    alpha = build_operation(ALPHA, None)
    bravo = build_operation(BRAVO, planted)
    operation = Operation.objects.create(name=ALPHA)
    users_model = get_user_model()
    users: dict[str, Any] = {}
    for caller, role in MEMBER_ROLES.items():
        users[caller] = users_model.objects.create_user(f"alpha-{caller}")
        grant(users[caller], operation, role)
    owner = users_model.objects.create_user("alpha-key-owner")
    grant(owner, operation, OperationRole.REVIEWER)
    keys: dict[str, str] = {}
    for caller, scopes in (("read_key", ["read"]), ("ingest_key", ["ingest"])):
        row, keys[caller] = ApiKey.objects.create_key(name=caller, user=owner, scopes=scopes)
        row.operations.add(operation)
        row.default_operation = operation
        row.save()
    # Seeds belong to no operation; their URLs are walked with one that exists.
    assert ingest_batch({"seeds": [seed_dict(0, "isolation")]}).errors == 0
    seed = Seed.objects.get()
    dataset = SeedDataset.objects.get()
    populate(alpha, users["reviewer"])
    return World(
        alpha=alpha,
        bravo=bravo,
        planted=planted,
        users=users,
        keys=keys,
        key_owner=owner,
        probes=probes(alpha, bravo, str(seed.pk), dataset.pk),
    )


def bravo_only_strings() -> list[str]:
    """Every id of a bravo row alpha does not share, in the spellings a page may use."""
    alpha = Operation.objects.get(name=ALPHA)
    bravo = Operation.objects.get(name=BRAVO)
    ids: set[str] = set()
    for model, path in (
        (Conversation, "operation"),
        (AttackResult, "operation"),
        (ScenarioResult, "operation"),
        (Score, "operation"),
        (MessagePiece, "conversation__operation"),
    ):
        ids.update(
            str(pk) for pk in model.objects.filter(**{path: bravo}).values_list("pk", flat=True)
        )
    ids.update(
        str(pk)
        for pk in ScorableContent.objects.filter(scores__operation=bravo)
        .exclude(scores__operation=alpha)
        .values_list("pk", flat=True)
    )
    alpha_identifiers = IdentifierOperation.objects.filter(operation=alpha).values("identifier_id")
    own = IdentifierOperation.objects.filter(operation=bravo).exclude(
        identifier_id__in=alpha_identifiers
    )
    own_hashes = set(own.values_list("identifier_id", flat=True))
    ids |= own_hashes
    ids.update(
        IdentifierDump.objects.filter(identifier_id__in=own_hashes).values_list("digest", flat=True)
    )

    def column(model: Any, op: Operation, path: str, *fields: str) -> set[str]:
        values: set[str] = set()
        for field in fields:
            values.update(
                v for v in model.objects.filter(**{path: op}).values_list(field, flat=True) if v
            )
        return values

    piece_columns = (
        "original_value_sha256",
        "converted_value_sha256",
        "original_media_id",
        "converted_media_id",
    )
    piece_path = "conversation__operation"
    ids |= column(MessagePiece, bravo, piece_path, *piece_columns) - column(
        MessagePiece, alpha, piece_path, *piece_columns
    )
    ids |= column(AttackResult, bravo, "operation", "objective_sha256") - column(
        AttackResult, alpha, "operation", "objective_sha256"
    )
    spelled = set(ids)
    for value in ids:
        with contextlib.suppress(ValueError):
            spelled.add(uuid.UUID(value).hex)
    names = set(
        get_user_model()
        .objects.filter(memberships__operation=bravo)
        .exclude(memberships__operation=alpha)
        .values_list("username", flat=True)
    )
    return sorted(spelled | names | {BRAVO})


def _by_route(walked: list[Probe], target: str) -> dict[str, Probe]:
    """The first probe of each route naming `target`'s rows."""
    found: dict[str, Probe] = {}
    for probe in walked:
        if probe.target == target:
            found.setdefault(probe.name, probe)
    return found


def wrong_statuses(walked: list[Probe], answers: dict[tuple[str, str, str], Answer]) -> list[str]:
    """Bravo's rows answer 404 to every caller allowed the URL (the same as alpha's, or 404, to
    those who are not); alpha's rows answer 200 to those allowed."""
    alpha_probes = _by_route(walked, "alpha")
    wrong = []
    for probe in walked:
        for caller in CALLERS:
            status = answers[(caller, probe.method, probe.path)].status
            allowed = probe.allowed(caller)
            if probe.target == "bravo":
                twin = alpha_probes[probe.name]
                expected = (
                    {404} if allowed else {404, answers[(caller, twin.method, twin.path)].status}
                )
            elif probe.target == "alpha" and allowed and probe.method == "GET":
                expected = {200}
            else:
                continue
            if status not in expected:
                wanted = "/".join(str(s) for s in sorted(expected))
                wrong.append(f"{probe.method} {probe.path} as {caller}: {status}, not {wanted}")
    return wrong


def test_every_bravo_url_of_the_walk_names_a_row_that_exists(world: World) -> None:
    """A superuser sees bravo's rows at the URLs the walk fills: the walk's 404s are refusals,
    not typos."""
    world.add_bravo()
    staff = get_user_model().objects.create_superuser("root", "root@example.org", "pw")
    client = Client(raise_request_exception=False)
    client.force_login(staff)
    missing = []
    for probe in world.probes:
        if probe.target == "bravo" and probe.method == "GET":
            status = client.get(probe.path).status_code
            if status != 200:
                missing.append(f"{probe.path}: {status}")
    assert missing == []
    assert sum(p.target == "bravo" for p in world.probes) >= 50


def _leaked(world: World, answers: dict[tuple[str, str, str], Answer]) -> list[str]:
    """Answers that show a bravo-only string, and where bravo holds it."""
    forbidden = bravo_only_strings()
    found = []
    for (caller, method, path), answer in answers.items():
        shown = leaks(path, answer, forbidden)
        if shown:
            described = ", ".join(world.describe(s) for s in shown)
            found.append(f"{method} {path} as {caller} ({answer.status}): {described}")
    return found


def _changed(
    before: dict[tuple[str, str, str], Answer], after: dict[tuple[str, str, str], Answer]
) -> list[str]:
    """Answers that differ (tokens aside) between the walks before and after bravo arrived."""
    changed = []
    for key in sorted(set(before) | set(after)):
        caller, method, path = key
        old, new = before.get(key), after.get(key)
        if old is None or new is None:
            changed.append(f"{method} {path} as {caller}: {'new' if old is None else 'gone'} page")
            continue
        if old.status != new.status or normalized(old) != normalized(new):
            changed.append(
                f"{method} {path} as {caller}: {old.status} -> {new.status}"
                f"{_first_difference(normalized(old), normalized(new))}"
            )
    return changed


@pytest.mark.long
def test_alpha_members_find_nothing_of_bravo_and_no_answer_moves_when_it_arrives(
    world: World,
) -> None:
    """One walk before bravo is stored and one after (each walk is thousands of requests):

    - after: no answer shows a bravo-only string; bravo's rows answer 404 and alpha's 200;
    - byte for byte, counts, filter choices, queue neighbours and dashboards of alpha do not
      move when bravo's rows arrive, and a bravo id answers as an id that exists nowhere.
    """
    before = walk(world.client, world.probes)
    # With no bravo rows stored, the walk's expectations hold whatever the scoping does: a
    # failure here is a fault of the walk, not a leak.
    assert wrong_statuses(world.probes, before) == []
    assert not any(
        leaks(p, a, bravo_strings_known_before(world)) for (_, _, p), a in before.items()
    )
    world.add_bravo()
    after = walk(world.client, world.probes)
    problems = {
        "answers show bravo's rows": _leaked(world, after),
        "wrong statuses": wrong_statuses(world.probes, after),
        "answers changed when bravo arrived": _changed(before, after),
    }
    report = [
        f"{len(found)} {what}:\n" + "\n".join(found) for what, found in problems.items() if found
    ]
    assert report == [], "\n\n".join(report)


def bravo_strings_known_before(world: World) -> list[str]:
    """Bravo's markers, which no answer may hold while bravo is not stored (walk sanity)."""
    return sorted(world.planted.places)


def _first_difference(old: str, new: str) -> str:
    """Where two answers part, with a little context of each."""
    at = next(
        (i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b),
        min(len(old), len(new)),
    )
    return (
        f"; before: {old[max(0, at - 60) : at + 80]!r}; after: {new[max(0, at - 60) : at + 80]!r}"
    )


# ---------------------------------------------------------------------------------------------
# Writes across operations
# ---------------------------------------------------------------------------------------------


def key_client(world: World, caller: str) -> Client:
    """A client sending one of alpha's keys."""
    return client_for(caller, world.users, world.keys)


def markers_beyond(sent: Any, answer: str) -> set[str]:
    """Markers in an answer that the request did not carry itself."""
    return {m.upper() for m in MARKER_RE.findall(answer)} - {
        m.upper() for m in MARKER_RE.findall(json.dumps(sent))
    }


def bravo_counts() -> dict[str, int]:
    """How many rows bravo holds, per kind."""
    bravo = Operation.objects.get(name=BRAVO)
    return {
        "conversations": Conversation.objects.filter(operation=bravo).count(),
        "pieces": MessagePiece.objects.filter(conversation__operation=bravo).count(),
        "scores": Score.objects.filter(operation=bravo).count(),
        "attack_results": AttackResult.objects.filter(operation=bravo).count(),
        "scenario_results": ScenarioResult.objects.filter(operation=bravo).count(),
    }


def test_alpha_ingest_key_cannot_write_into_bravo(world: World) -> None:
    """New items naming bravo are refused on `labels.operation`; items that add to, replay or
    claim bravo's rows are refused without comparing them with what bravo stored."""
    world.add_bravo()
    before = bravo_counts()
    bravo = world.bravo.payload
    bravo_piece = next(p for p in bravo["message_pieces"] if p["role"] == "assistant")
    legacy = next(p for p in bravo["message_pieces"] if "labels" in p)
    new_id = str(uuid.uuid4())
    labelled = dict(legacy, id=new_id, original_prompt_id=new_id, conversation_id=new_id)
    appended = dict(bravo_piece, id=new_id, original_prompt_id=new_id, sequence=9, role="user")
    changed = dict(bravo_piece, original_value="guess", converted_value="guess")
    result_on_bravo = dict(
        bravo["attack_results"][0], attack_result_id=new_id, labels={"operation": ALPHA}
    )
    labelled_result = dict(
        result_on_bravo, conversation_id=str(uuid.uuid4()), labels={"operation": BRAVO}
    )
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("a new bravo-labelled piece", {"message_pieces": [labelled]}, "labels.operation"),
        ("a new bravo-labelled result", {"attack_results": [labelled_result]}, "labels.operation"),
        ("a replayed bravo piece", {"message_pieces": [bravo_piece]}, "id"),
        ("a changed bravo piece", {"message_pieces": [changed]}, "id"),
        ("a piece added to a bravo conversation", {"message_pieces": [appended]}, ""),
        ("a second score of a bravo piece", {"scores": [dict(bravo["scores"][0], id=new_id)]}, ""),
        ("a replayed bravo score", {"scores": [bravo["scores"][0]]}, ""),
        ("an alpha result on a bravo conversation", {"attack_results": [result_on_bravo]}, ""),
        ("a replayed bravo scenario", {"scenario_results": bravo["scenario_results"]}, ""),
    ]
    client = key_client(world, "ingest_key")
    wrong = []
    for what, payload, field in cases:
        response = client.post(
            "/api/v1/ingest/", json.dumps(payload), content_type="application/json"
        )
        body = response.json()
        statuses = {i["status"] for i in body.get("items", [])}
        errors = [e for i in body.get("items", []) for e in i.get("errors", [])]
        if response.status_code != 207 or statuses != {"rejected"} or body.get("unchanged"):
            wrong.append(f"{what}: {response.status_code} {statuses}")
        if field and {e["field"] for e in errors} != {field}:
            wrong.append(f"{what}: error fields {sorted(e['field'] for e in errors)}, not {field}")
        if any(w in e["message"].lower() for e in errors for w in ("conflict", "differ")):
            wrong.append(f"{what}: the answer compares with bravo's rows: {errors}")
        if extra := markers_beyond(payload, response.content.decode()):
            wrong.append(f"{what}: the answer shows {sorted(extra)}")
    assert wrong == [], "\n".join(wrong)
    assert bravo_counts() == before
    assert MessagePiece.objects.get(pk=bravo_piece["id"]).original_value != "guess"


def test_alpha_media_upload_does_not_link_a_bravo_piece(world: World) -> None:
    world.add_bravo()
    client = key_client(world, "ingest_key")
    piece_id = world.bravo.unlinked_image_piece
    assert piece_id is not None
    response = client.post(
        "/api/v1/media/",
        {
            "file": SimpleUploadedFile("x.png", b"\x89PNG\r\n\x1a\nalpha bytes"),
            "original_piece_id": [piece_id],
            "converted_piece_id": [piece_id],
        },
    )
    assert response.status_code == 201
    piece = MessagePiece.objects.get(pk=piece_id)
    assert (piece.original_media_id, piece.converted_media_id) == (None, None)
    assert not markers_beyond({}, response.content.decode())


def test_alpha_keys_learn_nothing_of_bravos_media_from_the_media_endpoints(world: World) -> None:
    """Bytes only bravo stored are answered as bytes nobody stored: missing, and new."""
    world.add_bravo()
    own_sha = next(sha for sha in world.bravo.media if sha not in world.alpha.media)
    nobody = "0" * 64
    client = key_client(world, "ingest_key")
    response = client.post(
        "/api/v1/media/missing/",
        json.dumps({"sha256": [own_sha, nobody]}),
        content_type="application/json",
    )
    assert response.status_code == 200
    assert sorted(response.json()["missing"]) == sorted([own_sha, nobody])
    content, _ = world.bravo.media[own_sha]
    response = client.post("/api/v1/media/", {"file": SimpleUploadedFile("y.png", content)})
    assert (response.status_code, response.json()["created"]) == (201, True)
    reader = key_client(world, "read_key")
    assert reader.get(f"/api/v1/media/{own_sha}/").status_code == 404


def test_alpha_reviewer_cannot_record_a_verdict_on_a_bravo_result(world: World) -> None:
    world.add_bravo()
    client = client_for("lead", world.users, world.keys)
    before = Score.objects.count()
    for result_id in world.bravo.attack_result_ids:
        response = client.post(
            f"/attack-results/{result_id}/verdict/",
            {"verdict": "true", "rationale": "guess", "submission": str(uuid.uuid4())},
        )
        assert response.status_code == 404
    assert Score.objects.count() == before


def test_alpha_curator_cannot_promote_a_bravo_piece(world: World) -> None:
    """Promoting needs the seeds permissions; with them, a bravo piece or result is answered
    as one that does not exist, and nothing of it reaches a seed."""
    world.add_bravo()
    curator = world.users["lead"]
    curator.user_permissions.add(
        *Permission.objects.filter(codename__in=["add_seed", "add_seeddataset"])
    )
    client = client_for("lead", world.users, world.keys)
    seeds_before = Seed.objects.count()
    alpha_piece = world.alpha.piece_ids[1]
    answers = []
    for piece_id, result_id in (
        (world.bravo.piece_ids[1], ""),
        (str(uuid.uuid4()), ""),
        (alpha_piece, world.bravo.attack_result_ids[0]),
        (alpha_piece, str(uuid.uuid4())),
    ):
        data = {
            "piece_id": piece_id,
            "dataset_name": "promoted",
            "seed_type": "prompt",
            "confirm": "yes",
        }
        if result_id:
            data["attack_result_id"] = result_id
        response = client.post("/pieces/promote/", data, follow=True)
        answers.append(response.content.decode().replace(piece_id, "").replace(result_id, ""))
    assert Seed.objects.count() == seeds_before
    assert answers[0] == answers[1], "a bravo piece is answered unlike a piece that exists nowhere"
    assert answers[2] == answers[3], "a bravo result is answered unlike one that exists nowhere"
    assert not any(MARKER_RE.search(a) for a in answers)


def test_alpha_export_holds_nothing_of_bravo(world: World) -> None:
    world.add_bravo()
    out = io.StringIO()
    call_command(
        "export_conversations", "--run", "--operation", ALPHA, stdout=out, stderr=io.StringIO()
    )
    text = out.getvalue()
    forbidden = bravo_only_strings()
    assert leaks("/", Answer(200, text), forbidden) == []
    run = json.loads(text)
    exported = {c["conversation_id"] for c in run["conversations"]}
    assert world.alpha.main_conversation in exported
    assert exported <= set(world.alpha.conversation_ids)
    assert world.alpha.main_result in text


def test_alpha_pyrit_memory_downloads_hold_nothing_of_bravo(
    world: World, tmp_path: pathlib.Path
) -> None:
    """The list pages' "Export as PyRIT memory" zips, opened: every row of every table of the
    memory file, and the media beside it, are alpha's (or shared)."""
    world.add_bravo()
    forbidden = bravo_only_strings()
    client = world.client("reviewer")
    for name in ("export_memory_conversations", "export_memory_attack_results"):
        for shape in ("1.x", "0.13"):
            response = client.get(reverse(name), {"shape": shape})
            assert response.status_code == 200
            archive = zipfile.ZipFile(io.BytesIO(response.getvalue()))
            folder = tmp_path / f"{name}-{shape}"
            archive.extractall(folder)
            conn = sqlite3.connect(folder / "pyrit_memory.db")
            tables = [
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            ]
            text = json.dumps({t: conn.execute(f'SELECT * FROM "{t}"').fetchall() for t in tables})
            conversations = {
                r[0] for r in conn.execute('SELECT conversation_id FROM "PromptMemoryEntries"')
            }
            conn.close()
            assert leaks("/", Answer(200, text), forbidden) == [], (name, shape)
            assert world.alpha.main_conversation in conversations
            assert conversations <= set(world.alpha.conversation_ids)
            for member in archive.namelist():
                if member.startswith("media/"):
                    digest = hashlib.sha256(archive.read(member)).hexdigest()
                    assert member.removeprefix("media/").startswith(digest)
                    assert digest not in forbidden


def test_alpha_pyrit_memory_export_command_holds_nothing_of_bravo(
    world: World, tmp_path: pathlib.Path
) -> None:
    world.add_bravo()
    out = tmp_path / "alpha.db"
    call_command("export_pyrit_memory", "-o", str(out), "--operation", ALPHA, stdout=io.StringIO())
    conn = sqlite3.connect(out)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    text = json.dumps({t: conn.execute(f'SELECT * FROM "{t}"').fetchall() for t in tables})
    conn.close()
    assert leaks("/", Answer(200, text), bravo_only_strings()) == []
    assert world.alpha.main_result in text
