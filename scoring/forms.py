"""The verdict form: what a queue asks for (VerdictFields), or by default true, false or a
0..1 score, always with a rationale; cleaned into the VerdictAnswers record_review stores."""

from __future__ import annotations

from typing import Any

from django import forms

from scoring.services import MAX_RATIONALE_CHARS
from scoring.verdict_fields import MAX_NOTES_CHARS, VerdictAnswers, VerdictFields


class VerdictForm(forms.Form):
    """A reviewer's verdict with its rationale: the fields a queue asks for (VerdictFields),
    or by default true, false or a 0..1 score. `answers()` gives what record_review stores."""

    rationale = forms.CharField(
        max_length=MAX_RATIONALE_CHARS,
        strip=True,
        error_messages={"required": "Give a rationale: what in the response decides it."},
    )
    # The queue the item was opened from (its slug): record-and-next stays inside it.
    queue = forms.SlugField(required=False, max_length=80)
    # "Record" rather than "record and next": stay on the item.
    stay = forms.BooleanField(required=False)
    # One token per rendered form: posting the same form twice records one verdict.
    submission = forms.UUIDField(
        error_messages={"required": "The form is incomplete; reload the page."}
    )

    def __init__(self, *args: Any, asked: VerdictFields | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # None: the default form (true, false, or a score).
        self.asked = asked
        if asked is None:
            self.fields["verdict"] = forms.ChoiceField(
                choices=[("true", "true"), ("false", "false"), ("float", "score 0..1")],
                error_messages={"required": "Choose true, false or a score."},
            )
            self.fields["value"] = forms.FloatField(required=False, min_value=0.0, max_value=1.0)
            return
        if asked.true_false:
            self.fields["verdict"] = forms.ChoiceField(
                choices=[("true", "true"), ("false", "false")],
                error_messages={"required": "Choose true or false."},
            )
        if asked.scale:
            self.fields["scale"] = forms.FloatField(
                min_value=0.0,
                max_value=1.0,
                error_messages={"required": "Give a score between 0 and 1."},
            )
        if asked.category:
            self.fields["category"] = forms.ChoiceField(
                choices=[(c, c) for c in asked.categories],
                error_messages={"required": "Choose a category."},
            )
        if asked.notes:
            self.fields["notes"] = forms.CharField(
                required=False, max_length=MAX_NOTES_CHARS, strip=True
            )

    def clean(self) -> dict[str, Any]:
        """A score verdict of the default form needs its value."""
        data = super().clean() or {}
        if self.asked is None and data.get("verdict") == "float" and data.get("value") is None:
            self.add_error("value", "Give a score between 0 and 1.")
        return data

    def categories(self) -> list[tuple[int, str]]:
        """The asked categories with their keys (1..9)."""
        asked = self.asked.categories if self.asked is not None else ()
        return list(enumerate(asked, start=1))

    def problems(self) -> str:
        """Every error in one sentence, for the message above the page."""
        return " ".join(str(e) for errs in self.errors.values() for e in errs)

    def answers(self) -> VerdictAnswers:
        """The cleaned form as the answers record_review stores."""
        data = self.cleaned_data
        rationale = data["rationale"]
        if self.asked is None:
            if data["verdict"] == "float":
                return VerdictAnswers(
                    rationale=rationale,
                    scale=float(data["value"]),
                    fields=VerdictFields(true_false=False, scale=True),
                )
            return VerdictAnswers(
                rationale=rationale, objective=data["verdict"] == "true", fields=VerdictFields()
            )
        asked = self.asked
        return VerdictAnswers(
            rationale=rationale,
            objective=data["verdict"] == "true" if asked.true_false else None,
            scale=float(data["scale"]) if asked.scale else None,
            category=data["category"] if asked.category else None,
            notes=data.get("notes") or "",
            fields=asked,
        )
