"""Sandboxed Jinja2 rendering of seed values as PyRIT does it, with resource limits. No Django.

PyRIT renders seed values in a `jinja2.sandbox.SandboxedEnvironment` (PYRIT-MODEL.md 4.2):

* `render_strict` mirrors `Seed.render_template_value`: a missing variable (or any other error)
  raises `ValueError("Error rendering template '<name>': ...")`.
* `render_silent` mirrors `Seed.render_template_value_silent`: unknown variables stay as the
  literal text `{{ name }}` (normalised spacing), a `{% for v in coll %}` whose `coll` is not
  supplied leaves the whole value unrendered, and a render error returns the value unchanged.
  Like PyRIT, a template that does not parse raises (here: `TemplateSyntaxProblem`).

The sandbox already refuses access to Python internals (`''.__class__`, `cycler.__init__`...).
On top of it every render runs under budgets, because template text is hostile here: a cap on
`range()` sizes, on executed template steps (loops that print nothing), on the size of strings
and numbers produced by operators, calls, filters and namespaces, and on the output length. A
template that hits a budget fails like any other render error.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from types import FrameType
from typing import Any

from jinja2 import StrictUndefined, TemplateSyntaxError, Undefined, meta, nodes
from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedEnvironment
from jinja2.utils import Namespace

# Budgets for one render. Generous for real prompts (the biggest bundled seed is ~3 KB).
MAX_TEMPLATE_CHARS = 1_000_000
MAX_OUTPUT_CHARS = 1_000_000
MAX_RANGE_ITEMS = 10_000
MAX_STEPS = 200_000
MAX_INT_ARGUMENT = 100_000
MAX_POWER_EXPONENT = 1_000

_NEWLINE_RE = re.compile(r"(\r\n|\r|\n)")
# PyRIT's own pre-check before a silent render (seed.py, render_template_value_silent).
_CONTROL_RE = re.compile(r"\{%[-\s]*(for|if|block|macro|call)")
_FOR_VAR_RE = re.compile(r"\{%[-\s]*for\s+\w+\s+in\s+(\w+)")
# Jinja compiles templates from strings under this file name; the step budget traces only them.
_TEMPLATE_FILENAME = "<template>"


class TemplateBudgetExceeded(SecurityError):
    """A render went over one of the resource budgets."""


class TemplateSyntaxProblem(ValueError):
    """The template does not parse; `lineno` and `message` come from Jinja."""

    def __init__(self, message: str, lineno: int | None) -> None:
        super().__init__(f"Template syntax error on line {lineno}: {message}")
        self.message = message
        self.lineno = lineno


class PartialUndefined(Undefined):
    """PyRIT's undefined value for silent renders: prints itself back as `{{ name }}`."""

    def __str__(self) -> str:
        return f"{{{{ {self._undefined_name} }}}}" if self._undefined_name else ""

    def __repr__(self) -> str:
        return self.__str__()

    def __iter__(self) -> Iterator[Any]:
        return iter([])

    def __bool__(self) -> bool:
        return True


