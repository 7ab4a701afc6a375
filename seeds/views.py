"""Server-rendered seed pages: datasets, their groups, template previews; promote a piece.

Everything shown here may be hostile text: templates autoescape and never mark it safe.
Template previews (seeds.preview) render in the sandbox with the parameters posted.
"""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from redteam.common.roles import viewer_required
from redteam.core.visible import visible_text
from seeds import services
from seeds.models import Seed, SeedDataset
from seeds.preview import template_preview
from seeds.querysets import datasets_for_list, groups_for_detail

GROUPS_PER_PAGE = 50


@viewer_required
@require_GET
def dataset_list(request: HttpRequest) -> HttpResponse:
    """All datasets with their seed and group counts."""
    return render(request, "seeds/dataset_list.html", {"datasets": datasets_for_list()})


@viewer_required
@require_GET
def dataset_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A dataset's groups, each with its seeds in PyRIT's order (paginated by group)."""
    dataset = get_object_or_404(SeedDataset, pk=pk)
    page = Paginator(groups_for_detail(dataset), GROUPS_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "seeds/dataset_detail.html", {"dataset": dataset, "page": page})


@viewer_required
@require_http_methods(["GET", "POST"])
def seed_preview(request: HttpRequest, pk: uuid.UUID) -> HttpResponse:
    """Show a seed's template (GET); render it strictly with the parameters posted (POST)."""
    seed = get_object_or_404(Seed.objects.select_related("dataset"), pk=pk)
    return render(request, "seeds/seed_preview.html", template_preview(request, seed))


@login_required
@permission_required("seeds.add_seed", raise_exception=True)
@require_POST
def promote_piece(request: HttpRequest) -> HttpResponse:
    """Make a seed of a conversation piece (POST: piece_id, dataset, seed_type, ...).

    `dataset` is a dataset id, or `dataset_name` names one (created if the user may add
    datasets). `attack_result_id` and `next` (a same-site URL to return to) are optional.
    """
    back = request.POST.get("next") or ""
    if not url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        back = ""
    try:
        dataset = _chosen_dataset(request)
        result = services.promote_piece_to_seed(
            piece_id=_uuid(request.POST.get("piece_id"), "piece"),
            dataset=dataset,
            seed_type=request.POST.get("seed_type") or "prompt",
            user=request.user,
            attack_result_id=_uuid(request.POST.get("attack_result_id"), "attack result")
            if request.POST.get("attack_result_id")
            else None,
        )
    except ValueError as exc:
        messages.error(request, f"Not promoted: {exc}")
        return HttpResponseRedirect(back or reverse("seeds:dataset_list"))
    if result.created:
        messages.success(request, f"Added a seed to {visible_text(dataset.dataset_name)}.")
    else:
        messages.info(
            request, f"{visible_text(dataset.dataset_name)} already holds this seed; nothing added."
        )
    return HttpResponseRedirect(back or reverse("seeds:dataset_detail", args=[dataset.pk]))


def _uuid(value: str | None, what: str) -> uuid.UUID:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise ValueError(f"not a valid {what} id.") from None


def _chosen_dataset(request: HttpRequest) -> SeedDataset:
    raw_id = (request.POST.get("dataset") or "").strip()
    if raw_id:
        if not raw_id.isdigit():
            raise ValueError("not a valid dataset.")
        dataset = SeedDataset.objects.filter(pk=int(raw_id)).first()
        if dataset is None:
            raise ValueError("no such dataset.")
        return dataset
    name = (request.POST.get("dataset_name") or "").strip()
    if not name or len(name) > 255:
        raise ValueError("choose a dataset.")
    dataset = SeedDataset.objects.filter(dataset_name=name).first()
    if dataset is not None:
        return dataset
    if not request.user.has_perm("seeds.add_seeddataset"):
        raise ValueError("no such dataset, and you may not create one.")
    dataset = SeedDataset(dataset_name=name)
    dataset._history_user = request.user  # type: ignore[attr-defined]
    dataset.save()
    return dataset
