"""The sensitive-category rule: case-insensitive, whitespace-blind, hostile JSON ignored."""

from __future__ import annotations

from typing import Any

import pytest

from redteam.core.sensitivity import matching_categories, sensitive_categories


def test_categories_match_whatever_their_case_and_surrounding_space() -> None:
    sensitive = sensitive_categories(["Sexual", "self-harm"])
    assert matching_categories(sensitive, [" SEXUAL "]) == ("Sexual",)
    assert matching_categories(sensitive, ["Self-Harm"], ["sexual"]) == ("Sexual", "self-harm")


def test_matches_are_spelled_and_ordered_as_the_operation_lists_them() -> None:
    sensitive = sensitive_categories(["violence", "Sexual", "VIOLENCE"])
    assert list(sensitive.values()) == ["violence", "Sexual"]
    assert matching_categories(sensitive, ["sexual", "Violence"]) == ("violence", "Sexual")


def test_no_match_and_no_setting_mean_nothing_is_sensitive() -> None:
    assert matching_categories(sensitive_categories(["sexual"]), ["violence"], None) == ()
    assert matching_categories(sensitive_categories([]), ["sexual"]) == ()


@pytest.mark.parametrize(
    "hostile",
    [None, 1, {"sexual": True}, [None, 3, ["sexual"], {"x": "sexual"}, "  "], b"sexual"],
)
def test_anything_but_strings_is_ignored_on_both_sides(hostile: Any) -> None:
    assert sensitive_categories(hostile) == {}
    assert matching_categories(sensitive_categories(["sexual"]), hostile) == ()


def test_a_lone_string_counts_as_one_category() -> None:
    assert matching_categories(sensitive_categories("sexual"), "Sexual") == ("sexual",)
