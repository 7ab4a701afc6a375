"""Admin pages beyond ModelAdmin: .prompt import (preview + confirm), exports, template preview."""

from __future__ import annotations

import base64
import contextlib
import io
import secrets
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
)
from django.template.response import TemplateResponse
from django.urls import reverse

from redteam.core.visible import count_invisible, visible_text
from seeds import services
from seeds.bounded import time_budget
from seeds.forms import ImportUploadForm
from seeds.importing import ImportSource, group_plan_rows
from seeds.models import Seed
from seeds.preview import template_preview
from seeds.yaml_export import ExportProblem

# The import preview lists this many groups per file, so a huge file cannot make a huge page.
PREVIEW_GROUPS = 200
# A message about one seed or file shows at most this much of it.
MESSAGE_CHARS = 2_000
# The change page shows this much of a value as seen through the visible-character lens.
SHOWN_VALUE_CHARS = 20_000


def shown_with_count(text: str) -> str:
    """`text` (cut at SHOWN_VALUE_CHARS) with stand-ins, prefixed by the count of hidden ones."""
    shown = text[:SHOWN_VALUE_CHARS]
    hidden = count_invisible(shown)
    note = f"[{hidden} invisible character(s) shown as ⟨U+…⟩] " if hidden else ""
    cut = " […]" if len(text) > SHOWN_VALUE_CHARS else ""
    return note + visible_text(shown, limit=SHOWN_VALUE_CHARS) + cut


# One import preview or confirm renders the templates of all its files within this time.
IMPORT_SECONDS = 20.0
# One export request checks its templates within this many seconds in all (seeds.bounded).
EXPORT_SECONDS = 20.0


@dataclass
class _ExportReport:
    failed: bool = False


@contextlib.contextmanager
def export_problems_reported(model_admin: Any, request: HttpRequest) -> Iterator[_ExportReport]:
    """Run an export under one time budget; seeds it cannot write become error messages."""
    report = _ExportReport()
    try:
        with time_budget(EXPORT_SECONDS):
            yield report
    except ExportProblem as exc:
        report.failed = True
        model_admin.message_user(
            request,
            f"Nothing exported: {len(exc.problems)} seed(s) cannot be written.",
            messages.ERROR,
        )
        for problem in exc.problems[:20]:
            model_admin.message_user(
                request, visible_text(problem, limit=MESSAGE_CHARS), messages.ERROR
            )


def yaml_download(files: dict[str, str], zip_name: str) -> HttpResponse:
    """One `.prompt` file as a YAML download, or several in a zip."""
    if len(files) == 1:
        [(name, text)] = files.items()
        response = HttpResponse(text, content_type="application/yaml; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in sorted(files.items()):
            archive.writestr(name, text)
    response = HttpResponse(buffer.getvalue(), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{zip_name}"'
    return response


SESSION_PREFIX = "seeds-import:"
# Only the newest pending upload is kept, so an abandoned preview cannot pile up in the session.
SESSION_KEY = SESSION_PREFIX + "pending"


def _sources(texts: dict[str, str]) -> list[ImportSource]:
    return [ImportSource(name=name, text=text) for name, text in texts.items()]


def import_view(model_admin: Any, request: HttpRequest) -> HttpResponse:
    """Step 1: upload; step 2: preview (dry run); step 3: confirm (the same services import)."""
    if not (
        request.user.has_perm("seeds.add_seed") and request.user.has_perm("seeds.add_seeddataset")
    ):
        raise PermissionDenied
    context: dict[str, Any] = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": "Import PyRIT .prompt files",
    }
    if request.method == "POST" and "confirm" in request.POST:
        return _confirm(request)
    form = ImportUploadForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        texts: dict[str, str] = form.cleaned_data["texts"]
        media: dict[str, bytes] = form.cleaned_data["media"]
        with time_budget(IMPORT_SECONDS):
            reports = services.import_dataset(
                sources=_sources(texts), user=request.user, dry_run=True, media=media
            )
        token = secrets.token_urlsafe(24)
        request.session[SESSION_KEY] = {
            "token": token,
            "texts": texts,
            "media": {k: base64.b64encode(v).decode("ascii") for k, v in media.items()},
        }
        context.update(
            {
                "reports": [
                    (r, [(g, group_plan_rows(g)) for g in r.groups[:PREVIEW_GROUPS]])
                    for r in reports
                ],
                "token": token,
                "can_confirm": all(r.ok for r in reports)
                and any(r.groups_created for r in reports),
                "nothing_new": all(r.ok for r in reports)
                and not any(r.groups_created for r in reports),
            }
        )
        return TemplateResponse(request, "admin/seeds/import_preview.html", context)
    context["form"] = form
    return TemplateResponse(request, "admin/seeds/import_upload.html", context)


def _confirm(request: HttpRequest) -> HttpResponse:
    """Import what was previewed: the upload kept in the session under a one-time token."""
    pending = request.session.pop(SESSION_KEY, None)
    upload_url = reverse("admin:seeds_seeddataset_import")
    if not pending or not secrets.compare_digest(
        str(pending.get("token", "")), str(request.POST.get("token", ""))
    ):
        messages.error(request, "That import preview has expired; upload the files again.")
        return HttpResponseRedirect(upload_url)
    media = {k: base64.b64decode(v) for k, v in pending["media"].items()}
    with time_budget(IMPORT_SECONDS):
        reports = services.import_dataset(
            sources=_sources(pending["texts"]), user=request.user, media=media
        )
    for report in reports:
        level = messages.SUCCESS if report.ok else messages.ERROR
        messages.add_message(request, level, visible_text(report.summary(), limit=MESSAGE_CHARS))
        for problem in report.errors[:20]:
            messages.error(request, visible_text(problem, limit=MESSAGE_CHARS))
    return HttpResponseRedirect(reverse("admin:seeds_seeddataset_changelist"))


def preview_view(model_admin: Any, request: HttpRequest, pk: Any) -> HttpResponse:
    """The seed pages' template preview (seeds.preview) inside the admin's frame."""
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    if request.method not in {"GET", "POST"}:
        return HttpResponseNotAllowed(["GET", "POST"])
    seed = Seed.objects.filter(pk=pk).first()
    if seed is None:
        raise Http404
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": "Template preview",
        "original": seed,
        **template_preview(request, seed),
    }
    return TemplateResponse(request, "admin/seeds/seed/preview.html", context)
