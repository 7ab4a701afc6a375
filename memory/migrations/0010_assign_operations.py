"""Existing rows join operations: the one their `operation` label names (`op_name` in older
runs), else the operation of what they belong to, else `unassigned`.

Accounts in the former global `reviewer` / `read-only` groups become members (same role) of
every operation, and existing API keys are bound to every operation, so nobody loses access on
upgrade; leads narrow it afterwards. Every step is a set-based UPDATE or INSERT per operation.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations
from django.db.models import Exists, OuterRef, Q, Subquery
from django.db.models.fields.json import KT

from redteam.core.storedtext import decode_text

UNASSIGNED = "unassigned"
LABEL_KEYS = ("operation", "op_name")
FORMER_GROUPS = {"reviewer": "reviewer", "read-only": "read-only"}


def _label_names(model: Any) -> set[str]:
    names: set[str] = set()
    for key in LABEL_KEYS:
        for value in model.objects.values_list(KT(f"labels__{key}"), flat=True).distinct():
            if isinstance(value, str) and value:
                names.add(decode_text(value))
    return names


def _labelled(name: str) -> Q:
    # `operation` wins over `op_name` when a row carries both.
    return Q(labels__operation=name) | (~Q(labels__has_key="operation") & Q(labels__op_name=name))


def assign(apps: Any, schema_editor: Any) -> None:
    Operation = apps.get_model("redteam", "Operation")
    Conversation = apps.get_model("memory", "Conversation")
    MessagePiece = apps.get_model("memory", "MessagePiece")
    AttackResult = apps.get_model("memory", "AttackResult")
    ConversationReference = apps.get_model("memory", "ConversationReference")
    ScenarioResult = apps.get_model("memory", "ScenarioResult")
    Score = apps.get_model("memory", "Score")
    PieceConverter = apps.get_model("memory", "PieceConverter")
    ComponentIdentifier = apps.get_model("memory", "ComponentIdentifier")
    IdentifierOperation = apps.get_model("memory", "IdentifierOperation")
    anything = (
        Conversation.objects.exists()
        or AttackResult.objects.exists()
        or ScenarioResult.objects.exists()
        or Score.objects.exists()
    )
    if not anything:
        return
    names = _label_names(Conversation) | _label_names(AttackResult) | _label_names(ScenarioResult)
    ops = {name: Operation.objects.get_or_create(name=name[:255])[0] for name in sorted(names)}

    for name, op in ops.items():
        Conversation.objects.filter(_labelled(name), operation=None).update(
            operation=op, operation_claimed=True
        )
        AttackResult.objects.filter(_labelled(name), operation=None).update(operation=op)
        ScenarioResult.objects.filter(_labelled(name), operation=None).update(operation=op)
    # A labelled result claims its conversation and its related conversations.
    claimed_by_result = AttackResult.objects.filter(
        conversation_id=OuterRef("pk"), operation__isnull=False
    ).values("operation")[:1]
    Conversation.objects.filter(operation=None).filter(Exists(claimed_by_result)).update(
        operation=Subquery(claimed_by_result), operation_claimed=True
    )
    claimed_by_reference = ConversationReference.objects.filter(
        conversation_id=OuterRef("pk"), attack_result__operation__isnull=False
    ).values("attack_result__operation")[:1]
    Conversation.objects.filter(operation=None).filter(Exists(claimed_by_reference)).update(
        operation=Subquery(claimed_by_reference), operation_claimed=True
    )
    unassigned = None
    if Conversation.objects.filter(operation=None).exists() or ScenarioResult.objects.filter(
        operation=None
    ).exists():
        unassigned, _ = Operation.objects.get_or_create(name=UNASSIGNED)
        Conversation.objects.filter(operation=None).update(operation=unassigned)
        ScenarioResult.objects.filter(operation=None).update(operation=unassigned)
    conversation_op = Conversation.objects.filter(pk=OuterRef("conversation_id")).values(
        "operation"
    )[:1]
    AttackResult.objects.filter(operation=None).update(operation=Subquery(conversation_op))
    # Scores: a verdict judges a result; an automated score a piece; loose ones go unassigned.
    Score.objects.filter(operation=None, attack_result__isnull=False).update(
        operation=Subquery(
            AttackResult.objects.filter(pk=OuterRef("attack_result_id")).values("operation")[:1]
        )
    )
    piece_op = MessagePiece.objects.filter(original_prompt_id=OuterRef("message_piece_id")).values(
        "conversation__operation"
    )[:1]
    Score.objects.filter(operation=None, message_piece_id__isnull=False).filter(
        Exists(piece_op)
    ).update(operation=Subquery(piece_op))
    if Score.objects.filter(operation=None).exists():
        if unassigned is None:
            unassigned, _ = Operation.objects.get_or_create(name=UNASSIGNED)
        Score.objects.filter(operation=None).update(operation=unassigned)

    # Where each identifier was used, with every node below the roots.
    uses: set[tuple[str, int]] = set()
    sources = [
        (Conversation, "target_identifier_id", "operation_id"),
        (MessagePiece, "target_identifier_id", "conversation__operation_id"),
        (MessagePiece, "attack_identifier_id", "conversation__operation_id"),
        (MessagePiece, "scorer_identifier_id", "conversation__operation_id"),
        (PieceConverter, "identifier_id", "piece__conversation__operation_id"),
        (AttackResult, "atomic_attack_identifier_id", "operation_id"),
        (ScenarioResult, "scenario_identifier_id", "operation_id"),
        (ScenarioResult, "objective_target_identifier_id", "operation_id"),
        (ScenarioResult, "objective_scorer_identifier_id", "operation_id"),
        (Score, "scorer_identifier_id", "operation_id"),
    ]
    for model, column, op_path in sources:
        rows = model.objects.exclude(**{column: None}).values_list(column, op_path).distinct()
        uses.update((h, op) for h, op in rows if h is not None and op is not None)
    if not uses:
        return
    children = dict(ComponentIdentifier.objects.values_list("hash", "children"))
    pairs: set[tuple[str, int]] = set()
    frontier = list(uses)
    while frontier:
        pair = frontier.pop()
        if pair in pairs or pair[0] not in children:
            continue
        pairs.add(pair)
        for value in (children[pair[0]] or {}).values():
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, str):
                    frontier.append((child, pair[1]))
    IdentifierOperation.objects.bulk_create(
        [IdentifierOperation(identifier_id=h, operation_id=op) for h, op in sorted(pairs)],
        batch_size=2000,
        ignore_conflicts=True,
    )


def grant_existing(apps: Any, schema_editor: Any) -> None:
    Operation = apps.get_model("redteam", "Operation")
    OperationMembership = apps.get_model("redteam", "OperationMembership")
    ApiKey = apps.get_model("redteam", "ApiKey")
    Group = apps.get_model("auth", "Group")
    operations = list(Operation.objects.order_by("name"))
    for group_name, role in FORMER_GROUPS.items():
        group = Group.objects.filter(name=group_name).first()
        if group is None:
            continue
        for user in group.user_set.all():
            for op in operations:
                OperationMembership.objects.get_or_create(
                    user=user, operation=op, defaults={"role": role}
                )
        group.delete()
    if not operations:
        return
    default = next((op for op in operations if op.name == UNASSIGNED), operations[0])
    for key in ApiKey.objects.all():
        key.operations.add(*operations)
        if key.default_operation_id is None:
            key.default_operation = default
            key.save(update_fields=["default_operation"])


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("redteam", "0003_operations"),
        ("memory", "0009_operations"),
    ]

    operations = [
        migrations.RunPython(assign, migrations.RunPython.noop),
        migrations.RunPython(grant_existing, migrations.RunPython.noop),
    ]
