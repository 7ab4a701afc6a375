"""Read API for seeds, as PyRIT seed dicts (1.x model_dump or the 0.13 dataclass fields)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_view,
)
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request

from redteam.common.api_common import ShapedReadViewSet, cursor_pagination
from redteam.core.timestamps import pyrit_timestamp
from seeds.api.schema import SEED_KEYS_013, SEED_KEYS_1X, SeedOut
from seeds.filters import SeedFilterSet
from seeds.models import Seed
from seeds.parsing import LONE_SEED_GROUP_NAMESPACE

SEED_SHAPE_PARAMETER = OpenApiParameter(
    "shape",
    OpenApiTypes.STR,
    enum=["1.x", "0.13"],
    description="`1.x` (model_dump(mode='json'), default) or `0.13` (the dataclass fields).",
)


def _prompt_group_id(seed: Seed) -> str | None:
    group_id = seed.group.prompt_group_id if seed.group is not None else None
    # A seed sent without a group got a deterministic one; it goes back out as it came: null.
    if group_id is None or group_id == uuid.uuid5(LONE_SEED_GROUP_NAMESPACE, str(seed.id)):
        return None
    return str(group_id)


def export_seed(seed: Seed, shape: str = "1.x") -> dict[str, Any]:
    """One seed as PyRIT serializes it (group select_related: no query)."""
    values: dict[str, Any] = {
        "value": seed.value,
        "value_sha256": seed.value_sha256,
        "id": str(seed.id),
        "name": seed.name,
        "dataset_name": seed.dataset_name,
        "harm_categories": seed.harm_categories,
        "description": seed.description,
        "authors": seed.authors,
        "groups": seed.groups,
        "source": seed.source,
        "date_added": pyrit_timestamp(seed.date_added, shape),
        "added_by": seed.added_by,
        "metadata": seed.metadata,
        "prompt_group_id": _prompt_group_id(seed),
        "prompt_group_alias": seed.prompt_group_alias,
        "is_general_technique": seed.is_general_technique,
        "is_jinja_template": seed.is_jinja_template,
        "data_type": seed.data_type,
        "seed_type": seed.seed_type,
        "response_json_schema": seed.response_json_schema,
        "role": seed.role,
        "sequence": seed.sequence,
        "parameters": seed.parameters,
        "num_turns": seed.num_turns,
        "adversarial_chat_system_prompt_path": seed.adversarial_chat_system_prompt_path,
        "simulated_target_system_prompt_path": seed.simulated_target_system_prompt_path,
        "next_message_system_prompt_path": seed.next_message_system_prompt_path,
        "pyrit_version": seed.pyrit_version,
    }
    keys = (SEED_KEYS_013 if shape == "0.13" else SEED_KEYS_1X).get(
        seed.seed_type, SEED_KEYS_1X["prompt"]
    )
    return {key: values[key] for key in keys}


@extend_schema_view(
    list=extend_schema(summary="List seeds", parameters=[SEED_SHAPE_PARAMETER], responses=SeedOut),
    retrieve=extend_schema(
        summary="One seed", parameters=[SEED_SHAPE_PARAMETER], responses=SeedOut
    ),
)
class SeedViewSet(ShapedReadViewSet):
    """PyRIT seeds (prompts, objectives, simulated conversations), newest first; 1 query per
    page (seeds joined with their groups)."""

    filterset_class = SeedFilterSet
    serializer_class = SeedOut
    pagination_class = cursor_pagination("-created_at", "-id")

    def get_queryset(self) -> QuerySet[Seed]:
        """Seeds with their group (for prompt_group_id)."""
        return Seed.objects.select_related("group")

    def requested_shape(self, request: Request) -> str:
        """Seeds are exported as 1.x unless 0.13 is asked for (no stored shape)."""
        value = str(request.query_params.get("shape") or "1.x")
        if value not in ("1.x", "0.13"):
            raise ValidationError({"shape": "Use 1.x or 0.13."})
        return value

    def export_rows(self, rows: Sequence[Any], shape: str) -> list[dict[str, Any]]:
        """Each seed in its shape."""
        return [export_seed(seed, shape) for seed in rows]
