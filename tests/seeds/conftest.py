"""Fixtures for the seeds tests: PyRIT's bundled dataset files and a curator user."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import Permission, User

# Seeds per file as PyRIT 1.1 loads them (PYRIT-MODEL.md section 11, and len(seeds) for the
# files the table summarises: web_html_js, the 0din files other than hex_recipe_book).
PYRIT_COUNTS: dict[str, int] = {
    "adv_bench.prompt": 520,
    "airt/illegal.prompt": 5,
    "airt/hate.prompt": 9,
    "airt/leakage.prompt": 9,
    "airt/fairness_yes_no.prompt": 20,
    "airt/harassment.prompt": 3,
    "airt/harms.prompt": 4,
    "airt/malware.prompt": 4,
    "airt/misinformation.prompt": 3,
    "airt/scams.prompt": 5,
    "airt/sexual.prompt": 3,
    "airt/violence.prompt": 3,
    "airt/fairness.prompt": 1,
    "airt/airt_imminent_crisis.prompt": 2,
    "airt/airt_licensed_therapist.prompt": 1,
    "examples/illegal-multimodal-dataset.prompt": 8,
    "examples/illegal-multimodal-group.prompt": 4,
    "examples/illegal-multimodal-objective-group.prompt": 3,
    "examples/illegal-multiturn-group.prompt": 3,
    "examples/illegal-multiple-multiturn-dataset.prompt": 5,
    "examples/illegal-objective-only-group.prompt": 1,
    "examples/psych-crisis-conversations.prompt": 14,
    "garak/access_shell_commands.prompt": 6,
    "garak/doctor.prompt": 5,
    "garak/example_domains_xss.prompt": 4,
    "garak/markdown_js.prompt": 7,
    "garak/normal_instructions.prompt": 5,
    "garak/package_hallucination_real_tasks.prompt": 12,
    "garak/package_hallucination_stubs.prompt": 10,
    "garak/package_hallucination_unreal_tasks.prompt": 12,
    "garak/slur_terms_en.prompt": 56,
    "garak/system_prompt_extraction.prompt": 28,
    "garak/web_html_js.prompt": 17,
    "0din/chemical_compiler_debug.prompt": 1,
    "0din/correction.prompt": 1,
    "0din/hex_recipe_book.prompt": 3,
    "0din/incremental_table_completion.prompt": 1,
    "0din/placeholder_injection.prompt": 1,
    "0din/technical_field_guide.prompt": 1,
    "psfuzz_steal_system.prompt": 1,
}


@pytest.fixture(scope="session")
def datasets_dir(fixtures_dir: Path) -> Path:
    """PyRIT's bundled `.prompt` files and their media (read-only)."""
    return fixtures_dir / "pyrit-datasets"


@pytest.fixture(scope="session")
def prompt_files(datasets_dir: Path) -> list[Path]:
    """All bundled `.prompt` files, in a stable order."""
    return sorted(datasets_dir.rglob("*.prompt"))


@pytest.fixture
def curator(db: None) -> User:
    """A staff user who may curate seeds (add/change/delete seeds, groups, datasets)."""
    user = User.objects.create_user("curator", password="pw-curator-123", is_staff=True)
    perms = Permission.objects.filter(content_type__app_label="seeds")
    user.user_permissions.set(perms)
    return User.objects.get(pk=user.pk)  # fresh, so the permission cache is empty
