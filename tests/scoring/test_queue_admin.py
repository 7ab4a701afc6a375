"""Review queues in the admin (validated filter, categories, built-ins kept, scoped as
operations are) and "save as queue" from a filtered attack-results list."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from redteam.common.models import AuditEvent, Operation
from scoring.models import ReviewQueue
from scoring.queue_admin_views import queue_url
from scoring.verdict_fields import MAX_CATEGORIES, MAX_CATEGORY_CHARS
from tests.access import grant
from tests.memory.row_factories import make_attack_result, make_conversation

pytestmark = pytest.mark.django_db

ADD = "admin:scoring_reviewqueue_add"
CHANGE = "admin:scoring_reviewqueue_change"
DELETE = "admin:scoring_reviewqueue_delete"
LIST = "admin:scoring_reviewqueue_changelist"


def login(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


class World:
    """Two operations; a superuser, a staff lead of alpha (reviewer in beta), a reviewer of
    alpha, a reader of alpha; a queue in each operation."""

    def __init__(self) -> None:
        self.alpha = Operation.objects.create(name="op-alpha")
        self.beta = Operation.objects.create(name="op-beta")
        self.root = User.objects.create_superuser("root", "root@example.org", "pw")
        self.lead = User.objects.create_user("lena", is_staff=True)
        self.rita = User.objects.create_user("rita")
        self.rob = User.objects.create_user("rob")
        grant(self.lead, self.alpha, "lead")
        grant(self.lead, self.beta, "reviewer")
        grant(self.rita, self.alpha, "reviewer")
        grant(self.rob, self.alpha, "read-only")
        self.alpha_queue = ReviewQueue.objects.create(
            name="Alpha hate", slug="alpha-hate", operation=self.alpha
        )
        self.beta_queue = ReviewQueue.objects.create(
            name="Beta all", slug="beta-all", operation=self.beta
        )


@pytest.fixture
def world(db: None) -> World:
    return World()


def form(**changes: Any) -> dict[str, Any]:
    """The admin add/change form as the browser posts it."""
    data: dict[str, Any] = {
        "name": "Hate successes",
        "slug": "hate-successes",
        "operation": "",
        "instructions": "## Read the **whole** reply",
        "filter_query": "outcome=success&harm_category=hate",
        "review": "unreviewed",
        "ask_true_false": "on",
        "categories_text": "refused\npartial\n\ncomplied\n",
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


# --- admin -----------------------------------------------------------------------------------


def test_the_admin_stores_the_filter_and_categories_validated(world: World) -> None:
    client = login(world.root)
    response = client.post(reverse(ADD), form())
    assert response.status_code == 302, response.content.decode()[:3000]
    queue = ReviewQueue.objects.get(slug="hate-successes")
    assert queue.filters == {"outcome": ["success"], "harm_category": ["hate"]}
    assert queue.categories == ["refused", "partial", "complied"]
    assert queue.instructions == "## Read the **whole** reply"
    assert queue.created_by == world.root
    assert queue.verdict_fields().categories == ("refused", "partial", "complied")
    assert AuditEvent.objects.filter(action="review_queue.created").count() == 1
    page = client.get(reverse(CHANGE, args=[queue.pk])).content.decode()
    assert "outcome=success&amp;harm_category=hate" in page
    # The instructions as the queue shows them: markdown rendered, then sanitized.
    assert "<h2>Read the <strong>whole</strong> reply</h2>" in page
    # A results-list URL pasted whole is read as its query string.
    url = reverse("scoring:attack_result_list") + "?target=OpenAIChatTarget&cursor=abc"
    client.post(reverse(CHANGE, args=[queue.pk]), form(filter_query=f"http://host{url}"))
    queue.refresh_from_db()
    assert queue.filters == {"target": ["OpenAIChatTarget"]}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"filter_query": "colour=red"}, "Unknown filter parameter(s): colour"),
        ({"filter_query": "outcome=maybe"}, "Invalid filter: outcome"),
        ({"filter_query": "after=yesterday"}, "Invalid filter: after"),
        ({"filter_query": "min_turns=many"}, "Invalid filter: min_turns"),
        ({"categories_text": "a\nb\na"}, "Categories must be unique: a."),
        (
            {"categories_text": "\n".join(f"c{i}" for i in range(MAX_CATEGORIES + 1))},
            f"At most {MAX_CATEGORIES} categories",
        ),
        ({"categories_text": "x" * (MAX_CATEGORY_CHARS + 1)}, "at most 60 characters"),
        ({"slug": "mine"}, "names a page under /review/"),
        ({"instructions": "x" * 20_001}, "at most 20000 characters"),
        (
            {"ask_true_false": None, "categories_text": ""},
            "Ask for at least one verdict",
        ),
    ],
)
def test_the_admin_refuses_invalid_settings_with_a_clear_error(
    world: World, changes: dict[str, Any], message: str
) -> None:
    response = login(world.root).post(reverse(ADD), form(**changes))
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not ReviewQueue.objects.filter(slug=form(**changes)["slug"]).exists()


def test_builtin_queues_keep_their_identity_and_stay(world: World) -> None:
    client = login(world.root)
    builtin = ReviewQueue.objects.get(slug="unreviewed")
    page = client.get(reverse(CHANGE, args=[builtin.pk]))
    assert page.status_code == 200
    assert 'name="slug"' not in page.content.decode()
    assert 'name="filter_query"' not in page.content.decode()
    posted = form(
        name="Renamed",
        slug="renamed",
        filter_query="outcome=success",
        review="reviewed",
        instructions="New words.",
    )
    assert client.post(reverse(CHANGE, args=[builtin.pk]), posted).status_code == 302
    builtin.refresh_from_db()
    assert (builtin.name, builtin.slug, builtin.filters, builtin.review) == (
        "Unreviewed",
        "unreviewed",
        {},
        "unreviewed",
    )
    assert builtin.instructions == "New words."
    assert client.post(reverse(DELETE, args=[builtin.pk]), {"post": "yes"}).status_code == 403
    bulk = {
        "action": "delete_selected",
        "_selected_action": [builtin.pk, world.alpha_queue.pk],
        "post": "yes",
    }
    # A bulk delete that includes a built-in queue is refused whole.
    client.post(reverse(LIST), bulk)
    assert ReviewQueue.objects.filter(slug="unreviewed").exists()
    assert ReviewQueue.objects.filter(pk=world.alpha_queue.pk).exists()
    client.post(reverse(LIST), {**bulk, "_selected_action": [world.alpha_queue.pk]})
    assert not ReviewQueue.objects.filter(pk=world.alpha_queue.pk).exists()
    assert AuditEvent.objects.filter(action="review_queue.deleted").count() == 1


def test_a_lead_manages_only_their_operations_queues(world: World) -> None:
    client = login(world.lead)
    listing = client.get(reverse(LIST))
    assert listing.status_code == 200
    assert list(listing.context["cl"].result_list) == [world.alpha_queue]
    assert client.get(reverse(CHANGE, args=[world.beta_queue.pk])).status_code == 404
    builtin = ReviewQueue.objects.get(slug="unreviewed")
    assert client.get(reverse(CHANGE, args=[builtin.pk])).status_code == 404
    # A lead's queue belongs to an operation they lead.
    refused = client.post(reverse(ADD), form(operation=""))
    assert "Choose the operation" in refused.content.decode()
    other = client.post(reverse(ADD), form(operation=str(world.beta.pk)))
    assert other.status_code == 200
    assert client.post(reverse(ADD), form(operation=str(world.alpha.pk))).status_code == 302
    assert ReviewQueue.objects.get(slug="hate-successes").operation == world.alpha
    # Staff leading nothing and plain members do not reach the page.
    assert login(world.rita).get(reverse(LIST)).status_code == 302


# --- save as queue ---------------------------------------------------------------------------


def test_the_results_list_offers_save_as_queue_to_reviewers_only(world: World) -> None:
    make_attack_result(make_conversation(2), outcome="success")
    url = reverse("scoring:attack_result_list") + "?outcome=success&cursor=&review=unreviewed"
    page = login(world.rita).get(url).content.decode()
    assert 'id="save-as-queue"' in page
    assert reverse("scoring:save_queue") + "?outcome=success" in page
    assert 'id="save-as-queue"' not in login(world.rob).get(url).content.decode()


def test_save_as_queue_stores_the_filter_and_opens_the_queue(world: World) -> None:
    client = login(world.rita)
    start = client.get(reverse("scoring:save_queue") + "?outcome=success&review=disagree&size=5")
    assert start.status_code == 200
    assert start.context["form"]["filters"].value() == "outcome=success"
    assert start.context["form"]["review"].value() == "disagree"
    offered = start.context["form"].fields["operation"].queryset
    assert list(offered) == [world.alpha]
    response = client.post(
        reverse("scoring:save_queue"),
        {
            "name": "Alpha successes",
            "instructions": "Check *every* turn.",
            "review": "disagree",
            "ask_true_false": "on",
            "ask_scale": "on",
            "categories": "refused\ncomplied",
            "ask_notes": "on",
            "operation": str(world.alpha.pk),
            "filters": "outcome=success",
        },
    )
    queue = ReviewQueue.objects.get(name="Alpha successes")
    assert response.status_code == 302
    assert response["Location"] == queue_url(queue.slug) == f"/review/{queue.slug}/"
    assert queue.slug == "alpha-successes"
    assert queue.filters == {"outcome": ["success"]}
    assert (queue.review, queue.operation, queue.created_by) == (
        "disagree",
        world.alpha,
        world.rita,
    )
    fields = queue.verdict_fields()
    assert (fields.true_false, fields.scale, fields.categories, fields.notes) == (
        True,
        True,
        ("refused", "complied"),
        True,
    )
    event = AuditEvent.objects.get(action="review_queue.created")
    assert (event.actor, event.detail["filters"]) == (world.rita, {"outcome": ["success"]})


def test_save_as_queue_refuses_bad_input_keeping_what_was_typed(world: World) -> None:
    client = login(world.rita)
    assert client.get(reverse("scoring:save_queue") + "?colour=red").status_code == 400
    base = {
        "name": "Mine",
        "instructions": "typed instructions",
        "ask_true_false": "on",
        "filters": "outcome=success",
    }
    cases = [
        ({"filters": "colour=red"}, "Unknown filter parameter(s): colour"),
        ({"filters": "outcome=maybe"}, "Invalid filter"),
        ({"operation": str(world.beta.pk)}, "Select a valid choice"),
        ({"name": "Alpha hate"}, "A queue with this name exists"),
        ({"ask_true_false": ""}, "Ask for at least one verdict"),
        ({"categories": "a\na"}, "Categories must be unique"),
    ]
    for changes, message in cases:
        response = client.post(reverse("scoring:save_queue"), {**base, **changes})
        assert response.status_code == 400, changes
        html = response.content.decode()
        assert message in html, changes
        assert "typed instructions" in html
    # Two queues named alike get distinct slugs; a reserved word is never a slug.
    client.post(reverse("scoring:save_queue"), base)
    client.post(reverse("scoring:save_queue"), {**base, "name": "mine!"})
    assert set(
        ReviewQueue.objects.filter(name__in=["Mine", "mine!"]).values_list("slug", flat=True)
    ) == {
        "mine-2",
        "mine-3",
    }


def test_readers_may_not_save_queues(world: World) -> None:
    client = login(world.rob)
    assert client.get(reverse("scoring:save_queue")).status_code == 403
    posted = {"name": "Nope", "ask_true_false": "on", "filters": ""}
    assert client.post(reverse("scoring:save_queue"), posted).status_code == 403
    assert not ReviewQueue.objects.filter(name="Nope").exists()


@pytest.mark.parametrize("n", [3, 30])
def test_save_as_queue_form_query_count_is_constant(
    world: World, django_assert_num_queries: Any, n: int
) -> None:
    for i in range(n):
        grant(world.rita, Operation.objects.create(name=f"op-{i:02d}"), "reviewer")
    client = login(world.rita)
    # session, user, memberships; the operations offered.
    with django_assert_num_queries(4):
        response = client.get(reverse("scoring:save_queue") + "?outcome=success")
    assert len(response.context["form"].fields["operation"].queryset) == n + 1


def test_hostile_instructions_stay_inert_in_the_preview(world: World) -> None:
    client = login(world.root)
    hostile = "<script>alert(1)</script> [x](javascript:alert(1)) ![i](http://evil.example/i.png)"
    client.post(reverse(ADD), form(instructions=hostile))
    queue = ReviewQueue.objects.get(slug="hate-successes")
    page = client.get(reverse(CHANGE, args=[queue.pk])).content.decode()
    assert "<script>alert(1)" not in page
    assert 'href="javascript:' not in page
    assert '<img src="http://evil' not in page
    # The image is a labelled link, the script tag text.
    assert 'href="http://evil.example/i.png"' in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
