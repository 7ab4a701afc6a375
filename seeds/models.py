"""PyRIT seeds: datasets, groups, and seeds (prompt / objective / simulated conversation).

One Seed table with PyRIT's `seed_type` discriminator, the union of every subclass's fields.
Every change is versioned (django-simple-history) so a dataset can be audited.
"""

from __future__ import annotations

import uuid

from django.db import models
from simple_history.models import HistoricalRecords

from redteam.common.choices import DATA_TYPE_CHOICES, ROLE_CHOICES, SEED_TYPE_CHOICES
from redteam.common.fields import ExactCharField, ExactJSONField, ExactTextField
from redteam.core.enums import CHAT_MESSAGE_ROLES, PROMPT_DATA_TYPES, SEED_TYPES
from redteam.core.visible import visible_text


class SeedDataset(models.Model):
    """A named PyRIT SeedDataset; its YAML-level defaults are kept for export."""

    dataset_name = ExactCharField(max_length=255, unique=True)
    # False when the YAML gave only `name` (PyRIT loads such a file with dataset_name None and
    # its seeds carry the name); export then writes `name` alone, as the file had it.
    dataset_name_declared = models.BooleanField(default=True)
    name = ExactCharField(max_length=255, null=True, blank=True)
    description = ExactTextField(null=True, blank=True)
    source = ExactTextField(null=True, blank=True)
    added_by = ExactCharField(max_length=255, null=True, blank=True)
    data_type = ExactCharField(max_length=32, choices=DATA_TYPE_CHOICES, null=True, blank=True)
    seed_type = ExactCharField(max_length=32, choices=SEED_TYPE_CHOICES, null=True, blank=True)
    harm_categories = ExactJSONField(default=list, blank=True)
    authors = ExactJSONField(default=list, blank=True)
    groups = ExactJSONField(default=list, blank=True)
    date_added = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["dataset_name"]

    def __str__(self) -> str:
        # Admin titles, breadcrumbs and choice lists show this: invisible characters visible.
        return visible_text(self.dataset_name)


class SeedGroup(models.Model):
    """Seeds sharing one PyRIT `prompt_group_id` (a multi-part or multi-turn unit)."""

    prompt_group_id = models.UUIDField(unique=True)
    dataset = models.ForeignKey(
        SeedDataset, null=True, blank=True, on_delete=models.CASCADE, related_name="seed_groups"
    )
    alias = ExactCharField(max_length=255, null=True, blank=True)
    # sha256 over the group's ordered (seed_type, sequence, role, data_type, value_sha256):
    # lets a re-import recognise an identical group and skip it.
    content_sha256 = ExactCharField(max_length=64, blank=True, default="", db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    history = HistoricalRecords()

    class Meta:
        # By column, not by the related model's ordering (which would join the dataset table).
        ordering = ["dataset_id", "id"]
        indexes = [
            models.Index(
                fields=["dataset", "content_sha256"], name="seedgroup_dataset_content_idx"
            ),
        ]

    def __str__(self) -> str:
        return visible_text(self.alias) if self.alias else str(self.prompt_group_id)


class Seed(models.Model):
    """One PyRIT seed; `seed_type` picks SeedPrompt, SeedObjective or SeedSimulatedConversation."""

    # PyRIT's id: sent by PyRIT, or made here (uuid4, as PyRIT does). Never typed by a curator,
    # and not editable, so admin inlines carry it as a hidden field.
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    seed_type = ExactCharField(max_length=32, choices=SEED_TYPE_CHOICES, default="prompt")
    value = ExactTextField()
    value_sha256 = ExactCharField(max_length=64, null=True, blank=True, db_index=True)
    data_type = ExactCharField(max_length=32, choices=DATA_TYPE_CHOICES, default="text")
    name = ExactCharField(max_length=255, null=True, blank=True)
    dataset = models.ForeignKey(
        SeedDataset, null=True, blank=True, on_delete=models.CASCADE, related_name="seeds"
    )
    # Kept verbatim as PyRIT sent it (it may name a dataset not stored here).
    dataset_name = ExactCharField(max_length=255, null=True, blank=True, db_index=True)
    description = ExactTextField(null=True, blank=True)
    source = ExactTextField(null=True, blank=True)
    added_by = ExactCharField(max_length=255, null=True, blank=True)
    date_added = models.DateTimeField(null=True, blank=True)
    harm_categories = ExactJSONField(null=True, blank=True)
    authors = ExactJSONField(null=True, blank=True)
    groups = ExactJSONField(null=True, blank=True)
    metadata = ExactJSONField(null=True, blank=True)
    group = models.ForeignKey(
        SeedGroup, null=True, blank=True, on_delete=models.CASCADE, related_name="seeds"
    )
    # Place inside the group in PyRIT's canonical order (objective, simulated conversation,
    # prompts by sequence); keeps the order of prompts that share a sequence.
    position = models.PositiveIntegerField(default=0)
    prompt_group_alias = ExactCharField(max_length=255, null=True, blank=True)
    is_general_technique = models.BooleanField(default=False)
    is_jinja_template = models.BooleanField(default=False)

    # SeedPrompt fields.
    role = ExactCharField(max_length=32, choices=ROLE_CHOICES, null=True, blank=True)
    sequence = models.IntegerField(null=True, blank=True)
    parameters = ExactJSONField(null=True, blank=True)
    response_json_schema = ExactJSONField(null=True, blank=True)

    # SeedSimulatedConversation fields.
    num_turns = models.IntegerField(null=True, blank=True)
    adversarial_chat_system_prompt_path = ExactTextField(null=True, blank=True)
    simulated_target_system_prompt_path = ExactTextField(null=True, blank=True)
    next_message_system_prompt_path = ExactTextField(null=True, blank=True)
    pyrit_version = ExactCharField(max_length=32, null=True, blank=True)

    # Media seeds: the uploaded bytes (value keeps the path as PyRIT wrote it).
    media = models.ForeignKey(
        "redteam.MediaBlob", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Promoted from a reviewed conversation: where it came from (plain ids, since the
    # memory app depends on this one and not the other way round).
    source_piece_id = models.UUIDField(null=True, blank=True)
    source_attack_result_id = models.UUIDField(null=True, blank=True)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["dataset_id", "group_id", "position", "id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(seed_type__in=list(SEED_TYPES)), name="seed_type_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(data_type__in=list(PROMPT_DATA_TYPES)),
                name="seed_data_type_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(role__isnull=True) | models.Q(role__in=list(CHAT_MESSAGE_ROLES)),
                name="seed_role_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(num_turns__isnull=True) | models.Q(num_turns__gt=0),
                name="seed_num_turns_positive",
            ),
            # PyRIT: an objective can never be a general technique.
            models.CheckConstraint(
                condition=~models.Q(seed_type="objective", is_general_technique=True),
                name="objective_not_general_technique",
            ),
        ]
        indexes = [
            models.Index(fields=["dataset", "value_sha256"], name="seed_dataset_sha_idx"),
            models.Index(
                fields=["dataset", "group", "position"], name="seed_dataset_group_pos_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.seed_type}: {visible_text(self.value[:60])}"
