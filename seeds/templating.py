"""Sandboxed Jinja2 rendering of seed values as PyRIT does it, with resource limits. No Django.

PyRIT renders seed values in a `jinja2.sandbox.SandboxedEnvironment` (PYRIT-MODEL.md 4.2):

* `render_strict` mirrors `Seed.render_template_value`: a missing variable (or any other error)
  raises `ValueError("Error rendering template '<name>': ...")`.
* `render_silent` mirrors `Seed.render_template_value_silent`: unknown variables stay as the
  literal text `{{ name }}` (normalised spacing), a `{% for v in coll %}` whose `coll` is not
  supplied leaves the whole value unrendered, and a render error returns the value unchanged.
  Like PyRIT, a template that does not parse raises (here: `TemplateSyntaxProblem`).

The sandbox already refuses access to Python internals (`''.__class__`, `cycler.__init__`...).
Template text is hostile here, so every parse and render of a value holding markup runs in a
forked child process with a CPU, memory and wall-clock limit (`seeds.bounded`, `LIMITS`): work
inside one filter or C call (`wordwrap`, `join`, `indent`, deep nesting) cannot outlast it.
Inside the child, checks give precise messages for the common cases first: a cap on `range()`
sizes, on executed template steps, on bracket/block nesting, on the size of strings and numbers
produced by operators, calls, filters and namespaces, and on the output length. Values without
markup never start a child. Batches (`render_silent_many`, `escape_many`) share one child and
one time budget, so importing or exporting hundreds of templates forks once.

Going over any budget raises (or returns) `TemplateBudgetExceeded`: save-time validation,
previews, exports and imports report it for the seed at fault.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import FrameType
from typing import Any

from jinja2 import StrictUndefined, TemplateSyntaxError, Undefined, meta, nodes
from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedEnvironment
from jinja2.utils import Namespace

from seeds import bounded

# Budgets for one render. Generous for real prompts (the biggest bundled seed is ~3 KB).
MAX_TEMPLATE_CHARS = 1_000_000
MAX_OUTPUT_CHARS = 1_000_000
MAX_RANGE_ITEMS = 10_000
MAX_STEPS = 200_000
MAX_INT_ARGUMENT = 100_000
MAX_POWER_EXPONENT = 1_000
# Deepest bracket or block nesting: the parser recurses per level, and the Python code Jinja
# compiles a template to indents per block (Python allows 100 levels).
MAX_NESTING = 30
# Every template's parse and render runs in a child process under these limits (seeds.bounded):
# 2 s and 256 MiB per template, 10 s for all the templates one request or file renders.
LIMITS = bounded.Limits(item_seconds=2.0, batch_seconds=10.0, memory_bytes=256 * 1024 * 1024)
_BLOCK_TAGS = frozenset({"for", "if", "macro", "call", "filter", "block", "with", "autoescape"})

_NEWLINE_RE = re.compile(r"(\r\n|\r|\n)")
# PyRIT's own pre-check before a silent render (seed.py, render_template_value_silent).
_CONTROL_RE = re.compile(r"\{%[-\s]*(for|if|block|macro|call)")
_FOR_VAR_RE = re.compile(r"\{%[-\s]*for\s+\w+\s+in\s+(\w+)")
# Jinja compiles templates from strings under this file name; the step budget traces only them.
_TEMPLATE_FILENAME = "<template>"


class TemplateBudgetExceeded(SecurityError, ValueError):
    """A render went over one of the resource budgets (a ValueError like other render errors)."""


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

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
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
    """Render with a step budget (trace of template frames only) and a streaming output cap.

    Running out of memory (the child's address-space cap) or of stack is a budget overrun.
    """
    try:
        return _render_traced(env, source, params)
    except MemoryError as exc:
        raise TemplateBudgetExceeded("went over the memory limit for one template") from exc
    except RecursionError as exc:
        raise TemplateBudgetExceeded("nests too deeply") from exc


def _render_traced(env: GuardedSandbox, source: str, params: Mapping[str, Any]) -> str:
    template = env.from_string(source)

    def local_tracer(_frame: FrameType, event: str, _arg: Any) -> Any:
        if event == "line":
            env.budget.step()
        return local_tracer

    def global_tracer(frame: FrameType, _event: str, _arg: Any) -> Any:
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


def has_markup(value: str) -> bool:
    """True when Jinja would see a tag, an expression or a comment in `value`."""
    return "{{" in value or "{%" in value or "{#" in value


def _check_nesting(env: GuardedSandbox, value: str) -> None:
    """Refuse deep bracket or block nesting before the (recursive) parser meets it."""
    depth = blocks = 0
    expect_block_name = False
    for lineno, kind, token in env.lex(value):
        if kind == "whitespace":
            continue
        if kind == "operator" and token in "([{":
            depth += 1
        elif kind == "operator" and token in ")]}":
            depth -= 1
        elif kind == "block_begin":
            expect_block_name = True
            continue
        elif kind == "name" and expect_block_name:
            if token in _BLOCK_TAGS:
                blocks += 1
            elif token.startswith("end"):
                blocks -= 1
        expect_block_name = False
        if depth > MAX_NESTING or blocks > MAX_NESTING:
            raise TemplateSyntaxProblem(
                f"expressions or blocks nest more than {MAX_NESTING} levels deep", lineno
            )


def _parse(env: GuardedSandbox, value: str) -> nodes.Template:
    if len(value) > MAX_TEMPLATE_CHARS:
        raise TemplateSyntaxProblem(f"template longer than {MAX_TEMPLATE_CHARS} characters", None)
    try:
        _check_nesting(env, value)
        return env.parse(value)
    except TemplateSyntaxError as exc:
        raise TemplateSyntaxProblem(exc.message or str(exc), exc.lineno) from exc
    except RecursionError as exc:
        # The lexer check above bounds brackets and blocks; anything else that still recurses
        # past Python's limit is refused the same way.
        raise TemplateSyntaxProblem("the template nests too deeply", None) from exc


# -- work done in the bounded child (seeds.bounded); results are plain picklable tuples -------

_OK, _SYNTAX, _BUDGET, _ERROR = "ok", "syntax", "budget", "error"
Result = tuple[Any, ...]


def _syntax(exc: TemplateSyntaxProblem) -> Result:
    return (_SYNTAX, exc.message, exc.lineno)


def _silent_in_child(item: tuple[str, Mapping[str, Any]]) -> Result:
    """PyRIT's silent render; budget overruns are reported, other render errors keep `value`."""
    value, params = item
    if _CONTROL_RE.search(value) and any(v not in params for v in _FOR_VAR_RE.findall(value)):
        return (_OK, value)
    env = GuardedSandbox(undefined=PartialUndefined)
    try:
        _parse(env, value)  # like PyRIT, a template that does not parse is an error, not a no-op
    except TemplateSyntaxProblem as exc:
        return _syntax(exc)
    try:
        return (_OK, _run_budgeted(env, value, params))
    except TemplateBudgetExceeded as exc:
        return (_BUDGET, str(exc))
    except Exception:  # PyRIT returns the value unchanged on any render error
        return (_OK, value)


def _strict_in_child(item: tuple[str, Mapping[str, Any]]) -> Result:
    """PyRIT's strict render: the rendered text or the error's detail."""
    value, params = item
    try:
        env = GuardedSandbox(undefined=StrictUndefined)
        _parse(env, value)
        return (_OK, _run_budgeted(env, value, params))
    except TemplateSyntaxProblem as exc:
        return (_ERROR, exc.message)
    except TemplateBudgetExceeded as exc:
        return (_BUDGET, str(exc))
    except Exception as exc:  # PyRIT wraps every failure the same way
        return (_ERROR, str(exc))


def _variables_in_child(value: str) -> Result:
    env = GuardedSandbox(undefined=StrictUndefined)
    try:
        used = set(meta.find_undeclared_variables(_parse(env, value))) - set(env.globals)
    except TemplateSyntaxProblem as exc:
        return _syntax(exc)
    return (_OK, sorted(used))


def _problems_in_child(item: tuple[str, list[str]]) -> Result:
    value, parameters = item
    outcome = _variables_in_child(value)
    if outcome[0] != _OK:
        return outcome
    used = set(outcome[1])
    problems = _parameter_problems(used, parameters)
    # A trial render with placeholder values catches sandbox violations and budget overruns,
    # which only show up when the template runs.
    env = GuardedSandbox(undefined=StrictUndefined)
    try:
        _run_budgeted(env, value, {name: "x" for name in used})
    except TemplateBudgetExceeded as exc:
        return (_BUDGET, str(exc))
    except SecurityError as exc:
        problems.append(f"The template is refused by the sandbox: {exc}")
    except Exception:  # placeholder values may not fit; that is not a defect
        pass
    return (_OK, problems)


def _escape_in_child(value: str) -> Result:
    """PyRIT's escape_for_jinja, verified by rendering the result back."""
    outcome = _silent_in_child((value, {}))
    if outcome == (_OK, value):
        return outcome
    if outcome[0] == _BUDGET:
        return outcome
    pieces: list[str] = []
    pos = 0
    for match in re.finditer(r"\{%-?\s*endraw\s*-?%\}", value):
        pieces.append("{% raw %}" + value[pos : match.start()] + "{% endraw %}")
        pieces.append("{{ " + repr(match.group(0)) + " }}")
        pos = match.end()
    pieces.append("{% raw %}" + value[pos:] + "{% endraw %}")
    escaped = "".join(pieces)
    if _silent_in_child((escaped, {})) != (_OK, value):
        return (_ERROR, "value cannot be escaped for Jinja")
    return (_OK, escaped)


def _run(function: Callable[[Any], Result], items: Sequence[Any]) -> list[Result]:
    """Run child work under seeds.bounded's limits; a limit reached is a budget result."""
    if not items:
        return []
    outcomes = bounded.run_each(function, items, LIMITS)
    return [o.value if o.ok else (_BUDGET, o.problem) for o in outcomes]


def _raise_for(result: Result) -> None:
    if result[0] == _SYNTAX:
        raise TemplateSyntaxProblem(result[1], result[2])
    if result[0] == _BUDGET:
        raise TemplateBudgetExceeded(f"the template is over budget: {result[1]}")
    if result[0] == _ERROR:
        raise ValueError(result[1])


def _parameter_problems(used: set[str], parameters: list[str] | None) -> list[str]:
    problems: list[str] = []
    declared = set(parameters or [])
    if undeclared := sorted(used - declared):
        problems.append(
            "The template uses variables that are not declared in parameters: "
            + ", ".join(undeclared)
        )
    if unused := sorted(declared - used):
        problems.append("Parameters declared but not used by the template: " + ", ".join(unused))
    return problems


# -- the public functions (each template's work runs bounded; plain text never forks) -------

RenderResult = str | TemplateSyntaxProblem | TemplateBudgetExceeded


def render_silent_many(values: Sequence[str], **params: Any) -> list[RenderResult]:
    """`render_silent` of each value, in one bounded child; a failure is returned, not raised."""
    results: list[RenderResult] = []
    templated = [i for i, v in enumerate(values) if has_markup(v)]
    work = _run(_silent_in_child, [(values[i], params) for i in templated])
    rendered = dict(zip(templated, work, strict=True))
    for i, value in enumerate(values):
        result = rendered.get(i)
        if result is None:
            results.append(_plain_text(value))
            continue
        try:
            _raise_for(result)
        except (TemplateSyntaxProblem, TemplateBudgetExceeded) as exc:
            results.append(exc)
            continue
        results.append(result[1])
    return results


def render_silent(value: str, **params: Any) -> str:
    """PyRIT's silent render: unknown variables stay as `{{ name }}`; errors return `value`.

    Raises TemplateSyntaxProblem for a template that does not parse (as PyRIT does) and
    TemplateBudgetExceeded for one that goes over a budget.
    """
    [result] = render_silent_many([value], **params)
    if isinstance(result, Exception):
        raise result
    return result


def render_strict(value: str, template_name: str | None = None, /, **params: Any) -> str:
    """PyRIT's strict render: any problem raises ValueError("Error rendering template ...").

    `template_name` (the seed's name) only labels the error; it is positional-only so that
    a template variable may be called anything, `name` included. Going over a budget is a
    TemplateBudgetExceeded, which is a ValueError with the same wording.
    """
    label = template_name or "<unnamed template>"
    if len(value) <= MAX_TEMPLATE_CHARS and not has_markup(value):
        return _plain_text(value)
    [result] = _run(_strict_in_child, [(value, params)])
    if result[0] == _OK:
        return str(result[1])
    error = TemplateBudgetExceeded if result[0] == _BUDGET else ValueError
    detail = f"over budget: {result[1]}" if result[0] == _BUDGET else result[1]
    raise error(
        f"Error rendering template '{label}': {detail}. Template value preview: {value[:100]}..."
    )


def template_variables(value: str) -> set[str]:
    """Names the template reads from its parameters.

    Raises TemplateSyntaxProblem, or TemplateBudgetExceeded when even parsing is over budget.
    """
    if len(value) <= MAX_TEMPLATE_CHARS and not has_markup(value):
        return set()
    [result] = _run(_variables_in_child, [value])
    _raise_for(result)
    return set(result[1])


def template_problems(value: str, parameters: list[str] | None) -> list[str]:
    """What a curator must fix before saving a template: syntax, parameters, unsafe access."""
    if len(value) <= MAX_TEMPLATE_CHARS and not has_markup(value):
        return _parameter_problems(set(), parameters)
    [result] = _run(_problems_in_child, [(value, list(parameters or []))])
    if result[0] == _SYNTAX:
        return [str(TemplateSyntaxProblem(result[1], result[2]))]
    if result[0] == _BUDGET:
        return [f"The template is over budget: {result[1]}"]
    return list(result[1])


def escape_many(values: Sequence[str]) -> list[str | ValueError]:
    """`escape_for_jinja` of each value, in one bounded child; a failure is returned."""
    # Plain text whose newlines Jinja would keep as they are needs no escaping and no child.
    templated = [i for i, v in enumerate(values) if has_markup(v) or _plain_text(v) != v]
    work = _run(_escape_in_child, [values[i] for i in templated])
    escaped = dict(zip(templated, work, strict=True))
    results: list[str | ValueError] = []
    for i, value in enumerate(values):
        result = escaped.get(i)
        if result is None:
            results.append(value)
            continue
        try:
            _raise_for(result)
        except ValueError as exc:
            results.append(exc)
            continue
        results.append(result[1])
    return results


def escape_for_jinja(value: str) -> str:
    """A template that renders (silently or strictly) back to exactly `value`.

    PyRIT's `Seed.escape_for_jinja` wraps the value in `{% raw %}...{% endraw %}`; an `endraw`
    tag inside the value is emitted as a string expression so it cannot close the block early.
    Raises ValueError (TemplateBudgetExceeded when rendering the value is over budget).
    """
    [result] = escape_many([value])
    if isinstance(result, Exception):
        raise result
    return result
