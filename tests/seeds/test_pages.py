"""Seed pages of the review UI (read-only) and the promote-to-seed endpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test.client import Client
from django.urls import reverse

from memory.models import AttackResult, MessagePiece
from memory.services import store_attack_results, store_conversations, store_message_pieces
from seeds.models import Seed, SeedDataset
from tests.access import grant_everywhere

from .factories import make_dataset, make_group, make_seed

pytestmark = pytest.mark.django_db

HOSTILE = "<script>alert(1)</script>{{ 7*7 }}"


@pytest.fixture
def reader(client: Client) -> Client:
    """A logged-in read-only reviewer (may read the pages) without any seeds permission."""
    user = User.objects.create_user("reader", password="pw-reader-123")
    grant_everywhere(user, "read-only")
    client.force_login(user)
    return client


def test_pages_need_a_login(client: Client) -> None:
    dataset = make_dataset()
    seed = make_seed(dataset)
    for url in (
        reverse("seeds:dataset_list"),
        reverse("seeds:dataset_detail", args=[dataset.pk]),
        reverse("seeds:seed_preview", args=[seed.pk]),
    ):
        response = client.get(url)
        assert response.status_code == 302
        assert "/accounts/login/" in response["Location"]


def test_dataset_list_shows_counts_and_escapes_names(reader: Client) -> None:
    dataset = make_dataset(HOSTILE, description=HOSTILE)
    make_group(dataset, {"value": "a"}, {"value": "b"})
    response = reader.get(reverse("seeds:dataset_list"))
    assert response.status_code == 200
    assert b"<script>alert(1)" not in response.content
    assert b"&lt;script&gt;alert(1)&lt;/script&gt;{{ 7*7 }}" in response.content
    [row] = response.context["datasets"]
    assert (row.seed_count, row.group_count) == (2, 1)


def test_dataset_detail_shows_groups_with_seeds_in_pyrit_order(reader: Client) -> None:
    dataset = make_dataset()
    make_group(
        dataset,
        {"value": "second turn", "sequence": 1, "role": "assistant"},
        {"value": HOSTILE},
        {"value": "the goal", "seed_type": "objective", "role": None, "sequence": None},
    )
    response = reader.get(reverse("seeds:dataset_detail", args=[dataset.pk]))
    body = response.content.decode()
    assert body.index("the goal") < body.index("&lt;script&gt;") < body.index("second turn")
    assert "<script>alert(1)" not in body


def test_dataset_detail_of_an_unknown_dataset_is_404(reader: Client) -> None:
    assert reader.get(reverse("seeds:dataset_detail", args=[999])).status_code == 404


def _dataset_with_groups(n: int) -> SeedDataset:
    dataset = make_dataset(f"d{n}")
    for i in range(n):
        make_group(dataset, {"value": f"goal {i}", "seed_type": "objective"}, {"value": f"p {i}"})
    return dataset


@pytest.mark.parametrize("n", [3, 30])
def test_dataset_pages_cost_the_same_queries_at_3_and_30_groups(
    reader: Client, n: int, django_assert_num_queries: Any
) -> None:
    dataset = _dataset_with_groups(n)
    # session; user; memberships (a role in some operation opens the library); the user's and
    # their groups' permissions (for the admin link); datasets with counts.
    with django_assert_num_queries(6):
        assert reader.get(reverse("seeds:dataset_list")).status_code == 200
    # session; user; memberships; dataset; group count (paginator); groups page; their seeds;
    # the user's and their groups' permissions (for the edit/export links).
    with django_assert_num_queries(9):
        assert reader.get(reverse("seeds:dataset_detail", args=[dataset.pk])).status_code == 200


def test_preview_renders_in_the_sandbox_and_escapes_the_result(reader: Client) -> None:
    seed = make_seed(make_dataset(), value="Tell {{ who }} about it", parameters=["who"])
    url = reverse("seeds:seed_preview", args=[seed.pk])
    response = reader.post(url, {"render": "1", "who": HOSTILE})
    assert response.context["rendered"] == f"Tell {HOSTILE} about it"
    assert b"<script>alert(1)" not in response.content
    missing = reader.post(url, {"render": "1"})
    assert missing.context["rendered"] == "Tell  about it"  # an empty box is an empty string


@pytest.mark.parametrize(
    "value",
    ["{{ ''.__class__.__mro__ }}", "{{ cycler.__init__.__globals__ }}", "{{ range(10**7)|list }}"],
)
def test_preview_refuses_template_injection_with_a_clear_message(
    reader: Client, value: str
) -> None:
    seed = make_seed(make_dataset(), value=value)
    response = reader.post(reverse("seeds:seed_preview", args=[seed.pk]), {"render": "1"})
    assert response.status_code == 200
    assert response.context["rendered"] is None
    assert response.context["error"].startswith("Error rendering template")
    assert b'class="notice template-error"' in response.content


# -- promote a piece ---------------------------------------------------------------------


def _read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


@pytest.fixture
def memory_rows(fixtures_dir: Path) -> None:
    """PyRIT 1.1's pieces, conversations and attack results, through the memory services."""
    root = fixtures_dir / "pyrit-1.1"
    store_conversations(_read(root / "conversations.jsonl"))
    store_message_pieces(_read(root / "pieces.jsonl"))
    store_attack_results(_read(root / "attack_results.jsonl"))


