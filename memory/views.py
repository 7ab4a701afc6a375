"""Review pages for memory rows: the conversation list, identifiers, and media bytes.

The conversation page itself, attack results, the review queue and the dashboard live in
scoring/views.py. Every read here starts from the viewer's scope (`scope_for(request)`,
redteam.common.access): lists, counts and filter suggestions only include the viewer's
operations, and a row outside them is a 404, never a 403 that would confirm it exists.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.db.models import Count, IntegerField, OuterRef, Q, Subquery
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from memory.filters import ConversationFilterSet, IdentifierIndexFilterSet
from memory.live import conversation_list_live
from memory.models import (
    AttackResult,
    ComponentIdentifier,
    Conversation,
    IdentifierDump,
    IdentifierOperation,
    MessagePiece,
    PieceConverter,
    Score,
)
from memory.promote import NotVisible, preview_promotion, promote_piece_to_seed
from memory.querysets import (
    conversations_for_list,
    identifier_tree,
    identifier_trees,
    identifiers_using,
    media_visible_to,
)
from redteam.common.access import Scope, scope_for
from redteam.common.media import media_response
from redteam.common.pagination import filtered_list_page
from redteam.common.roles import viewer_required
from redteam.core.digests import SHA256_PATTERN, is_sha256
from redteam.core.enums import ATTACK_OUTCOMES, PROMPT_DATA_TYPES
from redteam.core.identity.display import KINDS
from redteam.core.trees import diff_dumps, json_text, tree_from_dump
from redteam.core.visible import visible_text
from seeds.models import SeedDataset

# Suggestions for the target/attack/converter inputs come from the (small) identifier table:
# the identifiers used in the viewer's operations.
MAX_CLASS_SUGGESTIONS = 300
MAX_USES = 20

# Filters that take repeated values in the URL; the form shows one input per value.
REPEATED_FILTERS = ("label", "converter", "harm_category")


def class_name_suggestions(scope: Scope) -> list[tuple[str, str]]:
    """Distinct (class name, kind) of the identifiers the scope sees (one query), for the
    filter inputs: another operation's targets, attacks, converters and scorers are never
    suggested."""
    return list(
        ComponentIdentifier.objects.visible_to(scope)
        .order_by("class_name", "kind")
        .values_list("class_name", "kind")
        .distinct()[:MAX_CLASS_SUGGESTIONS]
    )


def filter_form_context(request: HttpRequest) -> dict[str, Any]:
    """What a filter form needs to re-display the current filters from the URL (suggestions
    from the viewer's operations only)."""
    values = {name: request.GET.getlist(name) for name in REPEATED_FILTERS}
    suggestions = class_name_suggestions(scope_for(request))
    return {
        "repeated": values,
        "outcome_choices": ATTACK_OUTCOMES,
        "data_type_choices": PROMPT_DATA_TYPES,
        "selected_outcomes": request.GET.getlist("outcome"),
        "selected_data_types": request.GET.getlist("data_type"),
        "class_names": list(dict.fromkeys(name for name, _kind in suggestions)),
        "scorer_classes": [name for name, kind in suggestions if kind == "scorer"],
    }


@require_GET
@viewer_required
def conversation_list(request: HttpRequest) -> HttpResponse:
    """The viewer's conversations, filtered from the URL (full-text search included), newest
    activity first, keyset-paginated."""
    # Queries: session, user, memberships, class-name suggestions, one page of rows.
    filterset = ConversationFilterSet(
        request.GET, queryset=conversations_for_list(scope_for(request)), request=request
    )
    page = filtered_list_page(
        request, filterset, ts_field="last_timestamp", pk_field="conversation_id"
    )
    context = {
        "filterset": filterset,
        **page.context(),
        "has_filters": any(k not in ("cursor", "size") for k in request.GET),
        # New conversations since this page: polled by static/js/live.js (first page only).
        "live": conversation_list_live(request, page.rows) if page.status == 200 else None,
        **filter_form_context(request),
    }
    return render(request, "memory/conversation_list.html", context, status=page.status)


def _operation_uses(scope: Scope) -> Subquery:
    """How many of the scope's operations use the identifier (a correlated count over the
    small (identifier, operation) index)."""
    uses = IdentifierOperation.objects.filter(identifier_id=OuterRef("pk"))
    if not scope.everything:
        uses = uses.filter(operation_id__in=sorted(scope.roles))
    return Subquery(
        uses.order_by().values("identifier_id").annotate(n=Count("*")).values("n")[:1],
        output_field=IntegerField(),
    )


@require_GET
@viewer_required
def identifier_index(request: HttpRequest) -> HttpResponse:
    """The identifiers used in the viewer's operations: searched by class, display name (a
    model name), hash prefix or param value, filtered by kind, newest first, keyset-paginated.
    Two rows can be picked for the diff page."""
    # Queries: session, user, memberships, one page (with its operation-use counts).
    scope = scope_for(request)
    visible = (
        ComponentIdentifier.objects.visible_to(scope)
        .only("hash", "class_name", "class_module", "display_name", "kind", "first_seen_at")
        .annotate(operations=_operation_uses(scope))
    )
    filterset = IdentifierIndexFilterSet(request.GET, queryset=visible, request=request)
    page = filtered_list_page(request, filterset, ts_field="first_seen_at", pk_field="hash")
    context = {
        "filterset": filterset,
        **page.context(),
        "kinds": KINDS,
        "has_filters": any(k not in ("cursor", "size") for k in request.GET),
    }
    return render(request, "memory/identifier_index.html", context, status=page.status)


@require_GET
@viewer_required
def identifier_detail(request: HttpRequest, hash: str) -> HttpResponse:
    """One identifier: its tree, hashes, parents and the rows that use it (first few each).

    404 unless a row of the viewer's operations uses it; the parents and uses listed (and
    their counts) are the visible ones only.
    """
    # Queries: session, user, memberships; the identifier; its dumps; one per tree level;
    # parents; the five kinds of use.
    scope = scope_for(request)
    identifier = ComponentIdentifier.objects.visible_to(scope).filter(hash=hash).first()
    if identifier is None:
        raise Http404("No such identifier.")
    dumps = list(
        IdentifierDump.objects.filter(identifier=identifier)
        .only("digest", "identifier_id")
        .order_by("digest")[:10]
    )
    # Always rebuilt from rows (budgeted): links then use the hashes computed at ingest,
    # whatever hash a stored dump carries.
    tree = tree_from_dump(identifier_tree(identifier).tree, identifier.hash)
    parents = list(identifiers_using(scope, hash).order_by("class_name", "hash")[:MAX_USES])
    context = {
        "identifier": identifier,
        "tree": tree,
        "dumps": dumps,
        "params_json": json_text(identifier.params),
        "parents": parents,
        "conversations": list(
            Conversation.objects.visible_to(scope)
            .filter(target_identifier=identifier)
            .only("conversation_id", "last_timestamp", "preview")
            .order_by("conversation_id")[:MAX_USES]
        ),
        "attack_results": list(
            AttackResult.objects.visible_to(scope)
            .filter(Q(atomic_attack_identifier=identifier) | Q(target_hash=hash))
            .only("attack_result_id", "conversation_id", "objective", "outcome", "attack_class")
            .order_by("attack_result_id")[:MAX_USES]
        ),
        "converter_uses": list(
            PieceConverter.objects.visible_to(scope)
            .filter(identifier=identifier)
            .select_related("piece")
            .only("position", "piece__id", "piece__conversation_id", "piece__sequence")
            .order_by("piece_id", "position")[:MAX_USES]
        ),
        "pieces": list(
            MessagePiece.objects.visible_to(scope)
            .filter(
                Q(target_identifier=identifier)
                | Q(attack_identifier=identifier)
                | Q(scorer_identifier=identifier)
            )
            .only("id", "conversation_id", "sequence", "role")
            .order_by("id")[:MAX_USES]
        ),
        "scores": list(
            Score.objects.visible_to(scope)
            .filter(scorer_identifier=identifier)
            .only("id", "score_value", "score_type", "message_piece_id", "attack_result_id")
            .order_by("id")[:MAX_USES]
        ),
        "max_uses": MAX_USES,
        "sha256_pattern": SHA256_PATTERN,
    }
    return render(request, "memory/identifier_detail.html", context)


@require_GET
@viewer_required
def identifier_diff(request: HttpRequest) -> HttpResponse:
    """Compare two identifiers (?a=<hash>&b=<hash>): every differing param, by path.

    404 unless both are used in the viewer's operations (as for unknown hashes).
    """
    a_hash = request.GET.get("a", "").strip()
    b_hash = request.GET.get("b", "").strip()
    context: dict[str, Any] = {
        "a_hash": a_hash,
        "b_hash": b_hash,
        "sha256_pattern": SHA256_PATTERN,
    }
    if not a_hash and not b_hash:
        return render(request, "memory/identifier_diff.html", context)
    if not (is_sha256(a_hash) and is_sha256(b_hash)):
        context["error"] = "Give two identifier hashes (64 lowercase hex characters)."
        return render(request, "memory/identifier_diff.html", context, status=400)
    visible = ComponentIdentifier.objects.visible_to(scope_for(request))
    found = {i.hash: i for i in visible.filter(hash__in=[a_hash, b_hash])}
    if a_hash not in found or b_hash not in found:
        raise Http404("Unknown identifier.")
    # Both sides rebuilt from rows under the tree budget, so the diff walk is bounded too.
    trees = identifier_trees([found[a_hash], found[b_hash]])
    a_dump, b_dump = trees[a_hash].tree, trees[b_hash].tree
    context.update(
        {
            "a": found[a_hash],
            "b": found[b_hash],
            "a_tree": tree_from_dump(a_dump, a_hash),
            "b_tree": tree_from_dump(b_dump, b_hash),
            "differences": diff_dumps(a_dump, b_dump) if a_hash != b_hash else [],
        }
    )
    return render(request, "memory/identifier_diff.html", context)


@require_GET
@viewer_required
def media(request: HttpRequest, sha256: str) -> HttpResponseBase:
    """Uploaded media bytes by sha256, inline only for safe image/audio/video types; 404 unless
    a piece or scored content of the viewer's operations, or a seed, refers to them."""
    return media_response(sha256, blobs=media_visible_to(scope_for(request), [sha256]))


@login_required
@permission_required("seeds.add_seed", raise_exception=True)
@require_POST
def promote_piece(request: HttpRequest) -> HttpResponse:
    """Make a seed of a conversation piece (POST: piece_id, dataset, seed_type, ...), in two
    steps: the first POST shows the seed exactly as it would be stored; the second, with
    confirm=yes, stores it.

    `dataset` is a dataset id, or `dataset_name` names one (created if the user may add
    datasets). `attack_result_id` and `next` (a same-site URL to return to) are optional.
    A piece or attack result outside the user's operations (or that does not exist) is a 404.
    """
    back = request.POST.get("next") or ""
    if not url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        back = ""
    seed_type = request.POST.get("seed_type") or "prompt"
    try:
        piece_id = _uuid(request.POST.get("piece_id"), "piece")
        attack_result_id = (
            _uuid(request.POST.get("attack_result_id"), "attack result")
            if request.POST.get("attack_result_id")
            else None
        )
        # First step: the seed exactly as it would be stored, nothing written yet.
        if request.POST.get("confirm") != "yes":
            previewed = _chosen_dataset(request, create=False)
            preview = preview_promotion(
                piece_id=piece_id,
                dataset=previewed,
                dataset_name=previewed.dataset_name
                if previewed
                else (request.POST.get("dataset_name") or "").strip(),
                seed_type=seed_type,
                user=request.user,
                scope=scope_for(request),
                attack_result_id=attack_result_id,
            )
            return render(
                request,
                "seeds/promote_preview.html",
                {
                    "preview": preview,
                    "piece_id": piece_id,
                    "attack_result_id": attack_result_id,
                    "seed_type": seed_type,
                    "next": back,
                },
            )
        dataset = _chosen_dataset(request)
        assert dataset is not None
        result = promote_piece_to_seed(
            piece_id=piece_id,
            dataset=dataset,
            seed_type=seed_type,
            user=request.user,
            scope=scope_for(request),
            attack_result_id=attack_result_id,
        )
    except NotVisible as exc:
        raise Http404(str(exc)) from None
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


def _chosen_dataset(request: HttpRequest, *, create: bool = True) -> SeedDataset | None:
    """The dataset a promotion names (by id, or by a name created if allowed; None for a new
    name when `create` is false: the preview creates nothing)."""
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
    if not create:
        return None
    dataset = SeedDataset(dataset_name=name)
    dataset._history_user = request.user  # type: ignore[attr-defined]
    dataset.save()
    return dataset
