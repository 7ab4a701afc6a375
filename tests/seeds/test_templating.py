"""Sandboxed Jinja2 rendering: PyRIT's strict and silent semantics, and refused escapes."""

from __future__ import annotations

import pytest

from seeds.templating import (
    TemplateBudgetExceeded,
    escape_for_jinja,
    render_silent,
    render_strict,
    template_problems,
    template_variables,
)

ESCAPES = [
    "{{ ''.__class__.__mro__ }}",
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{{ cycler.__init__.__globals__ }}",
    "{{ cycler.__init__.__globals__.os.popen('id').read() }}",
    "{{ joiner.__init__.__globals__ }}",
    "{{ namespace.__init__.__globals__ }}",
    "{{ self.__init__.__globals__ }}",
    "{{ lipsum.__globals__ }}",
    "{{ range.__self__ }}",
    "{% for c in [].__class__.__base__.__subclasses__() %}{{ c }}{% endfor %}",
    "{{ request.application.__globals__ }}",
    "{{ config.__class__ }}",
]

HUGE = [
    "{% for i in range(1000000) %}x{% endfor %}",
    "{% for i in range(5000) %}{% for j in range(5000) %}{% endfor %}{% endfor %}",
    "{{ 'a' * 1000000000 }}",
    "{{ [0] * 1000000000 }}",
    "{{ 'a'.ljust(1000000000) }}",
    "{{ 'a'|center(1000000000) }}",
    "{{ 'a'|indent(1000000000) }}",
    "{{ '%999999999d' % 1 }}",
    "{{ '{:>999999999}'.format(1) }}",
    "{{ 9 ** 99999 }}",
    "{% macro d(s, n) %}{% if n %}{{ d(s ~ s, n - 1) }}{% else %}{{ s|length }}{% endif %}"
    "{% endmacro %}{{ d('a', 40) }}",
    "{% set ns = namespace(v='a') %}{% for i in range(40) %}{% set ns.v = ns.v ~ ns.v %}"
    "{% endfor %}{{ ns.v|length }}",
    "{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}",
    "{{ ('a' * 1000)|replace('a', 'b' * 100000) }}",
]


def test_silent_render_keeps_unknown_variables_with_normalised_spacing() -> None:
    assert render_silent("How to steal {{ stolen_item }}?") == "How to steal {{ stolen_item }}?"
    assert render_silent("{{x}} and {{ y }}", y=2) == "{{ x }} and 2"


def test_silent_render_fills_path_variables_and_drops_one_trailing_newline() -> None:
    value = "{{ datasets_path }}/seed_datasets/local/examples/a.wav\n"
    assert render_silent(value, datasets_path="/d") == "/d/seed_datasets/local/examples/a.wav"
    # Same newline handling for values without markup (Jinja's, done without compiling).
    assert render_silent("plain text\n") == "plain text"
    assert render_silent("a\r\nb\n\n") == "a\nb\n"


def test_silent_render_leaves_a_loop_over_a_missing_collection_unrendered() -> None:
    value = "{% for v in coll %}{{ v }}{% endfor %} {{ x }}"
    assert render_silent(value) == value
    assert render_silent(value, coll=[1, 2]) == "12 {{ x }}"


def test_silent_render_returns_the_value_unchanged_on_a_render_error() -> None:
    value = "{{ x.y }}"
    assert render_silent(value) == value


def test_strict_render_raises_pyrits_error_for_a_missing_variable() -> None:
    with pytest.raises(ValueError, match=r"^Error rendering template 'greeting': 'name' is undef"):
        render_strict("Hello {{ name }}", "greeting")
    assert render_strict("Hello {{ name }}", "greeting", name="you") == "Hello you"


@pytest.mark.parametrize("template", ESCAPES)
def test_sandbox_escapes_are_refused_with_a_clear_message(template: str) -> None:
    with pytest.raises(ValueError, match=r"^Error rendering template") as info:
        render_strict(template, request="a string", config={"k": "v"})
    message = str(info.value)
    assert "is unsafe" in message or "is undefined" in message or "has no attribute" in message
    # Silently (as at YAML load), nothing is evaluated: no Python object leaks into the value.
    silent = render_silent(template)
    assert "<" not in silent
    assert "class '" not in silent
    assert "function" not in silent


@pytest.mark.parametrize("template", HUGE)
def test_huge_loops_and_outputs_fail_safely(template: str) -> None:
    with pytest.raises(TemplateBudgetExceeded, match="Error rendering template"):
        render_strict(template)
    # Silently (at import) a budget overrun is reported, not kept as if it were text; a loop
    # over a name that is not supplied is never rendered at all (PyRIT's pre-check).
    if "{% for" in template:
        assert render_silent(template) == template
    else:
        with pytest.raises(TemplateBudgetExceeded, match="over budget"):
            render_silent(template)


def test_loops_that_print_nothing_are_stopped_by_the_step_budget() -> None:
    template = "{% for a in s %}{% for b in s %}{% endfor %}{% endfor %}done"
    with pytest.raises(ValueError, match="steps"):
        render_strict(template, s="x" * 9000)
    assert render_strict(template, s="x" * 20) == "done"


def test_syntax_errors_are_reported_with_a_line_number() -> None:
    with pytest.raises(ValueError, match="line 2"):
        render_silent("ok\n{{ broken ")
    assert template_problems("{% if %}", []) == [
        "Template syntax error on line 1: Expected an expression, got 'end of statement block'"
    ]


def test_template_problems_compare_declared_parameters_with_used_variables() -> None:
    problems = template_problems("{{ prompt }} {{ extra }}", ["prompt", "unused"])
    assert any("not declared in parameters: extra" in p for p in problems)
    assert any("declared but not used by the template: unused" in p for p in problems)
    assert template_problems("{{ prompt|upper }}", ["prompt"]) == []


def test_template_problems_catch_unsafe_attribute_access_at_save_time() -> None:
    problems = template_problems("{{ prompt.__class__ }}", ["prompt"])
    assert problems == [
        "The template is refused by the sandbox: access to attribute '__class__' of 'str' "
        "object is unsafe."
    ]


def test_template_variables_ignore_jinja_globals() -> None:
    assert template_variables("{% for i in range(3) %}{{ i }}{{ who }}{% endfor %}") == {"who"}


@pytest.mark.parametrize(
    "value",
    ["plain", "ends with newline\n", "{{x}}", "{% raw %}x{% endraw %}", "a {% endraw %} b\n"],
)
def test_escape_for_jinja_renders_back_to_the_value(value: str) -> None:
    escaped = escape_for_jinja(value)
    assert render_silent(escaped) == value
    assert render_silent(escaped, x="FILLED") == value
