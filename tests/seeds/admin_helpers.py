"""Turn an admin change page's forms back into the POST data a browser would send."""

from __future__ import annotations

from typing import Any

from django import forms
from django.test.client import Client


def _field_data(form: forms.BaseForm, data: dict[str, Any]) -> None:
    for name, field in form.fields.items():
        bound = form[name]
        value = bound.value()
        key = bound.html_name
        widget = field.widget
        if isinstance(field, forms.FileField):
            continue
        if isinstance(widget, forms.CheckboxInput):
            if value:
                data[key] = "on"
            continue
        if isinstance(widget, forms.MultiWidget):
            parts = widget.decompress(value)
            for i, part in enumerate(parts or []):
                data[f"{key}_{i}"] = "" if part is None else str(part)
            continue
        prepared = value  # BoundField.value() is already the field's prepared value
        if isinstance(prepared, list | tuple):
            data[key] = [str(v) for v in prepared]
        else:
            data[key] = "" if prepared is None else str(prepared)


def change_form_data(client: Client, url: str) -> dict[str, Any]:
    """GET an admin change/add page and return the POST data for saving it unchanged."""
    response = client.get(url)
    assert response.status_code == 200, response.status_code
    data: dict[str, Any] = {}
    _field_data(response.context["adminform"].form, data)
    inlines = response.context.get("inline_admin_formsets") or []
    for inline in inlines:
        formset = inline.formset
        management = formset.management_form
        for name in management.fields:
            data[management[name].html_name] = management[name].value()
        for form in formset.forms:
            _field_data(form, data)
    return data
