"""Hostile seeds through the pages: previews, exports, imports and lists stay in bounds.

Every request answers a 4xx, a page with the error, or a per-seed message: never a 500, never
a worker timeout. The preview renders only on a POST, with CSRF.
"""

from __future__ import annotations

import io
import os
import re
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import connection, connections
from django.test.client import Client
from django.urls import reverse

from seeds.models import Seed, SeedDataset, SeedGroup
from seeds.querysets import SEEDS_SHOWN_PER_GROUP
from tests.access import grant_everywhere

from .factories import make_dataset, make_group, make_seed

pytestmark = pytest.mark.django_db

CEILING_SECONDS = 5.0
HOSTILE = {
    "wordwrap": '{{ ("a" * 499999)|wordwrap(1) }}',
    "join": '{{ ("a" * 10000)|list|join("b" * 100000) }}',
    "indent": '{{ ("a\\n" * 200000)|indent("x" * 100000) }}',
    "nesting": "{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}",
}
# Right-to-left override, a Unicode tag "A" and a zero-width space.
SMUGGLED = "ok\u202eevil\U000e0041\u200b"


@pytest.fixture
def ceiling() -> Iterator[None]:
    """Fail the test if it took longer than the generous ceiling."""
    started = time.monotonic()
    yield
    assert time.monotonic() - started < CEILING_SECONDS


@pytest.fixture
def reader() -> Client:
    """A logged-in read-only reviewer."""
    user = User.objects.create_user("reader", password="pw-reader-123")
    grant_everywhere(user, "read-only")
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def staff(curator: User) -> Client:
    """The curator in the admin."""
    client = Client()
    client.force_login(curator)
    return client


def _preview_urls(seed: Seed) -> list[str]:
    return [
        reverse("seeds:seed_preview", args=[seed.pk]),
        reverse("admin:seeds_seed_preview", args=[seed.pk]),
    ]


def test_showing_the_preview_never_renders(reader: Client, staff: Client) -> None:
    seed = make_seed(make_dataset(), value="Hi {{ who }}", parameters=["who"])
    for client, url in zip((reader, staff), _preview_urls(seed), strict=True):
        response = client.get(url, {"render": "1", "who": "x"})
        assert response.status_code == 200
        assert response.context["rendered"] is None
        assert b'method="post"' in response.content
        assert b"csrfmiddlewaretoken" in response.content


def test_the_preview_post_needs_the_csrf_token(curator: User) -> None:
    grant_everywhere(curator, "read-only")
    seed = make_seed(make_dataset(), value="Hi {{ who }}", parameters=["who"])
    client = Client(enforce_csrf_checks=True)
    client.force_login(curator)
    for url in _preview_urls(seed):
        assert client.post(url, {"who": "x"}).status_code == 403
        page = client.get(url)
        token = page.context["csrf_token"]
        done = client.post(url, {"who": "x", "csrfmiddlewaretoken": str(token)})
        assert done.status_code == 200
        assert done.context["rendered"] == "Hi x"


def test_other_methods_are_refused(reader: Client, staff: Client) -> None:
    seed = make_seed(make_dataset())
    assert reader.put(_preview_urls(seed)[0]).status_code == 405
    assert staff.delete(_preview_urls(seed)[1]).status_code == 405


@pytest.mark.usefixtures("ceiling")
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_previewing_a_hostile_template_shows_a_clear_error(
    reader: Client, staff: Client, name: str
) -> None:
    seed = make_seed(make_dataset(), value=HOSTILE[name])
    response = reader.post(_preview_urls(seed)[0])
    assert response.status_code == 200
    assert response.context["rendered"] is None
    error = response.context["error"]
    assert "over budget" in error or "nest" in error
    assert b'class="notice template-error"' in response.content
    if name != "wordwrap":  # one 2 s time-out per test keeps the ceiling meaningful
        response = staff.post(_preview_urls(seed)[1])
        assert response.status_code == 200
        assert response.context["error"] == error


@pytest.mark.usefixtures("ceiling")
def test_saving_a_hostile_template_in_the_admin_is_a_form_error(staff: Client) -> None:
    seed = make_seed(make_dataset(), value="fine")
    from .admin_helpers import change_form_data

    data = change_form_data(staff, reverse("admin:seeds_seed_change", args=[seed.pk]))
    data.update(value=HOSTILE["join"], is_jinja_template="on")
    response = staff.post(reverse("admin:seeds_seed_change", args=[seed.pk]), data)
    assert response.status_code == 200
    assert "over budget" in str(response.context["adminform"].form.errors)
    assert Seed.objects.get(pk=seed.pk).value == "fine"


