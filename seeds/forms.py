"""Forms for seed curation: admin change forms with PyRIT's rules, import, preview, actions."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.forms.models import BaseInlineFormSet

from seeds import services
from seeds.models import Seed, SeedDataset
from seeds.templating import template_problems

# Admin import limits: the uploads are kept in the session between preview and confirm.
MAX_IMPORT_FILES = 50
MAX_PROMPT_FILE_BYTES = 2 * 1024 * 1024
MAX_IMPORT_TOTAL_BYTES = getattr(settings, "REDTEAM_SEED_IMPORT_MAX_BYTES", 10 * 1024 * 1024)
MAX_PREVIEW_PARAMETER_CHARS = 20_000


class PrettyJSONField(forms.JSONField):
    """A JSON value edited as indented text (two spaces), checked when posted.

    Invalid JSON is a form error on the field ("Enter a valid JSON."), shown with the text as
    typed; a valid value is shown again indented, whatever spacing it was typed with.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["widget"] = forms.Textarea(attrs={"rows": 4, "class": "json-field"})
        super().__init__(*args, **kwargs)

    def prepare_value(self, value: Any) -> Any:
        """The value as indented JSON (text the user typed that is not JSON: as typed)."""
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value
        text = json.dumps(value, indent=2, ensure_ascii=False, cls=self.encoder)
        lines = text.count("\n") + 1
        self.widget.attrs["rows"] = max(2, min(lines, 16))
        return text


# Every JSON column of the seed models, in every admin form and inline row.
JSON_FORM_FIELD = {"form_class": PrettyJSONField}


def _add_rule_errors(form: forms.BaseForm, errors: list[tuple[Any, Any]]) -> None:
    """Attach rule errors to the field they concern, or to the form."""
    for _seed, error in errors:
        field = error.field if error.field in form.fields else None
        form.add_error(field, error.message)


def _template_errors(form: forms.BaseForm, seed: Seed) -> None:
    """A seed marked as a template (or declaring parameters) must be a valid, safe template."""
    if not (seed.is_jinja_template or seed.parameters):
        return
    for problem in template_problems(seed.value or "", list(seed.parameters or [])):
        form.add_error("value" if "value" in form.fields else None, problem)


# Field groups of a seed, shared by the seed form and the admin's fieldsets.
PROMPT_FIELDS = ("role", "sequence", "parameters", "response_json_schema")
DESCRIPTION_FIELDS = (
    "name",
    "description",
    "source",
    "added_by",
    "date_added",
    "harm_categories",
    "authors",
    "groups",
    "metadata",
    "is_general_technique",
    "is_jinja_template",
)
SIMULATION_FIELDS = (
    "num_turns",
    "adversarial_chat_system_prompt_path",
    "simulated_target_system_prompt_path",
    "next_message_system_prompt_path",
    "pyrit_version",
)


class SeedForm(forms.ModelForm[Seed]):
    """The seed change form: model checks, then PyRIT's seed and group rules, then templates."""

    media_upload = forms.FileField(
        required=False,
        help_text="For image/audio/video seeds: the file's bytes (checked by content, not name).",
    )

    class Meta:
        model = Seed
        fields = [
            "seed_type",
            "value",
            "data_type",
            "dataset",
            "group",
            "prompt_group_alias",
            *PROMPT_FIELDS,
            *DESCRIPTION_FIELDS,
            *SIMULATION_FIELDS,
        ]

    def _post_clean(self) -> None:
        super()._post_clean()  # type: ignore[misc]  # ModelForm's hook, not in the stubs
        if self.errors:
            return
        seed = self.instance
        _add_rule_errors(self, services.check_seed_changes([seed]))
        _template_errors(self, seed)
        upload: UploadedFile[bytes] | None = self.cleaned_data.get("media_upload")
        if upload is not None:
            limit: int = settings.REDTEAM_MAX_MEDIA_BYTES
            if upload.size is not None and upload.size > limit:
                self.add_error("media_upload", f"The file is larger than {limit} bytes.")
                return
            from seeds.media import check_media_matches

            head = upload.read(64)
            upload.seek(0)
            try:
                check_media_matches(seed.data_type, head)
            except ValueError as exc:
                self.add_error("media_upload", str(exc))


class InlineSeedForm(forms.ModelForm[Seed]):
    """A seed row inside a group or dataset page; group rules run on the whole formset."""

    class Meta:
        model = Seed
        fields = [
            "group",
            "seed_type",
            "role",
            "sequence",
            "data_type",
            "value",
            "harm_categories",
            "is_general_technique",
        ]
        widgets = {"value": forms.Textarea(attrs={"rows": 2, "cols": 60})}

    def _post_clean(self) -> None:
        super()._post_clean()  # type: ignore[misc]  # ModelForm's hook, not in the stubs
        if self.errors:
            return
        from seeds.rules import seed_errors

        _add_rule_errors(self, [(self.instance, e) for e in seed_errors(self.instance)])
        # Only rows whose value changed run the template check: a page of inline rows must not
        # cost one bounded render per untouched seed.
        if self.instance._state.adding or "value" in self.changed_data:
            _template_errors(self, self.instance)


