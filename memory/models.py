"""PyRIT memory types: identifiers, conversations, message pieces, attack results.

Field names and enum values mirror PYRIT-MODEL.md. The 0.12-0.14 line's MessagePiece fields
(labels, target/attack/scorer identifiers, originator, harm categories) and the 1.x additions
(Conversation, AttackResult labels/errors/retries/attribution) live side by side so nothing
either line sends is dropped.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from typing import Any, Self

from django.conf import settings
from django.db import models
from django.db.models import Exists, F, OuterRef, Q, QuerySet

from redteam.common.access import Scope, ScopedQuerySet
from redteam.common.choices import (
    CONVERSATION_TYPE_CHOICES,
    DATA_TYPE_CHOICES,
    ORIGINATOR_CHOICES,
    OUTCOME_CHOICES,
    RESPONSE_ERROR_CHOICES,
    ROLE_CHOICES,
    SCENARIO_RUN_STATE_CHOICES,
    SCORE_STATUS_CHOICES,
    SCORE_TYPE_CHOICES,
)
from redteam.common.fields import ExactCharField, ExactForeignKey, ExactJSONField, ExactTextField
from redteam.common.models import MediaBlob, Operation
from redteam.core.digests import SHA256_ANCHORED
from redteam.core.enums import (
    ATTACK_OUTCOMES,
    CHAT_MESSAGE_ROLES,
    CONVERSATION_TYPES,
    PROMPT_DATA_TYPES,
    PROMPT_RESPONSE_ERRORS,
    SCENARIO_RUN_STATES,
    SCORE_STATUSES,
    SCORE_TYPES,
)
from redteam.core.identity import display as naming
from redteam.core.textview import MAX_METADATA_CHARS, visible_json


def _in(field: str, values: tuple[str, ...]) -> models.Q:
    return models.Q(**{f"{field}__in": list(values)})


class IdentifierQuerySet(ScopedQuerySet["ComponentIdentifier"]):
    """Identifiers are shared rows: one is visible where some operation of the scope used it."""

    def scope_filter(self, scope: Scope) -> Q:
        """Used (as a root or any node of a tree) by a row of the scope's operations."""
        return Q(
            Exists(
                IdentifierOperation.objects.filter(
                    identifier_id=OuterRef("pk"), operation_id__in=sorted(scope.roles)
                )
            )
        )


class ComponentIdentifier(models.Model):
    """One node of a PyRIT identifier tree, content-addressed by PyRIT's own hash.

    The same identifier sent a million times is one row. Children are referenced by hash
    (a name maps to a hash or an ordered list of hashes), so a tree is rebuilt from rows.
    Legacy (<=0.14) rows whose string params were truncated keep the hash they arrived with.
    """

    hash = ExactCharField(max_length=64, primary_key=True)
    class_name = ExactCharField(max_length=255, db_index=True)
    class_module = ExactCharField(max_length=512)
    # Params as JSON: ints and floats stay distinct (1 vs 1.0) on SQLite and PostgreSQL.
    params = ExactJSONField(default=dict, blank=True)
    # name -> child hash, or name -> [child hashes] (order kept; [] kept).
    children = ExactJSONField(default=dict, blank=True)
    attributes = ExactJSONField(default=dict, blank=True)
    pyrit_version = ExactCharField(max_length=32, null=True, blank=True)
    # The eval hash stamped on the first dump seen; each use also keeps its own dump.
    eval_hash = ExactCharField(max_length=64, null=True, blank=True, db_index=True)
    # True when the hash could not be recomputed from the stored params (truncated legacy row).
    hash_is_stored = models.BooleanField(default=False)
    first_seen_at = models.DateTimeField(auto_now_add=True)
    # What people call it ("OpenAIChatTarget · gpt-4o") and what it is (target, scorer,
    # converter, attack, other): redteam.core.identity.display, filled when the row is made.
    display_name = ExactCharField(max_length=naming.MAX_DISPLAY_NAME, blank=True, default="")
    kind = ExactCharField(max_length=16, blank=True, default="", db_index=True)

    objects = IdentifierQuerySet.as_manager()

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(hash__regex=SHA256_ANCHORED), name="identifier_hash_hex"
            ),
        ]
        indexes = [models.Index(fields=["class_name", "hash"], name="identifier_class_idx")]

    def __str__(self) -> str:
        return f"{self.class_name}::{self.hash[:8]}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Fill the display name and kind from the class and params when not given."""
        if not self.display_name:
            self.display_name = naming.display_name(self.class_name, self.params)
        if not self.kind:
            self.kind = naming.identifier_kind(self.class_name, self.class_module)
        super().save(*args, **kwargs)