@pytest.mark.usefixtures("ceiling")
def test_exporting_a_dataset_with_a_hostile_seed_reports_it(staff: Client) -> None:
    dataset = make_dataset("mixed")
    make_seed(dataset, value="ordinary {{ x }}")
    bad = make_seed(dataset, value=HOSTILE["join"], name="the bomb")
    response = staff.get(reverse("admin:seeds_seeddataset_export", args=[dataset.pk]), follow=True)
    assert response.status_code == 200
    shown = [str(m) for m in response.context["messages"]]
    assert shown[0] == "Nothing exported: 1 seed(s) cannot be written."
    assert shown[1].startswith(f"seed {bad.pk} (the bomb): the template is over budget")
    action = staff.post(
        reverse("admin:seeds_seeddataset_changelist"),
        {"action": "export_selected", "_selected_action": [dataset.pk]},
        follow=True,
    )
    assert action.status_code == 200
    assert "Nothing exported" in action.content.decode()
    with pytest.raises(CommandError, match="the template is over budget"):
        call_command("export_seed_dataset", "mixed", stdout=io.StringIO())


def _upload(client: Client, text: str) -> Any:
    url = reverse("admin:seeds_seeddataset_import")
    return client.post(url, {"prompt_files": [SimpleUploadedFile("h.prompt", text.encode())]})


@pytest.mark.usefixtures("ceiling")
def test_the_import_dry_run_reports_hostile_seeds_per_seed(staff: Client) -> None:
    text = "dataset_name: d\nseeds:\n  - value: fine\n  - value: '" + HOSTILE["join"] + "'\n"
    response = _upload(staff, text)
    assert response.status_code == 200
    assert response.context["can_confirm"] is False
    [(report, _groups)] = response.context["reports"]
    assert report.errors[0].startswith("seeds[1].value: the template is over budget")
    bomb = "a0: &a0 [lol]\n" + "".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 9)
    )
    bomb += "dataset_name: d\nseeds:\n  - {value: x, metadata: {b: *a8}}\n"
    response = _upload(staff, bomb)
    assert response.status_code == 200
    assert b"YAML aliases expand the document" in response.content
    assert not SeedDataset.objects.exists()


def test_invisible_characters_are_shown_on_seed_pages_and_in_the_admin(
    reader: Client, staff: Client
) -> None:
    dataset = make_dataset(SMUGGLED, description=SMUGGLED)
    seed = make_seed(dataset, value=SMUGGLED + " {{ x }}", harm_categories=[SMUGGLED])
    pages = [
        reader.get(reverse("seeds:dataset_list")),
        reader.get(reverse("seeds:dataset_detail", args=[dataset.pk])),
        reader.get(reverse("seeds:seed_preview", args=[seed.pk])),
        staff.get(reverse("admin:seeds_seeddataset_changelist")),
        staff.get(reverse("admin:seeds_seeddataset_change", args=[dataset.pk])),
        staff.get(reverse("admin:seeds_seed_changelist")),
        staff.get(reverse("admin:seeds_seed_change", args=[seed.pk])),
        staff.get(reverse("admin:seeds_seedgroup_changelist")),
    ]
    for page in pages:
        html = page.content.decode()
        assert page.status_code == 200
        assert "⟨U+202E⟩" in html, page
        assert "⟨U+E0041⟩" in html, page
        assert "⟨U+200B⟩" in html, page
        # The raw characters appear only where a curator edits the value (form inputs).
        outside_inputs = re.sub(r"<textarea.*?</textarea>|<input[^>]*>", "", html, flags=re.S)
        assert "\u202e" not in outside_inputs
        assert "\U000e0041" not in outside_inputs
    change = pages[6].content.decode()
    assert "[3 invisible character(s) shown as ⟨U+…⟩]" in change


