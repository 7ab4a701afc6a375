"""Admin pages beyond ModelAdmin: the .prompt import (preview + confirm) and template preview."""

from __future__ import annotations

import base64
import secrets
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from seeds import services
from seeds.forms import ImportUploadForm, TemplatePreviewForm
from seeds.importing import ImportSource, group_plan_rows
from seeds.models import Seed
from seeds.templating import TemplateSyntaxProblem, render_strict, template_variables

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
                "reports": [(r, [(g, group_plan_rows(g)) for g in r.groups]) for r in reports],
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
    reports = services.import_dataset(
        sources=_sources(pending["texts"]), user=request.user, media=media
    )
    for report in reports:
        level = messages.SUCCESS if report.ok else messages.ERROR
        messages.add_message(request, level, report.summary())
        for problem in report.errors[:20]:
            messages.error(request, problem)
    return HttpResponseRedirect(reverse("admin:seeds_seeddataset_changelist"))


def preview_view(model_admin: Any, request: HttpRequest, pk: Any) -> HttpResponse:
    """Render a seed's value in the sandbox, strictly, with the parameters typed in."""
    if not model_admin.has_view_permission(request):
        raise PermissionDenied
    seed = Seed.objects.filter(pk=pk).first()
    if seed is None:
        raise Http404
    error = None
    try:
        variables = sorted(template_variables(seed.value) | set(seed.parameters or []))
    except TemplateSyntaxProblem as exc:
        variables, error = sorted(seed.parameters or []), str(exc)
    posted = request.method == "POST"
    form = TemplatePreviewForm(request.POST if posted else None, variables=variables)
    rendered = None
    if posted and form.is_valid() and error is None:
        try:
            rendered = render_strict(seed.value, seed.name, **form.cleaned_data)
        except ValueError as exc:
            error = str(exc)
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.model._meta,
        "title": "Template preview",
        "seed": seed,
        "original": seed,
        "form": form,
        "rendered": rendered,
        "error": error,
    }
    return TemplateResponse(request, "admin/seeds/seed/preview.html", context)
