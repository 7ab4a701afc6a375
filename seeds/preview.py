"""The template preview, one implementation for the seed pages and the admin.

Showing the form never renders anything; rendering needs a POST (CSRF-checked like every POST),
so a link, a prefetch or a crawler cannot make the server run a template. The work itself is
bounded by seeds.templating (a child process with CPU, memory and time limits).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from seeds.forms import TemplatePreviewForm
from seeds.models import Seed
from seeds.templating import (
    TemplateBudgetExceeded,
    TemplateSyntaxProblem,
    render_strict,
    template_variables,
)

# A form with more boxes than this is no preview anyone can fill in; refuse it plainly.
MAX_PREVIEW_VARIABLES = 100


def template_preview(request: HttpRequest, seed: Seed) -> dict[str, Any]:
    """Context for a preview page: the form (bound on POST), the result or the error."""
    error = None
    try:
        variables = sorted(template_variables(seed.value) | set(seed.parameters or []))
    except (TemplateSyntaxProblem, TemplateBudgetExceeded) as exc:
        variables, error = sorted(seed.parameters or []), str(exc)
    if len(variables) > MAX_PREVIEW_VARIABLES:
        variables = []
        error = f"The template reads more than {MAX_PREVIEW_VARIABLES} parameters; not previewed."
    posted = request.method == "POST"
    form = TemplatePreviewForm(request.POST if posted else None, variables=variables)
    rendered = None
    if posted and form.is_valid() and error is None:
        try:
            rendered = render_strict(seed.value, seed.name, **form.cleaned_data)
        except ValueError as exc:  # TemplateBudgetExceeded included
            error = str(exc)
    return {"seed": seed, "form": form, "rendered": rendered, "error": error}