class IdentifierOperation(models.Model):
    """An operation in which an identifier (a tree root or any node below one) was used.

    Written at ingestion beside every identifier use, so identifier pages answer "may this
    caller see it" with one index lookup instead of searching every table that uses them.
    """

    identifier = models.ForeignKey(
        ComponentIdentifier, on_delete=models.CASCADE, related_name="operation_uses"
    )
    operation = models.ForeignKey(Operation, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["identifier", "operation"], name="identifier_operation_once"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.identifier_id[:8]} in operation {self.operation_id}"


class IdentifierDump(models.Model):
    """An identifier's flat dump exactly as a client sent it, stored once per distinct text.

    PyRIT's dumps of one identifier differ by use (pyrit_version, stamped eval hashes,
    legacy truncation); keeping each distinct dump makes export lossless while a million
    pieces with the same converter still share one row.
    """

    # sha256 of the dump's canonical JSON (sorted keys), so equal dumps share a row.
    digest = ExactCharField(max_length=64, primary_key=True)
    identifier = models.ForeignKey(
        ComponentIdentifier, on_delete=models.PROTECT, related_name="dumps", db_column="hash"
    )
    # JSON text as received: key order and number spelling (1 vs 1.0) preserved verbatim.
    dump_json = ExactTextField()

    def __str__(self) -> str:
        return f"dump {self.digest[:8]} of {self.identifier_id}"

    @property
    def dump(self) -> dict[str, Any]:
        """The dump as a dict (keys in their original order)."""
        value: dict[str, Any] = json.loads(self.dump_json)
        return value


def _identifier_use(
    *, db_index: bool = True
) -> models.ForeignKey[ComponentIdentifier | None, ComponentIdentifier | None]:
    """An optional use of an identifier, for filters (identifiers outlive what uses them).

    `db_index=False` where the model declares an index of its own instead (a partial one on
    pieces; one without the LIKE copy on conversations).
    """
    return models.ForeignKey(
        ComponentIdentifier,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        db_index=db_index,
    )


def _piece_dump() -> models.ForeignKey[IdentifierDump | None, IdentifierDump | None]:
    """An optional identifier dump of a piece, for lossless export."""
    return models.ForeignKey(
        IdentifierDump,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        db_index=False,  # only followed from the piece for export, never searched by
    )


def _piece_media() -> models.ForeignKey[MediaBlob | None, MediaBlob | None]:
    """Media bytes of a piece value, linked when uploaded."""
    return models.ForeignKey(
        "redteam.MediaBlob",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        # A full index would slow every piece's ingestion; the partial indexes in
        # MessagePiece.Meta cover only the pieces that link media.
        db_index=False,
    )


class Conversation(models.Model):
    """One PyRIT conversation (1.x `Conversation`) plus summary columns for list pages.

    The summary columns are kept current by the ingestion service so that lists never
    aggregate millions of pieces.
    """

    conversation_id = ExactCharField(max_length=255, primary_key=True)
    # The engagement it belongs to: named by its pieces' `operation` label (0.13), claimed by
    # an attack result's label (1.x), else the sender's default operation until claimed.
    operation = models.ForeignKey(
        Operation,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        db_index=False,  # conv_op_recent_idx leads with it
    )
    # True once a label named the operation; an unclaimed conversation may still be claimed
    # by a labelled attack result that names it.
    operation_claimed = models.BooleanField(default=False)
    target_identifier = _identifier_use(db_index=False)  # conv_target_idx
    # Only followed from the row (pages, export), never searched by: no index.
    target_dump = models.ForeignKey(
        IdentifierDump,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        db_index=False,
    )
    # [{"sequence": int, "reason": "json_parsing"}]
    retries = ExactJSONField(default=list, blank=True)
    pyrit_version = ExactCharField(max_length=32, null=True, blank=True)
    # True when a Conversation object was sent (1.x); False when created from its pieces.
    declared = models.BooleanField(default=False)

    # Summary columns.
    first_timestamp = models.DateTimeField(null=True, blank=True)
    last_timestamp = models.DateTimeField(null=True, blank=True)  # conv_recent_idx
    message_count = models.PositiveIntegerField(default=0)
    piece_count = models.PositiveIntegerField(default=0)
    labels = ExactJSONField(default=dict, blank=True)
    harm_categories = ExactJSONField(default=list, blank=True)
    data_types = ExactJSONField(default=list, blank=True)
    converter_classes = ExactJSONField(default=list, blank=True)
    has_error = models.BooleanField(default=False, db_index=True)
    attack_class = ExactCharField(max_length=255, blank=True, default="")  # conv_attack_idx
    # Four outcomes, each common: a filter on one walks the list order (conv_op_recent_idx).
    outcome = ExactCharField(max_length=16, blank=True, default="")
    # Denormalised first user text, for list rows without a join.
    preview = ExactCharField(max_length=300, blank=True, default="")
    updated_at = models.DateTimeField(auto_now=True)
    # The sender's stamp of the stored version (ingest `?revise=STAMP`, what `redteam.client
    # follow` sends): a newer version with an older stamp never replaces it. Null: stored
    # without one (push, import).
    revision = models.BigIntegerField(null=True, blank=True, editable=False)

    objects = ScopedQuerySet["Conversation"].as_manager()
    scope_path = "operation"

    class Meta:
        indexes = [
            models.Index(fields=["-last_timestamp", "-conversation_id"], name="conv_recent_idx"),
            models.Index(
                fields=["operation", "-last_timestamp", "-conversation_id"],
                name="conv_op_recent_idx",
            ),
            # The home page's "arrived lately": the latest changed conversations, newest first.
            models.Index(fields=["-updated_at"], name="conv_updated_idx"),
            # Filters matched by whole value only: plain indexes, without the LIKE
            # (varchar_pattern_ops) copies Django adds to db_index=True text columns
            # (memory.indexplans lists the reads that use each; migration 0020).
            models.Index(fields=["attack_class"], name="conv_attack_idx"),
            models.Index(fields=["target_identifier"], name="conv_target_idx"),
        ]

    def __str__(self) -> str:
        return str(self.conversation_id)


