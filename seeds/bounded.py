"""Run a function over items in a forked child under CPU, memory and wall-clock limits. No Django.

Template text is hostile, and some of what it can ask for happens inside one C call or one
library function (a join of a long list, `wordwrap`, a deeply nested expression handed to the
parser), where no check between template steps can stop it. So the work itself runs in a child
process: its address space is capped (`RLIMIT_AS`, above what it inherits: free memory already
inside the inherited heap stays usable, so a child holds at most the worker's own size plus the
cap), its CPU time is capped per item (`RLIMIT_CPU`), and the parent kills it when an item
takes longer than its wall-clock share or the whole batch runs out of time. A killed item is
reported, the child is restarted at the next item, and items left when the batch's time is
spent are reported without being run.

The child is a `fork()` of the calling process: it starts in microseconds with everything already
imported, touches nothing shared (no database, no files) and leaves through `os._exit`, so no
inherited connection, buffer or exit handler of the parent runs in it. Forking a process that has
other threads is safe here for the same reason; a child that nevertheless hangs on a lock some
other thread held at the fork is killed by the wall-clock limit like any slow item.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import pickle
import resource
import select
import signal
import struct
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

_HEADER = struct.Struct("!I")


@dataclass(frozen=True)
class Limits:
    """How much one item, and one whole batch, may cost."""

    item_seconds: float = 2.0
    batch_seconds: float = 10.0
    memory_bytes: int = 256 * 1024 * 1024


DEFAULT_LIMITS = Limits()
# An outer deadline (monotonic seconds) shared by every batch run inside `time_budget`, so a
# request that renders several batches (an export of many datasets) is bounded as a whole.
_shared_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "bounded_shared_deadline", default=None
)


@contextlib.contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Every `run_each` inside the block finishes by `seconds` from now, all together."""
    deadline = time.monotonic() + seconds
    outer = _shared_deadline.get()
    token = _shared_deadline.set(deadline if outer is None else min(outer, deadline))
    try:
        yield
    finally:
        _shared_deadline.reset(token)


@dataclass(frozen=True)
class Outcome:
    """What running one item gave: `ok` with a value, or a `problem` saying why not."""

    ok: bool
    value: Any = None
    problem: str = ""


def run_each(
    function: Callable[[Any], Any], items: Sequence[Any], limits: Limits = DEFAULT_LIMITS
) -> list[Outcome]:
    """`function(item)` for each item, in forked children under `limits`, in order.

    `function` must return something picklable; an exception it raises becomes a problem
    naming its type and message (MemoryError and RecursionError as limits reached).
    """
    outcomes: list[Outcome | None] = [None] * len(items)
    batch_deadline = time.monotonic() + limits.batch_seconds
    shared = _shared_deadline.get()
    if shared is not None:
        batch_deadline = min(batch_deadline, shared)
    start = 0
    while start < len(items):
        if time.monotonic() >= batch_deadline:
            for i in range(start, len(items)):
                outcomes[i] = Outcome(
                    False,
                    problem="not checked: this request's rendering time "
                    f"({limits.batch_seconds:g} s) was spent on earlier items",
                )
            break
        start = _run_child(function, items, start, outcomes, limits, batch_deadline)
    return [o if o is not None else Outcome(False, problem="not run") for o in outcomes]


def _run_child(
    function: Callable[[Any], Any],
    items: Sequence[Any],
    start: int,
    outcomes: list[Outcome | None],
    limits: Limits,
    batch_deadline: float,
) -> int:
    """Fork one child working from `start`; collect its answers; return where to go on."""
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():
        # Python 3.12+ warns about fork() with threads; see the module docstring for why the
        # child is safe (it runs pure Python on imported modules and exits with os._exit).
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's coverage is not collected
        code = 0
        try:
            os.close(read_fd)
            _child(function, items, start, write_fd, limits)
        except BaseException:  # the child must never return into the parent
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    position = start
    buffer = b""
    item_deadline = min(time.monotonic() + limits.item_seconds, batch_deadline)
    try:
        while position < len(items):
            remaining = item_deadline - time.monotonic()
            if remaining <= 0:
                outcomes[position] = Outcome(
                    False,
                    problem=f"took longer than {min(limits.item_seconds, limits.batch_seconds):g}"
                    " s (the time limit for one template)",
                )
                return position + 1
            ready, _, _ = select.select([read_fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(read_fd, 1 << 20)
            if not chunk:
                # The child died mid-item: the CPU limit (SIGXCPU) or the memory limit.
                outcomes[position] = Outcome(
                    False,
                    problem="went over the CPU or memory limit for one template "
                    f"({limits.memory_bytes // (1024 * 1024)} MiB)",
                )
                return position + 1
            buffer += chunk
            while len(buffer) >= _HEADER.size:
                (size,) = _HEADER.unpack_from(buffer)
                if len(buffer) < _HEADER.size + size:
                    break
                # Unpickling is safe: these are our own child's bytes.
                outcomes[position] = pickle.loads(buffer[_HEADER.size : _HEADER.size + size])
                buffer = buffer[_HEADER.size + size :]
                position += 1
                item_deadline = min(time.monotonic() + limits.item_seconds, batch_deadline)
        return position
    finally:
        os.close(read_fd)
        _reap(pid)


def _reap(pid: int) -> None:
    """Kill the child (it may be stuck) and collect it so no zombie is left."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def _child(
    function: Callable[[Any], Any], items: Sequence[Any], start: int, fd: int, limits: Limits
) -> None:  # pragma: no cover - runs in the forked child
    """Run items from `start` under the limits, writing one framed pickled Outcome per item."""
    signal.signal(signal.SIGXCPU, signal.SIG_DFL)
    # A child killed by SIGXCPU must not leave a core file of the worker's memory behind.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _cap_address_space(limits.memory_bytes)
    cpu_per_item = max(1, math.ceil(limits.item_seconds))
    # Only the soft limit moves: raising a hard limit needs CAP_SYS_RESOURCE, so an
    # unprivileged child that raised it per item died (as if over budget) at the first item
    # after its first second of CPU. SIGXCPU at the soft limit ends the child (SIG_DFL).
    _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    for item in items[start:]:
        used = resource.getrusage(resource.RUSAGE_SELF)
        soft = math.ceil(used.ru_utime + used.ru_stime) + cpu_per_item
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
        try:
            outcome = Outcome(True, value=function(item))
        except MemoryError:
            outcome = Outcome(False, problem="went over the memory limit for one template")
        except RecursionError:
            outcome = Outcome(False, problem="nests too deeply")
        except Exception as exc:  # reported to the parent as a problem
            outcome = Outcome(False, problem=f"{type(exc).__name__}: {exc}")
        data = pickle.dumps(outcome)
        view = memoryview(_HEADER.pack(len(data)) + data)
        while view:
            view = view[os.write(fd, view) :]


def _cap_address_space(extra: int) -> None:  # pragma: no cover - runs in the forked child
    """Limit the child's address space to what it inherited plus `extra` bytes."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        pages = int(statm.read().split()[0])
    current = pages * os.sysconf("SC_PAGE_SIZE")
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = current + extra
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