class _Budget:
    """Counters shared by everything one render does."""

    def __init__(self) -> None:
        self.range_items = 0
        self.steps = 0

    def spend_range(self, n: int) -> None:
        self.range_items += n
        if self.range_items > MAX_RANGE_ITEMS:
            raise TemplateBudgetExceeded(
                f"range() over {MAX_RANGE_ITEMS} items in total is not allowed"
            )

    def step(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise TemplateBudgetExceeded(f"template ran more than {MAX_STEPS} steps")


def _check_size(value: Any, what: str) -> Any:
    """Refuse strings, sequences and integers that are too big to be a prompt."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and abs(value) > 10**100:
        raise TemplateBudgetExceeded(f"{what} produced a number that is too large")
    if isinstance(value, str | bytes | list | tuple | dict) and len(value) > MAX_OUTPUT_CHARS:
        raise TemplateBudgetExceeded(f"{what} produced more than {MAX_OUTPUT_CHARS} items")
    return value


def _check_arguments(args: tuple[Any, ...], kwargs: Mapping[str, Any], what: str) -> None:
    """Refuse huge widths/counts (`'a'.ljust(10**9)`, `center(10**9)`) before they allocate."""
    for arg in (*args, *kwargs.values()):
        if isinstance(arg, int) and not isinstance(arg, bool) and abs(arg) > MAX_INT_ARGUMENT:
            raise TemplateBudgetExceeded(f"{what} called with a number above {MAX_INT_ARGUMENT}")
        _check_size(arg, what)


def _replace_growth(args: tuple[Any, ...]) -> None:
    """`replace` can multiply a string's size; check the result size before doing it."""
    if len(args) >= 3 and all(isinstance(a, str) for a in args[:3]):
        text, old, new = args[0], args[1], args[2]
        count = text.count(old) if old else len(text) + 1
        if len(text) + count * max(len(new) - len(old), 0) > MAX_OUTPUT_CHARS:
            raise TemplateBudgetExceeded("replace() would produce too long a string")


def _guarded_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    # functools.wraps copies Jinja's pass_context/pass_environment marker along with __dict__.
    @functools.wraps(function)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        _check_arguments(args, kwargs, f"filter {name!r}")
        if name == "replace":
            # The filter takes (eval_context, s, old, new[, count]); only the strings matter.
            _replace_growth(tuple(a for a in args if isinstance(a, str)))
        return _check_size(function(*args, **kwargs), f"filter {name!r}")

    return guarded


def _too_wide(pattern: str, text: str) -> bool:
    """True when a format string asks for a field wider than MAX_INT_ARGUMENT."""
    return any(int(w) > MAX_INT_ARGUMENT for w in re.findall(pattern, text))


class _LimitedNamespace(Namespace):
    """`namespace()` whose attributes cannot grow past the output budget."""

    def __setitem__(self, name: str, value: Any) -> None:
        _check_size(value, "namespace assignment")
        super().__setitem__(name, value)


class GuardedSandbox(SandboxedEnvironment):
    """PyRIT's SandboxedEnvironment plus per-render resource budgets."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, *, undefined: type[Undefined]) -> None:
        super().__init__(undefined=undefined)
        self.budget = _Budget()
        self.globals["range"] = self.range
        self.globals["namespace"] = _LimitedNamespace
        self.filters = {name: _guarded_filter(name, f) for name, f in self.filters.items()}

    def range(self, *args: int) -> range:
        """range() that draws from the render's budget."""
        _check_arguments(args, {}, "range()")
        rng = range(*args)
        self.budget.spend_range(len(rng))
        return rng

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        """Check sizes before `*`, `**`, `+` and `%` can allocate something huge."""
        if operator == "**":
            if isinstance(right, int | float) and abs(right) > MAX_POWER_EXPONENT:
                raise TemplateBudgetExceeded("exponent too large")
            if isinstance(left, int) and left.bit_length() * abs(int(right or 0)) > 4096:
                raise TemplateBudgetExceeded("power result too large")
        elif operator == "*":
            for seq, count in ((left, right), (right, left)):
                if (
                    isinstance(seq, str | list | tuple)
                    and isinstance(count, int)
                    and len(seq) * max(count, 0) > MAX_OUTPUT_CHARS
                ):
                    raise TemplateBudgetExceeded("repetition would produce too much")
        elif operator == "%" and isinstance(left, str) and _too_wide(r"%[-+ #0]*(\d+)", left):
            # "%999999999d" % 1 allocates the padding; refuse wide format fields.
            raise TemplateBudgetExceeded("format width too large")
        result = super().call_binop(context, operator, left, right)
        return _check_size(result, f"operator {operator!r}")

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        """Every call (methods, macros, globals) is sandboxed and size-checked."""
        name = getattr(__obj, "__name__", "call")
        _check_arguments(args, kwargs, f"{name}()")
        if name == "replace":
            _replace_growth((getattr(__obj, "__self__", None), *args))
        # The sandbox hands out str.format wrapped; the format string is the wrapped method's self.
        spec = getattr(getattr(__obj, "__wrapped__", __obj), "__self__", None)
        if name in {"format", "format_map"} and isinstance(spec, str) and _too_wide(r"\d+", spec):
            raise TemplateBudgetExceeded("format width too large")
        result = SandboxedEnvironment.call(__self, __context, __obj, *args, **kwargs)
        return _check_size(result, f"{name}()")


def _run_budgeted(env: GuardedSandbox, source: str, params: Mapping[str, Any]) -> str:
    """Render with a step budget (trace of template frames only) and a streaming output cap."""
    template = env.from_string(source)

    def local_tracer(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            env.budget.step()
        return local_tracer

    def global_tracer(frame: FrameType, event: str, arg: Any) -> Any:
        return local_tracer if frame.f_code.co_filename == _TEMPLATE_FILENAME else None

    previous = sys.gettrace()
    sys.settrace(global_tracer)
    try:
        parts: list[str] = []
        size = 0
        for chunk in template.generate(**params):
            size += len(chunk)
            if size > MAX_OUTPUT_CHARS:
                raise TemplateBudgetExceeded(f"output longer than {MAX_OUTPUT_CHARS} characters")
            parts.append(chunk)
        return "".join(parts)
    finally:
        sys.settrace(previous)


def _plain_text(value: str) -> str:
    """What Jinja makes of a value without markup: newlines normalised, one trailing one dropped."""
    lines = _NEWLINE_RE.split(value)[::2]
    if lines and lines[-1] == "":
        del lines[-1]
    return "\n".join(lines)


def _parse(env: GuardedSandbox, value: str) -> nodes.Template:
    if len(value) > MAX_TEMPLATE_CHARS:
        raise TemplateSyntaxProblem(f"template longer than {MAX_TEMPLATE_CHARS} characters", None)
    try:
        return env.parse(value)
    except TemplateSyntaxError as exc:
        raise TemplateSyntaxProblem(exc.message or str(exc), exc.lineno) from exc


def render_silent(value: str, **params: Any) -> str:
    """PyRIT's silent render: unknown variables stay as `{{ name }}`; errors return `value`."""
    if "{" not in value:
        # Nothing for Jinja to do but its newline handling; skip the compile.
        return _plain_text(value)
    if _CONTROL_RE.search(value) and any(v not in params for v in _FOR_VAR_RE.findall(value)):
        return value
    env = GuardedSandbox(undefined=PartialUndefined)
    _parse(env, value)  # like PyRIT, a template that does not parse is an error, not a no-op
    try:
        return _run_budgeted(env, value, params)
    except Exception:  # noqa: BLE001 - PyRIT returns the value unchanged on any render error
        return value


def render_strict(value: str, template_name: str | None = None, /, **params: Any) -> str:
    """PyRIT's strict render: any problem raises ValueError("Error rendering template ...").

    `template_name` (the seed's name) only labels the error; it is positional-only so that
    a template variable may be called anything, `name` included.
    """
    label = template_name or "<unnamed template>"
    try:
        env = GuardedSandbox(undefined=StrictUndefined)
        _parse(env, value)
        return _run_budgeted(env, value, params)
    except Exception as exc:  # noqa: BLE001 - PyRIT wraps every failure the same way
        detail = exc.message if isinstance(exc, TemplateSyntaxProblem) else str(exc)
        raise ValueError(
            f"Error rendering template '{label}': {detail}. "
            f"Template value preview: {value[:100]}..."
        ) from exc


def template_variables(value: str) -> set[str]:
    """Names the template reads from its parameters (raises TemplateSyntaxProblem)."""
    env = GuardedSandbox(undefined=StrictUndefined)
    return set(meta.find_undeclared_variables(_parse(env, value))) - set(env.globals)


def template_problems(value: str, parameters: list[str] | None) -> list[str]:
    """What a curator must fix before saving a template: syntax, parameters, unsafe access."""
    try:
        used = template_variables(value)
    except TemplateSyntaxProblem as exc:
        return [str(exc)]
    problems: list[str] = []
    declared = set(parameters or [])
    if undeclared := sorted(used - declared):
        problems.append(
            "The template uses variables that are not declared in parameters: "
            + ", ".join(undeclared)
        )
    if unused := sorted(declared - used):
        problems.append("Parameters declared but not used by the template: " + ", ".join(unused))
    # A trial render with placeholder values catches sandbox violations and budget overruns,
    # which only show up when the template runs.
    env = GuardedSandbox(undefined=StrictUndefined)
    try:
        _run_budgeted(env, value, {name: "x" for name in used})
    except SecurityError as exc:
        problems.append(f"The template is refused by the sandbox: {exc}")
    except Exception:  # noqa: BLE001, S110 - placeholder values may not fit; that is not a defect
        pass
    return problems


def escape_for_jinja(value: str) -> str:
    """A template that renders (silently or strictly) back to exactly `value`.

    PyRIT's `Seed.escape_for_jinja` wraps the value in `{% raw %}...{% endraw %}`; an `endraw`
    tag inside the value is emitted as a string expression so it cannot close the block early.
    """
    try:
        if render_silent(value) == value:
            return value
    except TemplateSyntaxProblem:
        pass
    pieces: list[str] = []
    pos = 0
    for match in re.finditer(r"\{%-?\s*endraw\s*-?%\}", value):
        pieces.append("{% raw %}" + value[pos : match.start()] + "{% endraw %}")
        pieces.append("{{ " + repr(match.group(0)) + " }}")
        pos = match.end()
    pieces.append("{% raw %}" + value[pos:] + "{% endraw %}")
    escaped = "".join(pieces)
    if render_silent(escaped) != value:
        raise ValueError("value cannot be escaped for Jinja")
    return escaped
