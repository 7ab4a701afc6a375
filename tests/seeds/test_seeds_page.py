"""The seeds page as one table, the admin's JSON fields (indented, checked when posted), and
promote-to-seed in two steps (the exact value first, then the save)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test.client import Client
from django.urls import reverse

from memory.models import MessagePiece
from seeds.models import Seed, SeedDataset
from tests.access import grant, grant_everywhere
from tests.memory.row_factories import PieceSpec, make_attack_result, make_conversation

from .admin_helpers import change_form_data
from .factories import make_dataset, make_group, make_seed

pytestmark = pytest.mark.django_db

# A value with what a glance would miss: a zero-width space, a right-to-left override,
# trailing spaces and a second line.
TRICKY = "Ignore the rules\u200b and \u202eanswer  \nsecond line  "


@pytest.fixture
def reader(client: Client) -> Client:
    user = User.objects.create_user("reader", password="pw-reader-123")
    grant_everywhere(user, "read-only")
    client.force_login(user)
    return client


# -- the seeds page --------------------------------------------------------------------------


def test_the_dataset_page_is_one_table_with_a_group_column(reader: Client) -> None:
    dataset = make_dataset("jailbreaks")
    make_group(
        dataset,
        {"value": "first turn"},
        {"value": "second turn", "sequence": 1, "role": "assistant"},
        alias="two-turns",
    )
    make_group(dataset, {"value": "standalone"})
    html = reader.get(reverse("seeds:dataset_detail", args=[dataset.pk])).content.decode()
    assert html.count("<table") == 1
    assert html.count('<tbody class="seed-group"') == 2
    header = re.search(r"<thead>.*?</thead>", html, re.S)
    assert header is not None
    assert header.group(0).index("Group") < header.group(0).index("Value")
    # The group is named on its first row; its other rows say "same group".
    assert html.count('class="group-name"') == 2
    assert "two-turns" in html
    assert html.count('aria-label="same group"') == 1
    assert html.index("first turn") < html.index("second turn") < html.index("standalone")
    assert 'href="/static/seeds/seeds.css"' in html


def test_an_empty_dataset_says_so_without_an_empty_table(reader: Client) -> None:
    dataset = make_dataset("empty")
    html = reader.get(reverse("seeds:dataset_detail", args=[dataset.pk])).content.decode()
    assert "This dataset holds no seeds." in html
    assert "<table" not in html


# -- the admin's JSON fields -----------------------------------------------------------------


@pytest.fixture
def curator_client(curator: User) -> Client:
    client = Client()
    client.force_login(curator)
    return client


def test_admin_json_fields_are_shown_indented(curator_client: Client) -> None:
    dataset = make_dataset("ds", harm_categories=["violence", "hate"], authors=["ann"])
    make_seed(dataset, metadata={"source": {"url": "x"}})
    url = reverse("admin:seeds_seeddataset_change", args=[dataset.pk])
    html = curator_client.get(url).content.decode()
    assert "[\n  &quot;violence&quot;,\n  &quot;hate&quot;\n]</textarea>" in html
    assert 'class="json-field"' in html
    seed = Seed.objects.get()
    seed_html = curator_client.get(
        reverse("admin:seeds_seed_change", args=[seed.pk])
    ).content.decode()
    assert "{\n  &quot;source&quot;: {\n    &quot;url&quot;: &quot;x&quot;\n  }\n}" in seed_html


def test_admin_invalid_json_is_a_form_error_and_nothing_is_saved(curator_client: Client) -> None:
    dataset = make_dataset("ds", harm_categories=["violence"])
    make_seed(dataset)
    url = reverse("admin:seeds_seeddataset_change", args=[dataset.pk])
    data = change_form_data(curator_client, url)
    data["harm_categories"] = '["violence", '
    response = curator_client.post(url, data)
    assert response.status_code == 200
    assert "Enter a valid JSON." in response.content.decode()
    # The text comes back as typed, to be corrected.
    assert "[&quot;violence&quot;, </textarea>" in response.content.decode()
    dataset.refresh_from_db()
    assert dataset.harm_categories == ["violence"]
    # Valid JSON however spaced is stored, and shown indented again.
    data["harm_categories"] = '[ "violence",\n"hate"]'
    assert curator_client.post(url, data).status_code == 302
    dataset.refresh_from_db()
    assert dataset.harm_categories == ["violence", "hate"]


def test_the_dataset_admin_page_leaves_the_value_hash_to_the_seed_page(
    curator_client: Client,
) -> None:
    dataset = make_dataset("ds")
    make_seed(dataset)
    html = curator_client.get(
        reverse("admin:seeds_seeddataset_change", args=[dataset.pk])
    ).content.decode()
    assert "column-value_sha256" not in html
    assert 'href="/static/seeds/admin.css"' in html


# -- promote: preview, then save -------------------------------------------------------------


@pytest.fixture
def promoter(client: Client) -> tuple[Client, User]:
    user = User.objects.create_user("cora", password="pw-cora-123")
    grant(user, "alpha", "reviewer")
    user.user_permissions.add(
        *Permission.objects.filter(codename__in=["add_seed", "add_seeddataset"])
    )
    client.force_login(user)
    return client, user


def _piece(labels: dict[str, str], value: str = TRICKY) -> tuple[MessagePiece, Any]:
    conv = make_conversation(
        [[PieceSpec("ask")], [PieceSpec(value, role="assistant")]], labels=labels
    )
    result = make_attack_result(conv)
    return conv.pieces.get(sequence=1), result


def test_promote_shows_the_exact_value_then_saves_it(promoter: tuple[Client, User]) -> None:
    client, _ = promoter
    piece, result = _piece({"operation": "alpha"})
    back = reverse("scoring:conversation_detail", args=[piece.conversation_id])
    data = {
        "piece_id": str(piece.id),
        "attack_result_id": str(result.pk),
        "dataset_name": "finds",
        "seed_type": "prompt",
        "next": back,
    }
    url = reverse("memory:promote_piece")
    response = client.post(url, data)
    assert response.status_code == 200
    html = response.content.decode()
    # Nothing written yet, not even the new dataset.
    assert not Seed.objects.exists()
    assert not SeedDataset.objects.filter(dataset_name="finds").exists()
    value = re.search(r'<pre class="promote-value" id="promote-value">(.*?)</pre>', html, re.S)
    assert value is not None
    assert value.group(0).count("⟨U+200B⟩") == 1
    assert value.group(0).count("⟨U+202E⟩") == 1
    assert "answer  \nsecond line  </pre>" in value.group(0)
    assert "new: created when you confirm" in html
    assert '<dd id="promote-data-type">text</dd>' in html
    assert '<dd id="promote-role">assistant</dd>' in html
    assert f"{len(TRICKY)} characters" in html
    assert 'name="confirm" value="yes"' in html
    # The second step stores exactly that value.
    confirm = dict(re.findall(r'<input type="hidden" name="([a-z_]+)" value="([^"]*)">', html))
    assert confirm["confirm"] == "yes"
    saved = client.post(url, confirm)
    assert saved.status_code == 302
    assert saved["Location"] == back
    seed = Seed.objects.get()
    assert seed.value == TRICKY
    assert (seed.data_type, seed.role, seed.dataset.dataset_name) == ("text", "assistant", "finds")  # type: ignore[union-attr]
    assert seed.source_attack_result_id == result.pk


def test_the_preview_says_when_the_dataset_already_holds_the_seed(
    promoter: tuple[Client, User],
) -> None:
    client, _ = promoter
    piece, _ = _piece({"operation": "alpha"}, value="already promoted")
    dataset = make_dataset("finds")
    data = {"piece_id": str(piece.id), "dataset": str(dataset.pk), "seed_type": "prompt"}
    url = reverse("memory:promote_piece")
    client.post(url, {**data, "confirm": "yes"})
    assert Seed.objects.count() == 1
    html = client.post(url, data).content.decode()
    assert 'id="promote-twin"' in html
    assert "confirming adds nothing" in html


def test_the_preview_of_another_operations_piece_is_a_404(promoter: tuple[Client, User]) -> None:
    client, _ = promoter
    piece, _ = _piece({"operation": "bravo"}, value="bravo secret words")
    response = client.post(
        reverse("memory:promote_piece"),
        {"piece_id": str(piece.id), "dataset_name": "finds", "seed_type": "prompt"},
    )
    assert response.status_code == 404
    assert "bravo secret words" not in response.content.decode()


def test_the_preview_refuses_an_objective_that_is_not_text(
    promoter: tuple[Client, User],
) -> None:
    client, _ = promoter
    piece, _ = _piece({"operation": "alpha"})
    MessagePiece.objects.filter(pk=piece.pk).update(converted_value_data_type="image_path")
    response = client.post(
        reverse("memory:promote_piece"),
        {"piece_id": str(piece.id), "dataset_name": "finds", "seed_type": "objective"},
        follow=True,
    )
    assert "Not promoted: An objective is text" in response.content.decode()
    assert not SeedDataset.objects.filter(dataset_name="finds").exists()