@pytest.fixture
def promoter(client: Client) -> tuple[Client, User]:
    """A read-only reviewer who may also add seeds."""
    user = User.objects.create_user("promoter", password="pw-promoter-123")
    grant_everywhere(user, "read-only")
    user.user_permissions.add(Permission.objects.get(codename="add_seed"))
    client.force_login(user)
    return client, user


def _assistant_piece() -> MessagePiece | None:
    return (
        MessagePiece.objects.filter(role="assistant", converted_value_data_type="text")
        .order_by("timestamp")
        .first()
    )


@pytest.mark.usefixtures("memory_rows")
def test_promote_creates_a_seed_linked_to_its_piece_and_attack_result(
    promoter: tuple[Client, User],
) -> None:
    client, user = promoter
    dataset = make_dataset("reviewed")
    piece = _assistant_piece()
    result = AttackResult.objects.first()
    assert piece is not None
    assert result is not None
    back = reverse("seeds:dataset_list") + "?from=conversation"
    response = client.post(
        reverse("memory:promote_piece"),
        {
            "piece_id": str(piece.id),
            "dataset": str(dataset.pk),
            "seed_type": "prompt",
            "attack_result_id": str(result.attack_result_id),
            "next": back,
            "confirm": "yes",
        },
    )
    assert response.status_code == 302
    assert response["Location"] == back
    seed = Seed.objects.get()
    assert (seed.value, seed.role, seed.dataset_id) == (
        piece.converted_value,
        "assistant",
        dataset.pk,
    )
    assert (seed.source_piece_id, seed.source_attack_result_id) == (
        piece.id,
        result.attack_result_id,
    )
    assert seed.history.latest().history_user_id == user.pk
    # Promoting it again adds nothing.
    client.post(
        reverse("memory:promote_piece"),
        {
            "piece_id": str(piece.id),
            "dataset": str(dataset.pk),
            "seed_type": "prompt",
            "confirm": "yes",
        },
    )
    assert Seed.objects.count() == 1


@pytest.mark.usefixtures("memory_rows")
def test_promote_as_objective_refuses_non_text_and_unsafe_redirects(
    promoter: tuple[Client, User],
) -> None:
    client, _ = promoter
    dataset = make_dataset("reviewed")
    piece = _assistant_piece()
    response = client.post(
        reverse("memory:promote_piece"),
        {
            "piece_id": str(piece.id),  # type: ignore[union-attr]
            "dataset": str(dataset.pk),
            "seed_type": "objective",
            "next": "https://evil.example/steal",
            "confirm": "yes",
        },
    )
    assert response["Location"] == reverse("seeds:dataset_detail", args=[dataset.pk])
    assert Seed.objects.get().seed_type == "objective"
    image = MessagePiece.objects.filter(converted_value_data_type="image_path").first()
    if image is not None:
        client.post(
            reverse("memory:promote_piece"),
            {
                "piece_id": str(image.id),
                "dataset": str(dataset.pk),
                "seed_type": "objective",
                "confirm": "yes",
            },
        )
        assert Seed.objects.count() == 1


@pytest.mark.usefixtures("memory_rows")
def test_promote_rejects_bad_input_with_a_message(promoter: tuple[Client, User]) -> None:
    client, _ = promoter
    url = reverse("memory:promote_piece")
    for data in (
        {"piece_id": "nope", "dataset": "1"},
        {"piece_id": "00000000-0000-0000-0000-000000000000", "dataset_name": "new-one"},
        {"piece_id": str(_assistant_piece().id), "dataset": "12345"},  # type: ignore[union-attr]
    ):
        response = client.post(url, data, follow=True)
        assert b"Not promoted" in response.content
    assert Seed.objects.count() == 0
    assert not SeedDataset.objects.filter(dataset_name="new-one").exists()


@pytest.mark.usefixtures("memory_rows")
def test_promote_is_post_only_and_needs_the_add_seed_permission(reader: Client) -> None:
    url = reverse("memory:promote_piece")
    piece = _assistant_piece()
    dataset = make_dataset("reviewed")
    data = {"piece_id": str(piece.id), "dataset": str(dataset.pk)}  # type: ignore[union-attr]
    assert reader.post(url, data).status_code == 403
    assert Client().post(url, data).status_code == 302  # anonymous: to the login page
    user = User.objects.get(username="reader")
    user.user_permissions.add(Permission.objects.get(codename="add_seed"))
    reader.force_login(User.objects.get(pk=user.pk))
    assert reader.get(url).status_code == 405
    assert reader.post(url, data).status_code == 200  # the preview
    assert Seed.objects.count() == 0
    assert reader.post(url, {**data, "confirm": "yes"}).status_code == 302
    assert Seed.objects.count() == 1
