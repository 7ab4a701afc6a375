"""Every width: at 800, 1024, 1280 and 1920 px no page scrolls sideways, whatever the data
(the hostile fixtures, 5,000-character unbroken tokens in an objective, a label, a piece, a
filename and an identifier param, plus the demo data); and on a 40-message conversation the
verdict button stays on screen while reading, at 800 and 1280 px.

One browser, one logged-in context per width; every page is visited at every width and every
overflow is collected before the assertion, which names the element that sticks out."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.urls import reverse
from playwright.sync_api import expect

from memory.models import AttackResult, ComponentIdentifier, ScenarioResult, ScorableContent
from redteam.site.ingest import ingest_batch
from seeds.models import Seed, SeedDataset
from tests.access import grant_everywhere
from tests.browser.test_review import MARKERS, _garak_payloads, _ingest_hostile
from tests.memory import factories as pyrit
from tests.memory.row_factories import make_media
from tests.security.test_hostile_content import (
    HANDWRITTEN,
    HUGE_LINE,
    RTL,
    TAG_SMUGGLED,
    ZERO_WIDTH,
)
from tests.seeds.factories import make_dataset, make_group

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("transactional_db")]

WIDTHS = (800, 1024, 1280, 1920)
HEIGHT = 900
PASSWORD = "pw-widths-123"
# One unbroken token: no space, no hyphen, nothing a browser may break at by itself.
TOKEN = "W" + "".join(f"{i:04x}" for i in range(1250))[: 5000 - 1]
OPERATION = "op-wide"

# The widest element that sticks out beyond the viewport, named by a short selector path: the
# outermost overflowing element (its parent still fits) is the one whose CSS needs fixing.
OVERFLOW_JS = """() => {
  const doc = document.documentElement;
  const width = window.innerWidth;
  if (doc.scrollWidth <= width) return null;
  const name = (el) => {
    const parts = [];
    for (let node = el; node && parts.length < 5; node = node.parentElement) {
      let part = node.tagName.toLowerCase();
      if (node.id) { parts.unshift(part + "#" + node.id); break; }
      const classes = Array.from(node.classList).slice(0, 3);
      if (classes.length) part += "." + classes.join(".");
      parts.unshift(part);
    }
    return parts.join(" > ");
  };
  const limit = doc.clientWidth + 1;
  const culprits = [];
  // An element's reach: its box, or its content when that spills out of a visible overflow.
  const reach = (el) => {
    const box = el.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) return 0;
    const spills = getComputedStyle(el).overflowX === "visible" && el.scrollWidth > el.clientWidth;
    return Math.max(box.right, spills ? box.left + el.scrollWidth : 0);
  };
  const inner = [];
  for (const el of document.body.querySelectorAll("*")) {
    const right = reach(el);
    if (right <= limit) continue;
    const parent = el.parentElement;
    const top = !parent || parent === document.body;
    const entry = [Math.round(right), name(el)];
    if (top || parent.getBoundingClientRect().right <= limit) culprits.push(entry);
    const leaf = !Array.from(el.children).some((child) => reach(child) > limit);
    if (leaf) inner.push(entry);
  }
  culprits.sort((a, b) => b[0] - a[0]);
  inner.sort((a, b) => b[0] - a[0]);
  return {scrollWidth: doc.scrollWidth, culprits: culprits.slice(0, 2).concat(inner.slice(0, 2))};
}"""


def _long_run() -> dict[str, str]:
    """Long unbroken strings everywhere a reviewer reads them, through the real ingestion."""
    conversation_id = str(uuid.uuid4())
    target = pyrit.identifier("OpenAIChatTarget", model_name=TOKEN, endpoint="https://x/" + TOKEN)
    labels = {"operation": OPERATION, "operator": "wide", "long": TOKEN, TOKEN[:200]: "key"}
    pieces = [
        pyrit.piece(
            conversation_id=conversation_id,
            sequence=0,
            role="user",
            original_value="Answer " + TOKEN,
            converted_value="Answer " + TOKEN[::-1],
            converter_identifiers=[pyrit.identifier("Base64Converter", note=TOKEN)],
            labels=labels,
            targeted_harm_categories=[TOKEN[:300]],
            timestamp=pyrit.ts(0),
        ),
        pyrit.piece(
            conversation_id=conversation_id,
            sequence=0,
            role="user",
            original_value="/home/op/" + TOKEN + ".png",
            original_value_data_type="image_path",
            converted_value="/home/op/" + TOKEN + ".png",
            converted_value_data_type="image_path",
            labels=labels,
            timestamp=pyrit.ts(0),
        ),
        pyrit.piece(
            conversation_id=conversation_id,
            sequence=1,
            role="assistant",
            original_value=TOKEN,
            labels=labels,
            prompt_metadata={"long": TOKEN},
            timestamp=pyrit.ts(1),
        ),
    ]
    reply_id = pieces[2]["id"]
    result = pyrit.attack_result(
        conversation_id=conversation_id,
        objective="Objective " + TOKEN,
        outcome="success",
        outcome_reason=TOKEN,
        labels=labels,
        targeted_harm_categories=[TOKEN[:300]],
        error_message=TOKEN,
        error_type=TOKEN[:100],
        metadata={"long": TOKEN},
        atomic_attack_identifier=pyrit.attack_identifier(note=TOKEN),
        last_response=None,
    )
    score = pyrit.score(
        message_piece_id=reply_id,
        score_rationale=TOKEN,
        score_category=[TOKEN[:300]],
        scorer_class_identifier=pyrit.identifier("SubStringScorer", substring=TOKEN),
    )
    report = ingest_batch(
        {
            "conversations": [
                pyrit.conversation(conversation_id=conversation_id, target_identifier=target)
            ],
            "message_pieces": pieces,
            "scores": [score],
            "attack_results": [result],
        }
    )
    rejected = [o for o in report.outcomes if o.status == "rejected"]
    assert not rejected, rejected[:3]
    return {"conversation": conversation_id, "result": result["attack_result_id"]}


def _long_conversation(messages: int = 40) -> str:
    """A conversation of `messages` paragraphs-long turns with an attack result to judge."""
    conversation_id = str(uuid.uuid4())
    paragraph = (
        "The assistant explains, at length and in several paragraphs, what it will and will "
        "not do; a reviewer reads every word before deciding. "
    ) * 8
    pieces = [
        pyrit.piece(
            conversation_id=conversation_id,
            sequence=i,
            role="user" if i % 2 == 0 else "assistant",
            original_value=f"Turn {i}. {paragraph}",
            labels={"operation": OPERATION},
            timestamp=pyrit.ts(i),
        )
        for i in range(messages)
    ]
    result = pyrit.attack_result(
        conversation_id=conversation_id,
        objective="Keep the verdict in reach",
        labels={"operation": OPERATION},
        executed_turns=messages // 2,
    )
    report = ingest_batch(
        {
            "conversations": [pyrit.conversation(conversation_id=conversation_id)],
            "message_pieces": pieces,
            "attack_results": [result],
        }
    )
    assert all(o.status != "rejected" for o in report.outcomes)
    return conversation_id


def _long_seeds() -> SeedDataset:
    """A dataset whose name, description, source and seeds hold the long token."""
    dataset = make_dataset(
        "wide_" + TOKEN[:200], description=TOKEN, source="https://example.invalid/" + TOKEN
    )
    make_group(
        dataset,
        {"value": TOKEN, "name": TOKEN[:200], "harm_categories": [TOKEN[:300]]},
        {"value": "/data/" + TOKEN + ".png", "data_type": "image_path", "sequence": 1},
    )
    return dataset


@pytest.fixture
def wide_world(fixtures_dir: Path) -> dict[str, str]:
    """Demo data, the hostile fixtures (garak's payloads, the security corpus's handwritten
    ones, hidden characters and a 250,000-character line) and the long tokens; a superuser
    who leads everything."""
    call_command("load_demo", "--password", PASSWORD, stdout=StringIO())
    extra = [*HANDWRITTEN, TAG_SMUGGLED, RTL, ZERO_WIDTH, HUGE_LINE]
    hostile = _ingest_hostile(_garak_payloads(fixtures_dir) + MARKERS + extra)
    long = _long_run()
    long_conversation = _long_conversation()
    dataset = _long_seeds()
    make_media()
    user = User.objects.create_superuser("wide", "wide@example.invalid", PASSWORD)
    grant_everywhere(user, "lead")
    result = AttackResult.objects.get(attack_result_id=long["result"])
    target = ComponentIdentifier.objects.filter(class_name="OpenAIChatTarget")
    long_target = next(t for t in target if TOKEN in str(t.params))
    other_target = target.exclude(hash=long_target.hash).first()
    assert other_target is not None
    scenario = ScenarioResult.objects.first()
    content = ScorableContent.objects.first()
    assert scenario is not None
    assert content is not None
    seed = Seed.objects.filter(dataset=dataset).first()
    assert seed is not None
    return {
        "hostile_conversation": hostile["conversation"],
        "hostile_result": hostile["result"],
        "long_conversation": long["conversation"],
        "long_result": long["result"],
        "objective": result.objective_sha256,
        "target": long_target.hash,
        "other_target": other_target.hash,
        "scenario": str(scenario.pk),
        "content": str(content.pk),
        "dataset": str(dataset.pk),
        "seed": str(seed.pk),
        "forty": long_conversation,
    }


def _pages(ids: dict[str, str]) -> list[str]:
    return [
        "/",
        "/conversations/",
        reverse("scoring:conversation_detail", args=[ids["hostile_conversation"]]),
        reverse("scoring:conversation_detail", args=[ids["long_conversation"]]),
        "/attack-results/",
        # The human-labels downloads name the one filtered harm category.
        "/attack-results/?harm_category=" + "W" * 300,
        f"/attack-results/{ids['hostile_result']}/",
        f"/attack-results/{ids['long_result']}/",
        f"/objectives/{ids['objective']}/",
        "/review/",
        "/review/?view=reviewed",
        "/review/unreviewed/",
        reverse("scoring:conversation_detail", args=[ids["hostile_conversation"]])
        + "?queue=unreviewed",
        "/scored-content/",
        f"/scored-content/{ids['content']}/",
        "/scenarios/",
        f"/scenarios/{ids['scenario']}/",
        "/dashboard/",
        "/dashboard/?label_key=long",
        "/scorers/",
        "/dashboard/?label_key=long&trend_by=label&period=day",
        "/identifiers/",
        "/identifiers/?q=W0000",
        f"/identifiers/{ids['target']}/",
        f"/identifiers/diff/?a={ids['target']}&b={ids['other_target']}",
        "/seeds/",
        f"/seeds/datasets/{ids['dataset']}/",
        f"/seeds/seed/{ids['seed']}/preview/",
        "/admin/",
        f"/admin/seeds/seeddataset/{ids['dataset']}/change/",
    ]


def _overflow(page: Any, url: str, width: int) -> str | None:
    response = page.goto(url)
    assert response is not None, url
    assert response.status == 200, f"{url}: {response.status}"
    found = page.evaluate(OVERFLOW_JS)
    if found is None:
        return None
    culprits = "; ".join(f"{sel} (right edge {right}px)" for right, sel in found["culprits"])
    # The first two are the outermost boxes that stick out, the last two the innermost.
    return f"{width}px {url}: scrollWidth {found['scrollWidth']}: {culprits}"


@pytest.mark.long
def test_no_page_scrolls_sideways_at_any_width(
    browser: Any, live_server: Any, logged_in_page: Callable[..., Any], wide_world: dict[str, str]
) -> None:
    pages = _pages(wide_world)
    page = logged_in_page("wide", PASSWORD)
    problems: list[str] = []
    anonymous = browser.new_context(base_url=live_server.url)
    try:
        login = anonymous.new_page()
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": HEIGHT})
            for url in pages:
                problem = _overflow(page, url, width)
                if problem:
                    problems.append(problem)
            login.set_viewport_size({"width": width, "height": HEIGHT})
            problem = _overflow(login, "/accounts/login/", width)
            if problem:
                problems.append(problem)
    finally:
        anonymous.close()
    assert not problems, "pages scroll sideways:\n" + "\n".join(problems)

    # Without script: the lists still fit (cells break anywhere) and stack on narrow screens.
    plain = browser.new_context(base_url=live_server.url, java_script_enabled=False)
    try:
        bare = plain.new_page()
        bare.goto("/accounts/login/")
        bare.fill("#id_username", "wide")
        bare.fill("#id_password", PASSWORD)
        with bare.expect_navigation():
            bare.click("form.login-form button[type=submit]")
        for width in (800, 1280):
            bare.set_viewport_size({"width": width, "height": HEIGHT})
            for url in ("/conversations/", "/attack-results/", "/review/", "/seeds/"):
                problem = _overflow(bare, url, width)
                assert problem is None, f"without script: {problem}"
        bare.set_viewport_size({"width": 800, "height": HEIGHT})
        bare.goto("/conversations/")
        assert (
            bare.locator("#conversations td.preview").first.evaluate(
                "td => getComputedStyle(td).display"
            )
            == "block"
        )
    finally:
        plain.close()

    # Narrow: the list's rows are stacked cards, each value labelled with its column.
    page.set_viewport_size({"width": 800, "height": HEIGHT})
    page.goto("/conversations/")
    cell = page.locator("#conversations tbody tr td.preview").first
    assert cell.evaluate("td => getComputedStyle(td).display") == "block"
    label = cell.evaluate("td => getComputedStyle(td, '::before').content")
    assert label == '"First user text"', label
    # Wide: a table whose columns fit stays a table.
    page.set_viewport_size({"width": 1280, "height": HEIGHT})
    page.goto("/attack-results/")
    assert (
        page.locator("#results td.preview").first.evaluate("td => getComputedStyle(td).display")
        == "table-cell"
    )

    # A chip cut with an ellipsis shows its whole text: a tooltip, and in full when clicked.
    page.goto(reverse("scoring:conversation_detail", args=[wide_world["long_conversation"]]))
    chip = page.locator("dd span.chip", has_text="W0000").first
    assert chip.evaluate("c => c.scrollWidth > c.clientWidth")
    chip.hover()
    title = chip.get_attribute("title") or ""
    assert title == chip.text_content(), title[:80]
    assert len(title) > 150, title
    chip.click()
    assert chip.evaluate("c => c.scrollWidth <= c.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280


def _verdict_button_on_screen(page: Any) -> dict[str, Any]:
    return dict(
        page.evaluate(
            """() => {
              const doc = document.documentElement;
              window.scrollTo(0, Math.round((doc.scrollHeight - window.innerHeight) / 2));
              const button = document.querySelector("#verdict-form button[type=submit]");
              const box = button.getBoundingClientRect();
              return {top: box.top, bottom: box.bottom, left: box.left, right: box.right,
                      height: window.innerHeight, width: window.innerWidth,
                      page: doc.scrollHeight, scrolled: window.scrollY};
            }"""
        )
    )


@pytest.mark.parametrize("width", [800, 1280])
def test_verdict_button_stays_on_screen_while_reading(
    logged_in_page: Callable[..., Any], width: int
) -> None:
    conversation_id = _long_conversation()
    user = User.objects.create_user("reader", password=PASSWORD)
    grant_everywhere(user, "reviewer")
    page = logged_in_page("reader", PASSWORD)
    page.set_viewport_size({"width": width, "height": HEIGHT})
    page.goto(f"/conversations/{conversation_id}/")
    expect(page.locator(".message")).to_have_count(40)
    where = _verdict_button_on_screen(page)
    assert where["page"] > 4 * HEIGHT, where  # long enough that it would scroll away
    assert where["scrolled"] > HEIGHT, where
    assert where["top"] >= 0, where
    assert where["bottom"] <= where["height"], where
    assert where["left"] >= 0, where
    assert where["right"] <= where["width"], where
    # Typing, then reading on: the button and the typed text stay.
    page.fill("#verdict-rationale", "Still here after scrolling")
    page.mouse.wheel(0, 3 * HEIGHT)
    expect(page.locator("#verdict-form button[type=submit]")).to_be_in_viewport()
    expect(page.locator("#verdict-rationale")).to_have_value("Still here after scrolling")
    assert page.evaluate("document.documentElement.scrollWidth") <= width

    # Folded, the panel is one line and hides nothing it holds; a verdict key unfolds it.
    page.locator("#verdict-dock > summary").click()
    expect(page.locator("#verdict-rationale")).to_be_hidden()
    folded = page.locator("#verdict-dock").bounding_box()
    assert folded is not None
    assert folded["height"] < 80, folded
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("f")
    expect(page.locator("#verdict-false")).to_be_checked()
    expect(page.locator("#verdict-rationale")).to_be_focused()
    expect(page.locator("#verdict-rationale")).to_have_value("Still here after scrolling")