# A piece that copies another (original_prompt_id names the piece it was copied from).
COPY_OF_ANOTHER = ~Q(original_prompt_id=F("id"))


class MessagePiece(models.Model):
    """One PyRIT MessagePiece. A Message is the pieces sharing (conversation_id, sequence)."""

    id = models.UUIDField(primary_key=True)
    conversation = ExactForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="pieces",
        db_column="conversation_id",
        db_index=False,  # covered by piece_message_position
    )
    sequence = models.IntegerField()
    # Place inside the message (pieces sharing conversation and sequence), 0 first: the order
    # PyRIT returns them in, which is neither timestamp nor id order. Set once at ingestion.
    position = models.PositiveIntegerField(default=0)
    role = ExactCharField(max_length=32, choices=ROLE_CHOICES)
    timestamp = models.DateTimeField()

    original_value = ExactTextField()
    original_value_data_type = ExactCharField(max_length=32, choices=DATA_TYPE_CHOICES)
    original_value_sha256 = ExactCharField(max_length=64, null=True, blank=True)
    converted_value = ExactTextField()
    converted_value_data_type = ExactCharField(max_length=32, choices=DATA_TYPE_CHOICES)
    converted_value_sha256 = ExactCharField(max_length=64, null=True, blank=True)
    response_error = ExactCharField(max_length=16, choices=RESPONSE_ERROR_CHOICES, default="none")
    # Equal to the id unless the piece is a copy of another (PyRIT's duplicated
    # conversations): only copies are indexed on it (piece_copy_of_idx; original_prompt_in).
    original_prompt_id = models.UUIDField()
    prompt_metadata = ExactJSONField(default=dict, blank=True)

    # 0.12-0.14 line fields (moved to Conversation/AttackResult in 1.x).
    labels = ExactJSONField(null=True, blank=True)
    targeted_harm_categories = ExactJSONField(null=True, blank=True)
    originator = ExactCharField(max_length=16, choices=ORIGINATOR_CHOICES, null=True, blank=True)
    # Only 0.13 pieces carry these (1.x keeps them on the conversation and the attack result):
    # partial indexes in Meta cover the rows that have one.
    target_identifier = _identifier_use(db_index=False)
    target_dump = _piece_dump()
    attack_identifier = _identifier_use(db_index=False)
    attack_dump = _piece_dump()
    scorer_identifier = _identifier_use(db_index=False)
    scorer_dump = _piece_dump()

    # Media bytes, linked when uploaded (the value keeps the attacker's path verbatim).
    original_media = _piece_media()
    converted_media = _piece_media()

    pyrit_version = ExactCharField(max_length=32, null=True, blank=True)
    # Which serialized shape the piece arrived in: "0.13" (to_dict) or "1.x" (model_dump).
    source_shape = ExactCharField(max_length=8, default="1.x")
    ingested_at = models.DateTimeField(auto_now_add=True)
    # The sender's stamp of the stored version (ingest `?revise=STAMP`, what `redteam.client
    # follow` sends): a newer version with an older stamp never replaces it. Null: stored
    # without one (push, import).
    revision = models.BigIntegerField(null=True, blank=True, editable=False)

    objects = ScopedQuerySet["MessagePiece"].as_manager()
    scope_path = "conversation__operation"

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=_in("role", CHAT_MESSAGE_ROLES), name="piece_role_valid"
            ),
            models.CheckConstraint(
                condition=_in("original_value_data_type", PROMPT_DATA_TYPES),
                name="piece_original_type_valid",
            ),
            models.CheckConstraint(
                condition=_in("converted_value_data_type", PROMPT_DATA_TYPES),
                name="piece_converted_type_valid",
            ),
            models.CheckConstraint(
                condition=_in("response_error", PROMPT_RESPONSE_ERRORS),
                name="piece_response_error_valid",
            ),
            # Also the index for (conversation_id, sequence) lookups and message order.
            models.UniqueConstraint(
                fields=["conversation", "sequence", "position"], name="piece_message_position"
            ),
        ]
        # Every index is paid by every ingested piece: each one is here for reads whose query
        # plans use it (memory/indexplans.py, docs/indexes.md). Partial indexes cover only
        # the rows a read can look for, so a plain 1.x text piece costs them nothing.
        indexes = [
            models.Index(fields=["timestamp", "id"], name="piece_time_idx"),
            models.Index(fields=["converted_value_sha256"], name="piece_csha_idx"),
            # A common role or type is read in time order (piece_time_idx); these serve the
            # rare ones (system prompts, media pieces).
            models.Index(
                fields=["role"],
                condition=~Q(role__in=["user", "assistant"]),
                name="piece_role_rare_idx",
            ),
            models.Index(
                fields=["converted_value_data_type"],
                condition=~Q(converted_value_data_type="text"),
                name="piece_ctype_media_idx",
            ),
            models.Index(
                fields=["target_identifier"],
                condition=Q(target_identifier__isnull=False),
                name="piece_target_idx",
            ),
            models.Index(
                fields=["attack_identifier"],
                condition=Q(attack_identifier__isnull=False),
                name="piece_attack_idx",
            ),
            models.Index(
                fields=["scorer_identifier"],
                condition=Q(scorer_identifier__isnull=False),
                name="piece_scorer_idx",
            ),
            # Which visible pieces link a blob (memory.querysets.media_visible_to): only
            # media pieces have an entry, so text pieces cost ingestion nothing here.
            models.Index(
                fields=["original_media"],
                condition=Q(original_media__isnull=False),
                name="piece_omedia_idx",
            ),
            models.Index(
                fields=["converted_media"],
                condition=Q(converted_media__isnull=False),
                name="piece_cmedia_idx",
            ),
            # A piece that is its own original is found by its primary key: only copies
            # need this entry (original_prompt_in).
            models.Index(
                fields=["original_prompt_id"], condition=COPY_OF_ANOTHER, name="piece_copy_of_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.conversation_id}#{self.sequence} {self.role} {self.id}"


def original_prompt_in(ids: Iterable[uuid.UUID]) -> Q:
    """Pieces whose original_prompt_id is one of `ids`, as the piece indexes find them.

    Every piece that is not a copy carries its own id there, so only copies are indexed on
    the column (piece_copy_of_idx): the originals are found by primary key, the copies by
    that index. Every read by original_prompt_id goes through here; a plain
    ``original_prompt_id__in`` would scan the table.
    """
    wanted = list(ids)
    return Q(pk__in=wanted, original_prompt_id__in=wanted) | Q(
        COPY_OF_ANOTHER, original_prompt_id__in=wanted
    )


class PieceConverter(models.Model):
    """The ordered converter identifiers of a piece (position 0 ran first)."""

    # Looked up by piece through piece_converter_position (its first column), by identifier
    # through converter_identifier_idx; the dump is only followed from the row, for export.
    piece = models.ForeignKey(
        MessagePiece, on_delete=models.CASCADE, related_name="converters", db_index=False
    )
    position = models.PositiveSmallIntegerField()
    identifier = models.ForeignKey(
        ComponentIdentifier,
        on_delete=models.PROTECT,
        related_name="converter_uses",
        db_index=False,
    )
    dump = models.ForeignKey(
        IdentifierDump, on_delete=models.PROTECT, related_name="+", db_index=False
    )

    objects = ScopedQuerySet["PieceConverter"].as_manager()
    scope_path = "piece__conversation__operation"

    class Meta:
        ordering = ["piece", "position"]
        constraints = [
            models.UniqueConstraint(fields=["piece", "position"], name="piece_converter_position"),
        ]
        indexes = [models.Index(fields=["identifier"], name="converter_identifier_idx")]

    def __str__(self) -> str:
        return f"{self.piece_id}[{self.position}] {self.identifier_id[:8]}"


class ReviewStatus(models.TextChoices):
    """Where an attack result's human review stands under blind double review.

    SINGLE: no requirement for more than one verdict (the latest verdict decides). PENDING:
    fewer independent verdicts than required; they are sealed (each reviewer sees only their
    own until they recorded one) and do not decide. AGREED: enough verdicts, all agreeing;
    they decide. DISPUTED: enough verdicts that disagree; in the adjudication queue, they do
    not decide. ADJUDICATED: an adjudicator's final verdict decides.
    """

    SINGLE = "", "single review"
    PENDING = "pending", "awaiting further verdicts"
    AGREED = "agreed", "reviewers agree"
    DISPUTED = "disputed", "in adjudication"
    ADJUDICATED = "adjudicated", "adjudicated"


class AttackResult(models.Model):
    """PyRIT's AttackResult; related conversations (all types, descriptions kept) hang off it."""

    attack_result_id = models.UUIDField(primary_key=True)
    # Its `operation` label's operation, else its conversation's (see Conversation.operation).
    operation = models.ForeignKey(
        Operation, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    conversation = ExactForeignKey(
        Conversation,
        on_delete=models.PROTECT,
        related_name="attack_results",
        db_column="conversation_id",
    )
    objective = ExactTextField()
    objective_sha256 = ExactCharField(max_length=64, db_index=True)
    atomic_attack_identifier = _identifier_use()
    atomic_attack_dump = models.ForeignKey(
        IdentifierDump, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # Denormalised from the identifier tree for filters: the attack strategy's class name,
    # the objective target's hash and class, and the converter class names used.
    attack_class = ExactCharField(max_length=255, blank=True, default="", db_index=True)
    target_hash = ExactCharField(max_length=64, blank=True, default="", db_index=True)
    target_class = ExactCharField(max_length=255, blank=True, default="")
    converter_classes = ExactJSONField(default=list, blank=True)
    # A piece may arrive after its result, so no DB-level constraint.
    last_response = models.ForeignKey(
        MessagePiece,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    # Scores live in the scoring app (which depends on this one), so the id is kept plain.
    last_score_id = models.UUIDField(null=True, blank=True)
    executed_turns = models.IntegerField(default=0)
    execution_time_ms = models.BigIntegerField(default=0)
    outcome = ExactCharField(max_length=16, choices=OUTCOME_CHOICES, default="undetermined")
    outcome_reason = ExactTextField(null=True, blank=True)
    timestamp = models.DateTimeField(null=True, blank=True)
    metadata = ExactJSONField(default=dict, blank=True)
    labels = ExactJSONField(default=dict, blank=True)
    targeted_harm_categories = ExactJSONField(default=list, blank=True)
    error_message = ExactTextField(null=True, blank=True)
    error_type = ExactCharField(max_length=255, null=True, blank=True)
    error_traceback = ExactTextField(null=True, blank=True)
    retry_events = ExactJSONField(default=list, blank=True)
    total_retries = models.IntegerField(default=0)
    attribution_parent_id = ExactCharField(max_length=64, null=True, blank=True, db_index=True)
    attribution_data = ExactJSONField(null=True, blank=True)
    pyrit_version = ExactCharField(max_length=32, null=True, blank=True)
    source_shape = ExactCharField(max_length=8, default="1.x")
    ingested_at = models.DateTimeField(auto_now_add=True)
    # Blind double review (kept by scoring.blind from its review requirements and the
    # result's human verdicts): how many independent verdicts the result needs, and where
    # its review stands ("" for a single review).
    review_required = models.PositiveSmallIntegerField(default=1)
    review_status = ExactCharField(
        max_length=16, choices=ReviewStatus.choices, blank=True, default=ReviewStatus.SINGLE
    )
    # The sender's stamp of the stored version (ingest `?revise=STAMP`, what `redteam.client
    # follow` sends): a newer version with an older stamp never replaces it. Null: stored
    # without one (push, import).
    revision = models.BigIntegerField(null=True, blank=True, editable=False)

    objects = ScopedQuerySet["AttackResult"].as_manager()
    scope_path = "operation"

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=_in("outcome", ATTACK_OUTCOMES), name="result_outcome_valid"
            ),
        ]
        indexes = [
            models.Index(
                fields=["operation", "-ingested_at", "-attack_result_id"],
                name="result_op_ingested_idx",
            ),
            models.Index(fields=["-timestamp", "-attack_result_id"], name="result_recent_idx"),
            models.Index(fields=["outcome", "attack_class"], name="result_outcome_attack_idx"),
            # Keyset pagination of review lists and the dashboard's "since the snapshot" delta.
            models.Index(fields=["-ingested_at", "-attack_result_id"], name="result_ingested_idx"),
            # The few results under blind double review (the adjudication queue reads them).
            models.Index(
                fields=["review_status", "operation", "ingested_at"],
                condition=~Q(review_status=""),
                name="result_blind_review_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.attack_class or 'attack'} {self.outcome} {self.attack_result_id}"

    @property
    def metadata_json(self) -> str:
        """metadata as indented JSON for display, invisible characters escaped."""
        return visible_json(self.metadata, limit=MAX_METADATA_CHARS)

    @property
    def scenario_id(self) -> uuid.UUID | None:
        """attribution_parent_id as the ScenarioResult id it names (None when not a UUID)."""
        try:
            return uuid.UUID(self.attribution_parent_id) if self.attribution_parent_id else None
        except ValueError:
            return None


class ConversationReference(models.Model):
    """A conversation related to an attack result (adversarial, pruned, score, converter)."""

    attack_result = models.ForeignKey(
        AttackResult, on_delete=models.CASCADE, related_name="related_conversations"
    )
    # Plain id: the related conversation's pieces may arrive later, or never.
    conversation_id = ExactCharField(max_length=255, db_index=True)
    conversation_type = ExactCharField(max_length=16, choices=CONVERSATION_TYPE_CHOICES)
    description = ExactTextField(null=True, blank=True)

    objects = ScopedQuerySet["ConversationReference"].as_manager()
    scope_path = "attack_result__operation"

    class Meta:
        constraints = [
            # PyRIT's ConversationReference equality is by conversation_id only.
            models.UniqueConstraint(
                fields=["attack_result", "conversation_id"], name="related_conversation_once"
            ),
            models.CheckConstraint(
                condition=_in("conversation_type", CONVERSATION_TYPES),
                name="related_conversation_type_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.conversation_type}: {self.conversation_id}"


class ScenarioResult(models.Model):
    """PyRIT's ScenarioResult: one scenario run and, by name, the atomic attacks it ran.

    The attack results themselves are AttackResult rows whose ``attribution_parent_id`` is
    this id (PyRIT's link); ``attack_result_ids`` keeps the dump's name -> ordered ids map so
    the scenario is exported exactly as it arrived. The scenario identifier and its
    objective target/scorer are identifier uses like any other (content-addressed rows plus
    the verbatim dumps).
    """

    id = models.UUIDField(primary_key=True)
    # Its `operation` label's operation, else the sender's default operation.
    operation = models.ForeignKey(
        Operation, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    scenario_identifier = _identifier_use()
    scenario_dump = models.ForeignKey(
        IdentifierDump, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # Computed fields of the 1.x dump (the identifier's class name, version, pyrit_version);
    # 0.13 rows carry them as columns.
    scenario_name = ExactCharField(max_length=255, db_index=True)
    scenario_version = models.IntegerField(default=1)
    scenario_description = ExactTextField(null=True, blank=True)
    objective_target_identifier = _identifier_use()
    objective_target_dump = models.ForeignKey(
        IdentifierDump, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    objective_scorer_identifier = _identifier_use()
    objective_scorer_dump = models.ForeignKey(
        IdentifierDump, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    scenario_run_state = ExactCharField(
        max_length=16, choices=SCENARIO_RUN_STATE_CHOICES, default="CREATED", db_index=True
    )
    labels = ExactJSONField(default=dict, blank=True)
    # 1.x creation_time (PyRIT's `timestamp` column).
    creation_time = models.DateTimeField(null=True, blank=True)
    completion_time = models.DateTimeField(null=True, blank=True)
    number_tries = models.IntegerField(default=0)
    display_group_map = ExactJSONField(default=dict, blank=True)
    error_message = ExactTextField(null=True, blank=True)
    error_type = ExactCharField(max_length=255, null=True, blank=True)
    error_attack_result_ids = ExactJSONField(default=list, blank=True)
    metadata = ExactJSONField(default=dict, blank=True)
    # {atomic attack name: [attack_result_id, ...]} in the dump's order.
    attack_result_ids = ExactJSONField(default=dict, blank=True)
    # 0.13 only: the init data of its ScenarioIdentifier and the attack_results_json column.
    scenario_init_data = ExactJSONField(null=True, blank=True)
    attack_results_json = ExactTextField(null=True, blank=True)
    # Denormalised from the objective target for filters.
    target_hash = ExactCharField(max_length=64, blank=True, default="", db_index=True)
    target_class = ExactCharField(max_length=255, blank=True, default="")
    pyrit_version = ExactCharField(max_length=32, null=True, blank=True)
    source_shape = ExactCharField(max_length=8, default="1.x")
    ingested_at = models.DateTimeField(auto_now_add=True)
    # The sender's stamp of the stored version (ingest `?revise=STAMP`, what `redteam.client
    # follow` sends): a newer version with an older stamp never replaces it. Null: stored
    # without one (push, import).
    revision = models.BigIntegerField(null=True, blank=True, editable=False)

    objects = ScopedQuerySet["ScenarioResult"].as_manager()
    scope_path = "operation"

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=_in("scenario_run_state", SCENARIO_RUN_STATES),
                name="scenario_run_state_valid",
            ),
        ]
        indexes = [
            models.Index(fields=["-ingested_at", "-id"], name="scenario_ingested_idx"),
            models.Index(fields=["-creation_time", "-id"], name="scenario_created_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.scenario_name} {self.scenario_run_state} {self.id}"

    @property
    def metadata_json(self) -> str:
        """metadata as indented JSON for display, invisible characters escaped."""
        return visible_json(self.metadata, limit=MAX_METADATA_CHARS)


class ScoreSource(models.TextChoices):
    """Where a score came from."""

    AUTOMATED = "automated", "automated"
    HUMAN = "human", "human"


class VerdictField(models.TextChoices):
    """Which answer of a review a human verdict Score holds (blank for every other score).

    One review (one submitted form) stores a Score per answered field; only the objective and
    the scale decide an outcome (scoring.review), a category only classifies the result.
    """

    NONE = "", "not a review answer"
    OBJECTIVE = "objective", "objective true/false"
    SCALE = "scale", "0..1 scale"
    CATEGORY = "category", "category"


class ScorableContentQuerySet(ScopedQuerySet["ScorableContent"]):
    """Loose content is stored once for every operation: visible through a visible score."""

    def scope_filter(self, scope: Scope) -> Q:
        """Scored by a score of the scope's operations."""
        return Q(
            Exists(
                Score.objects.filter(
                    loose_content_id=OuterRef("pk"), operation_id__in=sorted(scope.roles)
                )
            )
        )


class ScorableContent(models.Model):
    """Loose content a score was taken over (PyRIT 1.1's ScorableContentEntries), stored once.

    The row is content-addressed: its id is derived from (data_type, value), so a score that
    carries the content inline (``{"scorable_type": "content", ...}``, as a scorer returns it)
    and the same score read back from a PyRIT memory file (a ``content_entry`` anchor plus its
    ScorableContentEntries row) derive the identical row. PyRIT's own entry id stays on each
    score (``scorable`` and ``scorable_content_id``, as sent). It lives here because only
    scores refer to it: it is what a score is about when no conversation piece is.
    """

    id = models.UUIDField(primary_key=True)
    value = ExactTextField()
    # sha256 as PyRIT records it (of the bytes for media); computed for text when not sent.
    value_sha256 = ExactCharField(max_length=64, null=True, blank=True, db_index=True)
    data_type = ExactCharField(max_length=32, choices=DATA_TYPE_CHOICES)
    first_seen_at = models.DateTimeField(auto_now_add=True)

    objects = ScorableContentQuerySet.as_manager()

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(data_type__in=list(PROMPT_DATA_TYPES)),
                name="scorable_content_type_valid",
            ),
        ]
        indexes = [models.Index(fields=["-first_seen_at", "-id"], name="scorable_recent_idx")]

    def __str__(self) -> str:
        return f"{self.data_type} content {self.id}"


class ScoreQuerySet(ScopedQuerySet["Score"]):
    """Scores; `standing()` leaves out verdicts their author withdrew (kept only as history).

    `visible_to(scope)` also keeps blind double review: a sealed human verdict (its attack
    result still awaits independent verdicts, see ReviewStatus) is shown only to its author
    and to reviewers who recorded their own standing verdict on the same result. Every read
    of scores (pages, API, exports) goes through it, so no reader receives another's pending
    verdict; a scope without a viewer (management commands) sees no sealed verdict.
    """

    def standing(self) -> ScoreQuerySet:
        """Scores that stand: every automated score, and human verdicts not withdrawn. What
        exports, the API and calibration read (a withdrawn verdict is no judgement any more)."""
        return self.filter(withdrawn_at__isnull=True)

    def visible_to(self, scope: Scope) -> Self:
        """The scope's operations' scores, sealed verdicts of others left out."""
        return super().visible_to(scope).filter(unsealed_for(scope.viewer_id))


def own_verdicts(viewer_id: int) -> QuerySet[Score]:
    """The viewer's standing outcome answers (objective or scale) on the outer row's result."""
    return Score.objects.filter(
        source=ScoreSource.HUMAN,
        attack_result_id=OuterRef("attack_result_id"),
        reviewer_id=viewer_id,
        withdrawn_at__isnull=True,
    ).exclude(verdict_field=VerdictField.CATEGORY)


def unsealed_for(viewer_id: int | None) -> Q:
    """Scores a viewer may read as far as blind review goes: not sealed, their own, or on a
    result they judged too (a standing objective or scale answer of theirs)."""
    if viewer_id is None:
        return Q(sealed=False)
    return Q(sealed=False) | Q(reviewer_id=viewer_id) | Q(Exists(own_verdicts(viewer_id)))


class Score(models.Model):
    """One PyRIT Score (1.1 fields plus the 0.13 `task` column)."""

    id = models.UUIDField(primary_key=True)
    # The operation of the piece or attack result it judges (when stored first), else the
    # sender's default operation; loose-content scores take the sender's.
    operation = models.ForeignKey(
        Operation, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    score_value = ExactTextField(null=True, blank=True)
    status = ExactCharField(max_length=16, choices=SCORE_STATUS_CHOICES, default="complete")
    score_value_description = ExactTextField(null=True, blank=True)
    score_type = ExactCharField(max_length=16, choices=SCORE_TYPE_CHOICES)
    score_category = ExactJSONField(null=True, blank=True)
    score_rationale = ExactTextField(null=True, blank=True)
    score_metadata = ExactJSONField(default=dict, blank=True)
    scorer_identifier = models.ForeignKey(
        "memory.ComponentIdentifier",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    scorer_dump = models.ForeignKey(
        "memory.IdentifierDump", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # Denormalised for filters and lists.
    scorer_class = ExactCharField(max_length=255, blank=True, default="", db_index=True)
    # Joins MessagePiece.original_prompt_id (PyRIT's prompt_request_response_id), so
    # duplicated pieces share their original's scores. Plain UUID: scores may arrive first.
    message_piece_id = models.UUIDField(null=True, blank=True, db_index=True)
    scorable = ExactJSONField(null=True, blank=True)
    scorable_content_id = models.UUIDField(null=True, blank=True)
    # The scored loose text, derived from the scorable (see ScorableContent).
    loose_content = models.ForeignKey(
        ScorableContent, null=True, blank=True, on_delete=models.PROTECT, related_name="scores"
    )
    timestamp = models.DateTimeField()
    objective = ExactTextField(null=True, blank=True)
    task = ExactTextField(null=True, blank=True)
    pyrit_version = ExactCharField(max_length=32, null=True, blank=True)
    source_shape = ExactCharField(max_length=8, default="1.x")

    source = ExactCharField(
        max_length=16, choices=ScoreSource.choices, default=ScoreSource.AUTOMATED, db_index=True
    )
    # For human verdicts: the attack result judged and the reviewer who judged it.
    attack_result = models.ForeignKey(
        "memory.AttackResult",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="scores",
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    # The verdict form's one-time token: a double click or a retried POST of the same form
    # finds its row through the unique constraint below instead of storing a second verdict.
    verdict_submission = models.UUIDField(null=True, blank=True, editable=False)
    # The answer this verdict holds; a review's scores share `verdict_submission`.
    verdict_field = ExactCharField(
        max_length=16, choices=VerdictField.choices, blank=True, default=VerdictField.NONE
    )
    # A withdrawn verdict (undone, or replaced by its author's correction) is kept as history
    # and no longer counts; `superseded_by` is the correcting review's submission.
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    withdrawn_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    superseded_by = models.UUIDField(null=True, blank=True)
    # Blind double review (scoring.blind): `sealed` while the result awaits independent
    # verdicts (readers other than its author do not receive it, ScoreQuerySet.visible_to);
    # `final` marks an adjudicator's verdict on a disputed result, which decides over the
    # reviewers' ones.
    sealed = models.BooleanField(default=False)
    final = models.BooleanField(default=False)
    ingested_at = models.DateTimeField(auto_now_add=True)

    objects = ScoreQuerySet.as_manager()
    scope_path = "operation"

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(score_type__in=list(SCORE_TYPES)), name="score_type_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=list(SCORE_STATUSES)), name="score_status_valid"
            ),
            # PyRIT: score_value is None if and only if the score is undetermined.
            models.CheckConstraint(
                condition=(
                    models.Q(status="undetermined", score_value__isnull=True)
                    | models.Q(status="complete", score_value__isnull=False)
                ),
                name="score_value_null_iff_undetermined",
            ),
            # One score per answered field of a submitted review form.
            models.UniqueConstraint(
                fields=["reviewer", "verdict_submission", "verdict_field"],
                name="verdict_submitted_once",
            ),
        ]
        indexes = [
            models.Index(fields=["-timestamp", "-id"], name="score_recent_idx"),
            models.Index(fields=["source", "attack_result"], name="score_source_result_idx"),
            # A reviewer's own verdicts, newest first ("my recent verdicts").
            models.Index(
                fields=["reviewer", "-timestamp", "-id"],
                condition=models.Q(reviewer__isnull=False),
                name="score_reviewer_recent_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.scorer_class or 'score'} {self.score_type}={self.score_value}"