class SeedInlineFormSet(BaseInlineFormSet[Seed, Any]):
    """Checks PyRIT's group rules over the groups as the formset would leave them."""

    def clean(self) -> None:
        super().clean()
        if any(self.errors):
            return
        changed: list[Seed] = []
        deleted: list[Seed] = []
        for form in self.forms:
            if not hasattr(form, "cleaned_data") or not form.cleaned_data:
                continue
            delete = self._should_delete_form(form)  # type: ignore[attr-defined]
            if self.can_delete and delete:
                if form.instance.pk:
                    deleted.append(form.instance)
                continue
            seed = form.instance
            if seed.dataset_id is None and isinstance(self.instance, SeedDataset):
                seed.dataset = self.instance
            if seed.group_id is None and self.instance.__class__.__name__ == "SeedGroup":
                seed.group = self.instance
            changed.append(seed)
        errors = services.check_seed_changes(changed, deleted)
        messages = []
        for culprit, error in errors:
            label = f"“{(culprit.value or '')[:40]}”: " if culprit is not None else ""
            messages.append(f"{label}{error.message}")
        if messages:
            raise forms.ValidationError(list(dict.fromkeys(messages)))


class MultipleFileInput(forms.ClearableFileInput):
    """A file input that accepts several files."""

    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """A file field whose cleaned value is a list of uploaded files."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> list[UploadedFile[bytes]]:
        """Clean each file; an empty selection is an empty list."""
        files = data if isinstance(data, list | tuple) else ([data] if data else [])
        return [super(MultipleFileField, self).clean(f, initial) for f in files]


class ImportUploadForm(forms.Form):
    """Step 1 of the admin import: one or more `.prompt` files, and the media they use."""

    prompt_files = MultipleFileField(
        label="PyRIT .prompt files",
        help_text=f"Up to {MAX_IMPORT_FILES} files of at most {MAX_PROMPT_FILE_BYTES} bytes.",
    )
    media_files = MultipleFileField(
        required=False,
        label="Media files",
        help_text="Images, audio or video the files refer to, matched by file name.",
    )

    def clean(self) -> dict[str, Any]:
        """Size caps, file types and UTF-8, before anything is parsed."""
        data = super().clean() or {}
        prompts: list[UploadedFile[bytes]] = data.get("prompt_files") or []
        media: list[UploadedFile[bytes]] = data.get("media_files") or []
        if not prompts:
            raise forms.ValidationError("Choose at least one .prompt file.")
        if len(prompts) + len(media) > MAX_IMPORT_FILES:
            raise forms.ValidationError(f"At most {MAX_IMPORT_FILES} files at once.")
        total = sum(f.size or 0 for f in [*prompts, *media])
        if total > MAX_IMPORT_TOTAL_BYTES:
            raise forms.ValidationError(
                f"The upload is {total} bytes; the limit is {MAX_IMPORT_TOTAL_BYTES}."
            )
        texts: dict[str, str] = {}
        for f in prompts:
            name = (f.name or "upload.prompt")[-200:]
            if not name.endswith((".prompt", ".yaml", ".yml")):
                raise forms.ValidationError(f"{name}: not a .prompt (YAML) file.")
            if (f.size or 0) > MAX_PROMPT_FILE_BYTES:
                raise forms.ValidationError(f"{name}: larger than {MAX_PROMPT_FILE_BYTES} bytes.")
            try:
                texts[name] = f.read().decode("utf-8")
            except UnicodeDecodeError as exc:
                raise forms.ValidationError(f"{name}: not UTF-8 text.") from exc
        data["texts"] = texts
        data["media"] = {(f.name or "")[-200:]: f.read() for f in media}
        return data


class TemplatePreviewForm(forms.Form):
    """One text box per template variable; rendering happens in the sandbox."""

    def __init__(self, *args: Any, variables: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in variables:
            self.fields[name] = forms.CharField(
                required=False,
                max_length=MAX_PREVIEW_PARAMETER_CHARS,
                widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
                strip=False,
            )


class MoveToDatasetForm(forms.Form):
    """Bulk action: the dataset to move the selected seeds' groups to."""

    dataset = forms.ModelChoiceField(queryset=SeedDataset.objects.order_by("dataset_name"))


class HarmCategoryForm(forms.Form):
    """Bulk action: the harm category to add or remove."""

    category = forms.CharField(max_length=200, strip=True)