@pytest.mark.parametrize("seeds", [3, 120])
def test_a_huge_group_shows_its_first_seeds_with_a_count(
    reader: Client, seeds: int, django_assert_num_queries: Any
) -> None:
    dataset = make_dataset()
    make_group(dataset, *({"value": "\u200b" * 600 + f" {i}"} for i in range(seeds)))
    # session; user; memberships; dataset; group count (paginator); groups page with seed
    # counts; their first seeds; the user's and their groups' permissions (edit/export links).
    with django_assert_num_queries(9):
        response = reader.get(reverse("seeds:dataset_detail", args=[dataset.pk]))
    html = response.content.decode()
    assert html.count("<tr>") - 1 == min(seeds, SEEDS_SHOWN_PER_GROUP)
    assert len(html) < 10_000 + 8_000 * SEEDS_SHOWN_PER_GROUP
    shown = f"The first {SEEDS_SHOWN_PER_GROUP} of {seeds} seeds in this group are shown."
    assert (shown in html) == (seeds > SEEDS_SHOWN_PER_GROUP)


# -- confirming an import concurrently --------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("same_preview", [True, False])
def test_concurrent_confirms_store_the_seeds_once(curator: User, same_preview: bool) -> None:
    if connection.vendor != "postgresql":
        pytest.skip(
            "SQLite's in-memory test database is shared between threads through its shared "
            "cache, where a second writer fails at once (SQLITE_LOCKED) instead of waiting; "
            "the next test runs concurrent imports as processes on a SQLite file instead."
        )
    text = "dataset_name: fresh\nseeds:\n  - value: one\n  - value: two\n"
    clients: list[Client] = []
    tokens: list[str] = []
    for _ in range(3):
        client = Client()
        client.force_login(curator)
        if same_preview and clients:
            client.cookies = clients[0].cookies  # the same session: a double click or a retry
            tokens.append(tokens[0])
        else:
            tokens.append(_upload(client, text).context["token"])
        clients.append(client)
    barrier = threading.Barrier(len(clients))
    statuses: list[int] = []

    def confirm(client: Client, token: str) -> None:
        try:
            barrier.wait()
            response = client.post(
                reverse("admin:seeds_seeddataset_import"), {"confirm": "1", "token": token}
            )
            statuses.append(response.status_code)
        finally:
            connections.close_all()

    threads = [
        threading.Thread(target=confirm, args=(c, t)) for c, t in zip(clients, tokens, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [302, 302, 302]
    assert SeedDataset.objects.filter(dataset_name="fresh").count() == 1
    assert SeedGroup.objects.count() == 2
    assert sorted(Seed.objects.values_list("value", flat=True)) == ["one", "two"]


# Each process sets Django up, waits for the same instant, then imports the same file.
_IMPORT_AT = """
import os, sys, time
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "redteam.settings")
django.setup()
from seeds.importing import ImportSource, import_dataset
time.sleep(max(0.0, float(sys.argv[2]) - time.time()))
[report] = import_dataset(sources=[ImportSource("fresh.prompt", text=open(sys.argv[1]).read())])
print(report.seeds_created, report.seeds_skipped)
"""


@pytest.mark.django_db(transaction=True)
def test_concurrent_imports_store_the_seeds_once_on_a_sqlite_file(tmp_path: Path) -> None:
    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL runs the threaded confirm test above")
    # The migrated in-memory test database, copied to a file several processes can share.
    database = tmp_path / "shared.sqlite3"
    connection.ensure_connection()
    target = sqlite3.connect(database)
    connection.connection.backup(target)
    # As migrate leaves a real database file: in WAL mode already. Three connections switching a
    # fresh file to WAL at the same instant can deadlock on the upgrade to an exclusive lock,
    # which SQLite answers with "database is locked" without waiting on the busy timeout.
    target.execute("PRAGMA journal_mode=WAL")
    target.close()
    prompt = tmp_path / "fresh.prompt"
    prompt.write_text("dataset_name: fresh\nseeds:\n  - value: one\n  - value: two\n")
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{database}", "ENV_FILE": "", "DEBUG": "1"}
    start_at = str(time.time() + 3.0)
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _IMPORT_AT, str(prompt), start_at],
            cwd=settings.BASE_DIR,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    answers = []
    for process in processes:
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
        answers.append(out.split())
    assert sorted(answers) == [["0", "2"], ["0", "2"], ["2", "0"]]
    with sqlite3.connect(database) as check:
        assert check.execute("SELECT count(*) FROM seeds_seed").fetchone() == (2,)
        assert check.execute("SELECT count(*) FROM seeds_seeddataset").fetchone() == (1,)
