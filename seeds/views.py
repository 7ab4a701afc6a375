"""Server-rendered seed pages: datasets, their groups, template previews; promote a piece.

Everything shown here may be hostile text: templates autoescape and never mark it safe.
Template previews (seeds.preview) render in the sandbox with the parameters posted.
"""

from __future__ import annotations

import uuid

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET, require_http_methods

from redteam.common.roles import viewer_required
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
