"""Every admin add and change page answers a clear form error, never a 500, for empty or
minimal submissions. The pages come from the admin registry, so a new ModelAdmin is covered."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import models
from django.test import Client, RequestFactory
from django.urls import reverse

from redteam.common.admin import ReadOnlyMixin
from redteam.common.models import MediaBlob
from tests.security.conftest import PNG, Roles

pytestmark = pytest.mark.django_db


def _registered() -> list[tuple[type[models.Model], admin.ModelAdmin[Any]]]:
    return sorted(admin.site._registry.items(), key=lambda item: item[0]._meta.label)


ADMINS = [model._meta.label for model, _ in _registered()]


@pytest.fixture
def staff(roles: Roles) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(roles.users["staff"])
    return client


def _minimal_posts(model: type[models.Model]) -> list[dict[str, Any]]:
    """Empty, then each editable field alone with a short value (a name, a number, a flag)."""
    posts: list[dict[str, Any]] = [{}]
    for field in model._meta.get_fields():
        if not getattr(field, "editable", False) or not getattr(field, "concrete", False):
            continue
        if isinstance(field, models.BooleanField):
            value: Any = "on"
        elif isinstance(field, models.IntegerField | models.FloatField | models.DecimalField):
            value = "1"
        elif isinstance(field, models.JSONField):
            value = "{}"
        else:
            value = "x.png"
        posts.append({field.name: value})
    return posts


@pytest.mark.parametrize("label", ADMINS)
@pytest.mark.usefixtures("quiet_request_log")
def test_admin_add_page_never_answers_500_to_empty_or_minimal_posts(
    label: str, staff: Client
) -> None:
    model = next(m for m, _ in _registered() if m._meta.label == label)
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_add")
    wrong = []
    for data in _minimal_posts(model):
        response = staff.post(url, data)
        # 200: the form again with its errors; 302: stored; 403: adding is closed here.
        if response.status_code not in (200, 302, 403):
            wrong.append(f"{sorted(data)}: {response.status_code}")
        elif response.status_code == 200:
            assert b"errornote" in response.content or b"errorlist" in response.content, data
    assert wrong == []


@pytest.mark.parametrize("label", ADMINS)
@pytest.mark.usefixtures("memory", "quiet_request_log")
def test_admin_change_page_never_answers_500_to_an_empty_post(label: str, staff: Client) -> None:
    model = next(m for m, _ in _registered() if m._meta.label == label)
    obj = model._default_manager.order_by("pk").first()
    if obj is None:
        pytest.skip(f"no {label} row in the ingested run")
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_change", args=[obj.pk])
    response = staff.post(url, {})
    assert response.status_code in (200, 302, 403), response.status_code


def test_media_blob_add_with_only_a_file_name_asks_for_the_file(staff: Client) -> None:
    url = reverse("admin:redteam_mediablob_add")
    response = staff.post(url, {"original_filename": "cat.png"})
    assert response.status_code == 200
    assert b"This field is required." in response.content
    assert not MediaBlob.objects.exists()


def test_media_blob_add_stores_the_upload_like_the_api(staff: Client) -> None:
    url = reverse("admin:redteam_mediablob_add")
    upload = SimpleUploadedFile("cat.png", PNG, content_type="text/plain")
    response = staff.post(url, {"file": upload})
    assert response.status_code == 302
    blob = MediaBlob.objects.get()
    assert (blob.size, blob.content_type, blob.original_filename) == (
        len(PNG),
        "image/png",
        "cat.png",
    )
    # The same bytes again: the same row, no error.
    again = SimpleUploadedFile("other.png", PNG)
    assert staff.post(url, {"file": again}).status_code == 302
    assert MediaBlob.objects.count() == 1


def test_admins_closed_to_adding_and_changing_share_the_read_only_base() -> None:
    """An admin (or inline) that refuses even a superuser both add and change is the one
    read-only base of redteam.common.admin, not a copy of it."""
    request = RequestFactory().get("/admin/")
    request.user = User(is_active=True, is_staff=True, is_superuser=True)
    closed: list[Any] = []
    for model_admin in admin.site._registry.values():
        if not model_admin.has_add_permission(request) and not (
            model_admin.has_change_permission(request)
        ):
            closed.append(model_admin)
        for inline_class in model_admin.inlines:
            inline = inline_class(model_admin.model, admin.site)
            if not inline.has_add_permission(request, None) and not (
                inline.has_change_permission(request)
            ):
                closed.append(inline)
    assert closed, "no read-only admin found"
    copies = [type(c).__name__ for c in closed if not isinstance(c, ReadOnlyMixin)]
    assert copies == []
