"""PyRIT's `.prompt` (YAML) dataset loader, rule for rule, into plain dataclasses. Framework-free.

Follows `SeedDataset.from_yaml_file` of PyRIT 1.1 (PYRIT-MODEL.md 4.5):

1. `harm_categories`, `authors`, `groups`, `parameters` given as a bare string become a list,
   on the dataset and on every seed.
2. `prompt_group_id` in a seed is an error; seeds sharing a `prompt_group_alias` share one new
   uuid4, a seed without an alias is a group of its own.
3. A seed's `seed_type` defaults to the dataset's, else `prompt`.
4. `name`, `description`, `source` fall back to the dataset's when the seed's is empty;
   `dataset_name` to the dataset's `dataset_name`, then its `name`.
5. `harm_categories`, `authors`, `groups` merge: dataset values first, then the seed's,
   de-duplicated in order. `added_by` and `date_added` inherit from the dataset too.
6. Prompts take the dataset's `data_type` when missing and `role` defaults to `user`;
   objectives and simulated conversations drop `data_type`, `role`, `sequence`, `parameters`.
7. Unknown keys are rejected (PyRIT's models use `extra="forbid"`).

Values are trusted templates (`is_jinja_template`), rendered silently at load with PyRIT's path
variables (`{{ datasets_path }}`, ...), so `{{ stolen_item }}` survives and a trailing newline
goes, exactly as in PyRIT.

Where redteam has to decide (documented in README, "Seed datasets"):

* `datasets_path` is the folder that holds the dataset tree. If the file sits inside PyRIT's own
  layout (`.../datasets/seed_datasets/local/...`) that is PyRIT's `datasets` folder. Otherwise it
  is `search_root` (the folder the import started from) or the file's folder; a rendered media
  path `<datasets_path>/seed_datasets/local/<rel>` that does not exist is then looked up as
  `<dir>/<rel>` in the file's folder and its parents up to `search_root` (without one, up to
  three levels up), so a copy of `seed_datasets/local` (like the fixtures) imports with its
  media. The value stored for a resolved media seed is the real absolute path of the file read.
* Reads are confined to `search_root` (else the file's folder), symlinks resolved: an absolute
  media path, a `../` that climbs out, or a file that resolves outside is a problem of its seed.
* The YAML is parsed with aliases counted and the expanded size measured on the node graph
  (`parse_yaml`), so a "billion laughs" file is refused before anything walks it.
* Without a folder (an upload), `datasets_path` renders as `datasets`, nothing is read from disk,
  and media seeds keep `media_path=None` for the caller to resolve from uploaded files or from
  stored blobs (by `value_sha256`).
* A file without `dataset_name` (psfuzz_steal_system.prompt) keeps `dataset_name=None` here, as
  PyRIT does; its seeds carry the `name` as dataset name.
* Like PyRIT, `id` and `is_jinja_template` given per seed are ignored (every load makes new ids).
  Unlike PyRIT 1.1's dict path, `is_general_technique`, `response_json_schema`,
  `next_message_system_prompt_path` and `pyrit_version` are kept when given.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from redteam.core.enums import CHAT_MESSAGE_ROLES, PROMPT_DATA_TYPES, SEED_TYPES
from seeds import rules
from seeds.templating import RenderResult, has_markup, render_silent_many

UPLOAD_DATASETS_PATH = "datasets"
MAX_MEDIA_BYTES = 256 * 1024 * 1024
# Without a search root, media are looked for this many folders above the file at most.
MAX_PARENT_LEVELS = 3
# YAML aliases (`*a`) share one parsed node, so a small file can stand for a huge document
# (the "billion laughs"). Counted on the composed nodes before anything walks them.
MAX_YAML_ALIASES = 10_000
MAX_YAML_EXPANDED_NODES = 200_000
# Characters of scalars after expanding aliases: at most this much over the file's own size.
MAX_YAML_EXPANDED_EXTRA_CHARS = 1_000_000
_PATH_KEYS = (
    "adversarial_chat_system_prompt_path",
    "simulated_target_system_prompt_path",
    "next_message_system_prompt_path",
)

_MERGED_LIST_FIELDS = ("harm_categories", "authors", "groups")
DATASET_KEYS = frozenset(
    {
        "name",
        "dataset_name",
        "description",
        "source",
        "added_by",
        "data_type",
        "harm_categories",
        "authors",
        "groups",
        "date_added",
        "seed_type",
        "seeds",
    }
)
# A seed's own keys in PyRIT's serialization order (PYRIT-MODEL.md 4.1; seeds.jsonl of each line).
SEED_BASE_KEYS: tuple[str, ...] = (
    "value",
    "value_sha256",
    "id",
    "name",
    "dataset_name",
    "harm_categories",
    "description",
    "authors",
    "groups",
    "source",
    "date_added",
    "added_by",
    "metadata",
    "prompt_group_id",
    "prompt_group_alias",
    "is_general_technique",
    "is_jinja_template",
)
# A YAML seed takes its group from the file, so prompt_group_id is not one of its keys.
SEED_KEYS = (frozenset(SEED_BASE_KEYS) - {"prompt_group_id"}) | frozenset(
    {
        "data_type",
        "seed_type",
        # SeedPrompt
        "role",
        "sequence",
        "parameters",
        "response_json_schema",
        # SeedSimulatedConversation
        "num_turns",
        "adversarial_chat_system_prompt_path",
        "simulated_target_system_prompt_path",
        "next_message_system_prompt_path",
        "pyrit_version",
    }
)
_MEDIA_EXTENSIONS = {
    "video_path": {"mp4", "avi", "mov", "mkv", "ogv", "flv", "wmv", "webm"},
    "audio_path": {"flac", "mp3", "mpeg", "mpga", "m4a", "ogg", "wav"},
    "image_path": {"jpg", "jpeg", "png", "gif", "bmp", "tiff", "tif"},
}


class DatasetLoadError(ValueError):
    """The file is not a dataset PyRIT would load; `problems` names each field at fault."""

    def __init__(self, source_name: str, problems: list[str]) -> None:
        super().__init__(f"{source_name}: " + "; ".join(problems))
        self.source_name = source_name
        self.problems = problems


@dataclass
class LoadedSeed:
    """One seed as PyRIT builds it from the YAML (after merging, defaults and rendering)."""

    index: int
    seed_type: str
    value: str
    data_type: str
    prompt_group_id: uuid.UUID
    prompt_group_alias: str | None = None
    value_sha256: str | None = None
    name: str | None = None
    dataset_name: str | None = None
    description: str | None = None
    source: str | None = None
    added_by: str | None = None
    date_added: datetime | None = None
    harm_categories: list[str] = field(default_factory=list)
    authors: list[str] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    is_general_technique: bool = False
    is_jinja_template: bool = True
    role: str | None = None
    sequence: int | None = None
    parameters: list[str] | None = None
    response_json_schema: dict[str, Any] | None = None
    num_turns: int | None = None
    adversarial_chat_system_prompt_path: str | None = None
    simulated_target_system_prompt_path: str | None = None
    next_message_system_prompt_path: str | None = None
    pyrit_version: str | None = None
    # The local file a media seed's bytes were read from (None when not resolved).
    media_path: Path | None = None


@dataclass
class LoadedGroup:
    """Seeds sharing one prompt_group_id, in PyRIT's canonical order."""

    prompt_group_id: uuid.UUID
    alias: str | None
    seeds: list[LoadedSeed]

    @property
    def content_sha256(self) -> str:
        """Dedup identity (see rules.group_content_sha256)."""
        return rules.group_content_sha256(self.seeds)


@dataclass
class LoadedDataset:
    """A loaded `.prompt` file: dataset-level fields, seeds in file order, and their groups."""

    source_name: str
    dataset_name: str | None
    name: str | None
    description: str | None
    source: str | None
    added_by: str | None
    data_type: str | None
    seed_type: str | None
    harm_categories: list[str] | None
    authors: list[str]
    groups: list[str]
    date_added: datetime | None
    seeds: list[LoadedSeed]
    seed_groups: list[LoadedGroup]

    @property
    def effective_dataset_name(self) -> str | None:
        """The dataset name the seeds carry: `dataset_name`, else `name` (PyRIT's fallback)."""
        return self.dataset_name or self.name


class _DocumentTooLarge(yaml.YAMLError):
    """Aliases would expand the document past the limits (or refer to themselves)."""


class _BoundedSafeLoader(yaml.SafeLoader):
    """SafeLoader that counts aliases while composing and measures the expanded document.

    Both checks run on the node graph, before any Python object is built or walked, and cost
    time linear in the file's size (each distinct node is measured once).
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.aliases = 0
        self.text_chars = len(stream)

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        """Count alias uses as they are composed."""
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_YAML_ALIASES:
                raise _DocumentTooLarge(f"more than {MAX_YAML_ALIASES} YAML aliases")
        return super().compose_node(parent, index)  # type: ignore[return-value]

    def get_single_node(self) -> yaml.Node | None:
        """The document's node, refused if aliases blow it up."""
        node = super().get_single_node()
        if node is not None:
            _check_expansion(node, self.text_chars + MAX_YAML_EXPANDED_EXTRA_CHARS)
        return node


def _node_children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _check_expansion(root: yaml.Node, max_chars: int) -> None:
    """Nodes and scalar characters of the document with every alias expanded, bounded.

    Iterative post-order over the node graph with sizes memoised per node; a node met again
    while it is still open is an alias to one of its own ancestors (a recursive document).
    """
    sizes: dict[int, tuple[int, int]] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, closing = stack.pop()
        key = id(node)
        if closing:
            open_nodes.discard(key)
            count, chars = 1, len(node.value) if isinstance(node, yaml.ScalarNode) else 0
            for child in _node_children(node):
                child_count, child_chars = sizes[id(child)]
                count += child_count
                chars += child_chars
            if count > MAX_YAML_EXPANDED_NODES:
                raise _DocumentTooLarge(
                    f"YAML aliases expand the document to more than {MAX_YAML_EXPANDED_NODES} nodes"
                )
            if chars > max_chars:
                raise _DocumentTooLarge(
                    f"YAML aliases expand the document to more than {max_chars} characters"
                )
            sizes[key] = (count, chars)
            continue
        if key in sizes:
            continue
        open_nodes.add(key)
        stack.append((node, True))
        for child in _node_children(node):
            if id(child) in open_nodes:
                raise _DocumentTooLarge("a YAML alias refers to a node that contains it")
            if id(child) not in sizes:
                stack.append((child, False))


def parse_yaml(text: str) -> Any:
    """`yaml.safe_load` with aliases and expansion bounded (raises yaml.YAMLError)."""
    loader = _BoundedSafeLoader(text)
    try:
        return loader.get_single_data()
    except RecursionError as exc:
        raise _DocumentTooLarge("the YAML nests too deeply") from exc
    finally:
        loader.dispose()


def combine_list(first: list[str] | None, second: list[str] | None) -> list[str]:
    """PyRIT's combine_list: first then second, de-duplicated, order kept."""
    return list(dict.fromkeys([*(first or []), *(second or [])]))


def pyrit_path_variables(datasets_path: str) -> dict[str, str]:
    """PyRIT's PATHS_DICT, laid out around `datasets_path` as in pyrit/common/path.py."""
    d = PurePosixPath(datasets_path)
    pyrit = d.parent
    home = pyrit.parent
    db_data = home / "dbdata"
    score = d / "score"
    evals = d / "scorer_evals"
    executors = d / "executors"
    paths = {
        "datasets_path": d,
        "pyrit_path": pyrit,
        "pyrit_home_path": home,
        "docs_path": home / "doc",
        "docs_code_path": home / "doc" / "code",
        "db_data_path": db_data,
        "log_path": db_data / "logs.txt",
        "content_classifiers_path": score / "content_classifiers",
        "likert_path": score / "likert",
        "scales_path": score / "scales",
        "harm_definition_path": d / "harm_definition",
        "json_schemas_path": d / "json_schemas",
        "jailbreak_templates_path": d / "jailbreak" / "templates",
        "red_team_executor_path": executors / "red_teaming",
        "simulated_target_path": executors / "simulated_target",
        "scorer_evals_path": evals,
        "scorer_evals_harm_path": evals / "harm",
        "scorer_evals_objective_path": evals / "objective",
    }
    # A bare relative name stays bare ("datasets/...", never "./datasets").
    return {k: str(v) for k, v in paths.items()}


def default_datasets_path(base_dir: Path, search_root: Path | None) -> str:
    """PyRIT's datasets folder when the file is inside PyRIT's layout, else the tree's root."""
    for folder in (base_dir, *base_dir.parents):
        if folder.name == "local" and folder.parent.name == "seed_datasets":
            return str(folder.parent.parent)
    return str(search_root or base_dir)


def load_dataset_file(
    path: Path,
    *,
    search_root: Path | None = None,
    datasets_path: str | None = None,
    max_media_bytes: int = MAX_MEDIA_BYTES,
) -> LoadedDataset:
    """Load a `.prompt` file from disk; media paths resolve against its folder (see module doc)."""
    path = path.resolve()
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetLoadError(str(path), [f"cannot read file: {exc}"]) from exc
    root = search_root.resolve() if search_root else None
    return load_dataset_text(
        text,
        source_name=str(path),
        base_dir=path.parent,
        search_root=root,
        datasets_path=datasets_path or default_datasets_path(path.parent, root),
        max_media_bytes=max_media_bytes,
    )


def load_dataset_text(
    text: str,
    *,
    source_name: str,
    base_dir: Path | None = None,
    search_root: Path | None = None,
    datasets_path: str | None = None,
    max_media_bytes: int = MAX_MEDIA_BYTES,
) -> LoadedDataset:
    """Load a dataset from YAML text; media files are read only when `base_dir` is given."""
    try:
        data = parse_yaml(text)
    except yaml.YAMLError as exc:
        raise DatasetLoadError(source_name, [f"invalid YAML: {exc}"]) from exc
    if data is None:
        raise DatasetLoadError(source_name, ["the file is empty"])
    if not isinstance(data, dict):
        raise DatasetLoadError(source_name, ["the top level must be a mapping"])
    loader = _Loader(
        source_name=source_name,
        base_dir=base_dir,
        search_root=search_root,
        datasets_path=datasets_path
        or (default_datasets_path(base_dir, search_root) if base_dir else UPLOAD_DATASETS_PATH),
        max_media_bytes=max_media_bytes,
    )
    return loader.load(data)


class _Loader:
    """One load: collects every problem before failing, so a curator sees them all at once."""

    def __init__(
        self,
        *,
        source_name: str,
        base_dir: Path | None,
        search_root: Path | None,
        datasets_path: str,
        max_media_bytes: int,
    ) -> None:
        self.source_name = source_name
        self.base_dir = base_dir
        self.search_root = search_root
        self.datasets_path = datasets_path
        self.path_vars = pyrit_path_variables(datasets_path)
        self.max_media_bytes = max_media_bytes
        self.problems: list[str] = []
        self.rendered: dict[str, RenderResult] = {}

    def problem(self, where: str, message: str) -> None:
        self.problems.append(f"{where}: {message}" if where else message)

    # -- field coercion (pydantic's lax mode, as PyRIT's models validate) ---------------------

    def _str(self, where: str, value: Any) -> str | None:
        if value is None or isinstance(value, str):
            return value
        self.problem(where, f"must be a string, not {type(value).__name__}")
        return None

    def _str_list(self, where: str, value: Any) -> list[str] | None:
        if value is None:
            return None
        if isinstance(value, str):
            return [value]  # rule 1: scalar to list
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return list(value)
        self.problem(where, "must be a string or a list of strings")
        return None

    def _int(self, where: str, value: Any) -> int | None:
        if isinstance(value, bool):
            self.problem(where, "must be an integer, not a boolean")
            return None
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value)
        self.problem(where, f"must be an integer, not {value!r}")
        return None

    def _bool(self, where: str, value: Any) -> bool:
        if isinstance(value, bool):
            return value
        self.problem(where, f"must be true or false, not {value!r}")
        return False

    def _datetime(self, where: str, value: Any) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, str):
            try:
                value = datetime.fromisoformat(value)
            except ValueError:
                self.problem(where, f"is not an ISO 8601 date/time: {value!r}")
                return None
        if isinstance(value, date) and not isinstance(value, datetime):
            value = datetime(value.year, value.month, value.day)
        if not isinstance(value, datetime):
            self.problem(where, "must be a date/time")
            return None
        # PyRIT 1.1 reads a naive date/time as UTC.
        return value if value.tzinfo else value.replace(tzinfo=UTC)

    def _enum(self, where: str, value: Any, allowed: tuple[str, ...]) -> str | None:
        if value is None:
            return None
        if isinstance(value, str) and value in allowed:
            return value
        self.problem(where, f"unknown value {value!r} (expected one of: {', '.join(allowed)})")
        return None

    # -- the load -----------------------------------------------------------------------------

    def load(self, data: dict[str, Any]) -> LoadedDataset:
        for key in sorted(set(data) - DATASET_KEYS, key=str):
            self.problem(str(key), "unknown dataset key")
        raw_seeds = data.get("seeds")
        if not raw_seeds:
            self.problem("seeds", "SeedDataset cannot be empty")
            raise DatasetLoadError(self.source_name, self.problems)
        if not isinstance(raw_seeds, list):
            self.problem("seeds", "must be a list")
            raise DatasetLoadError(self.source_name, self.problems)

        self.rendered = self._render_all(raw_seeds)
        ds = LoadedDataset(
            source_name=self.source_name,
            dataset_name=self._str("dataset_name", data.get("dataset_name")),
            name=self._str("name", data.get("name")),
            description=self._str("description", data.get("description")),
            source=self._str("source", data.get("source")),
            added_by=self._str("added_by", data.get("added_by")),
            data_type=self._enum("data_type", data.get("data_type", "text"), PROMPT_DATA_TYPES),
            seed_type=self._enum("seed_type", data.get("seed_type"), SEED_TYPES),
            harm_categories=self._str_list("harm_categories", data.get("harm_categories")),
            authors=self._str_list("authors", data.get("authors")) or [],
            groups=self._str_list("groups", data.get("groups")) or [],
            date_added=self._datetime("date_added", data.get("date_added")),
            seeds=[],
            seed_groups=[],
        )
        alias_ids: dict[str, uuid.UUID] = {}
        for index, raw in enumerate(raw_seeds):
            seed = self._seed(ds, index, raw, alias_ids)
            if seed is not None:
                ds.seeds.append(seed)
        if not self.problems:
            ds.seed_groups = self._groups(ds.seeds)
        if self.problems:
            raise DatasetLoadError(self.source_name, self.problems)
        return ds

    def _render_all(self, raw_seeds: list[Any]) -> dict[str, RenderResult]:
        """Render every templated value of the file at once: one bounded child per file."""
        texts: list[str] = []
        for raw in raw_seeds:
            if isinstance(raw, dict):
                for key in ("value", *_PATH_KEYS):
                    value = raw.get(key)
                    if isinstance(value, str) and has_markup(value):
                        texts.append(value)
        unique = list(dict.fromkeys(texts))
        return dict(zip(unique, render_silent_many(unique, **self.path_vars), strict=True))

    def _render(self, where: str, value: str) -> str | None:
        """A value rendered silently with the path variables; a problem reported if it fails."""
        result = self.rendered.get(value)
        if result is None:
            [result] = render_silent_many([value], **self.path_vars)  # no markup: no child
        if isinstance(result, Exception):
            self.problem(where, str(result))
            return None
        return result

    def _seed(
        self, ds: LoadedDataset, index: int, raw: Any, alias_ids: dict[str, uuid.UUID]
    ) -> LoadedSeed | None:
        where = f"seeds[{index}]"
        if not isinstance(raw, dict):
            self.problem(where, "must be a mapping")
            return None
        for key in sorted(set(raw) - SEED_KEYS - {"prompt_group_id"}, key=str):
            self.problem(f"{where}.{key}", "unknown seed key")
        if "prompt_group_id" in raw:
            self.problem(
                f"{where}.prompt_group_id",
                "prompt_group_id should not be set in seed data; use prompt_group_alias",
            )
        seed_type = (
            self._enum(f"{where}.seed_type", raw.get("seed_type", ds.seed_type), SEED_TYPES)
            or "prompt"
        )
        alias = self._str(f"{where}.prompt_group_alias", raw.get("prompt_group_alias"))
        group_id = alias_ids.setdefault(alias, uuid.uuid4()) if alias else uuid.uuid4()

        seed = LoadedSeed(
            index=index,
            seed_type=seed_type,
            value="",
            data_type="text",
            prompt_group_id=group_id,
            prompt_group_alias=alias,
            value_sha256=self._str(f"{where}.value_sha256", raw.get("value_sha256")),
            name=self._str(f"{where}.name", raw.get("name")) or ds.name,
            dataset_name=(
                self._str(f"{where}.dataset_name", raw.get("dataset_name"))
                or ds.dataset_name
                or ds.name
            ),
            description=self._str(f"{where}.description", raw.get("description")) or ds.description,
            source=self._str(f"{where}.source", raw.get("source")) or ds.source,
            added_by=self._str(f"{where}.added_by", raw.get("added_by", ds.added_by)),
            date_added=self._datetime(f"{where}.date_added", raw.get("date_added", ds.date_added)),
            is_general_technique=self._bool(
                f"{where}.is_general_technique", raw.get("is_general_technique", False)
            ),
        )
        for key in _MERGED_LIST_FIELDS:
            own = self._str_list(f"{where}.{key}", raw.get(key))
            inherited = getattr(ds, key)
            setattr(seed, key, combine_list(inherited, own))
        metadata = raw.get("metadata") or {}
        if not isinstance(metadata, dict):
            self.problem(f"{where}.metadata", "must be a mapping")
        elif problem := rules.check_json_value(metadata, f"{where}.metadata"):
            self.problem("", problem)
        else:
            seed.metadata = metadata

        if seed_type == "simulated_conversation":
            self._simulated(seed, raw, where)
        else:
            value = raw.get("value")
            if not isinstance(value, str):
                self.problem(f"{where}.value", "is required and must be a string")
                return None
            rendered = self._render(f"{where}.value", value)
            if rendered is None:
                return None
            seed.value = rendered
        if seed_type == "prompt":
            self._prompt(ds, seed, raw, where)
        elif seed.is_general_technique and seed_type == "objective":
            self.problem(
                f"{where}.is_general_technique",
                "an objective cannot be a general technique",
            )
        self._hash(seed, where)
        return seed

    def _prompt(self, ds: LoadedDataset, seed: LoadedSeed, raw: dict[str, Any], where: str) -> None:
        data_type = self._enum(
            f"{where}.data_type", raw.get("data_type") or ds.data_type, PROMPT_DATA_TYPES
        )
        role = raw.get("role", "user")
        seed.role = self._enum(f"{where}.role", role, CHAT_MESSAGE_ROLES)
        seed.sequence = self._int(f"{where}.sequence", raw.get("sequence", 0))
        seed.parameters = self._str_list(f"{where}.parameters", raw.get("parameters")) or []
        schema = raw.get("response_json_schema")
        if schema is not None and not isinstance(schema, dict):
            self.problem(f"{where}.response_json_schema", "must be a mapping")
        else:
            seed.response_json_schema = schema
        if data_type is None:
            # PyRIT infers the type from an existing file's extension, else text (4.3).
            data_type = self._infer_data_type(seed.value, where)
        seed.data_type = data_type or "text"

    def _simulated(self, seed: LoadedSeed, raw: dict[str, Any], where: str) -> None:
        seed.is_general_technique = bool(raw.get("is_general_technique", True))
        seed.num_turns = self._int(f"{where}.num_turns", raw.get("num_turns", 3))
        seed.sequence = 0  # PyRIT's dict path does not forward `sequence` (rule 6)
        adversarial = raw.get("adversarial_chat_system_prompt_path")
        if adversarial is None:
            self.problem(f"{where}.adversarial_chat_system_prompt_path", "is required")
        paths = {}
        for key in _PATH_KEYS:
            given = self._str(f"{where}.{key}", raw.get(key))
            paths[key] = self._render(f"{where}.{key}", given) if given else None
        seed.adversarial_chat_system_prompt_path = paths["adversarial_chat_system_prompt_path"]
        seed.simulated_target_system_prompt_path = paths[
            "simulated_target_system_prompt_path"
        ] or str(PurePosixPath(self.path_vars["simulated_target_path"]) / "compliant.yaml")
        seed.next_message_system_prompt_path = paths["next_message_system_prompt_path"]
        seed.pyrit_version = self._str(f"{where}.pyrit_version", raw.get("pyrit_version"))
        if seed.num_turns is not None and seed.num_turns <= 0:
            self.problem(f"{where}.num_turns", "num_turns must be a positive integer")
        seed.value = simulated_value(seed)

    def _infer_data_type(self, value: str, where: str) -> str | None:
        path = self._local_file(value)
        if path is None:
            return "text"
        ext = path.suffix.lstrip(".").lower()
        for data_type, extensions in _MEDIA_EXTENSIONS.items():
            if ext in extensions:
                return data_type
        self.problem(f"{where}.value", f"unable to infer data_type from file extension: {ext}")
        return None

    def _local_file(self, value: str, where: str | None = None) -> Path | None:
        """The file a media value names, searched as the module docstring says (disk only).

        Reads stay inside the import's folder (`search_root`, else the file's folder), symlinks
        resolved. With `where`, an absolute path or one that leads outside is reported there.
        """
        if self.base_dir is None or not value or "\n" in value or "\x00" in value:
            return None
        if len(value) > 4096:
            return None
        root = (self.search_root or self.base_dir).resolve()
        candidates: list[Path] = []
        marker = self.datasets_path.rstrip("/") + "/seed_datasets/local/"
        as_path = Path(value)
        # A relative path that climbs out (`../secret`) is refused whether or not it exists.
        climbs_out = False
        if value.startswith(marker):
            rel = value[len(marker) :]
            climbs_out = not self._inside(self.base_dir / rel, root)
            candidates.append(as_path)
            folders = [self.base_dir, *self.base_dir.parents]
            if self.search_root is None:
                folders = folders[: 1 + MAX_PARENT_LEVELS]
            for folder in folders:
                candidates.append(folder / rel)
                if folder == self.search_root:
                    break
        elif as_path.is_absolute():
            if where is not None:
                self.problem(
                    f"{where}.value",
                    "absolute media paths are refused; name the file relative to the "
                    "dataset file (or as {{ datasets_path }}/seed_datasets/local/...)",
                )
            return None
        else:
            candidates.append(self.base_dir / as_path)
            climbs_out = not self._inside(self.base_dir / as_path, root)
        outside = climbs_out
        for candidate in candidates if not climbs_out else []:
            try:
                if not candidate.is_file():
                    continue
                resolved = candidate.resolve()
            except (OSError, RuntimeError):
                continue
            if resolved.is_relative_to(root):
                return resolved
            outside = True
        if where is not None and outside:
            self.problem(
                f"{where}.value",
                f"media path leads outside the import folder {str(root)!r}; "
                "only files inside it (or inside --root) are read",
            )
        return None

    @staticmethod
    def _inside(path: Path, root: Path) -> bool:
        """True when `path` (a relative media path joined to its folder) stays inside `root`."""
        try:
            return path.resolve().is_relative_to(root)
        except (OSError, RuntimeError):
            return False

    def _hash(self, seed: LoadedSeed, where: str) -> None:
        """PyRIT's value_sha256: the string for text, the file bytes for media (2.4)."""
        computed = rules.value_sha256_for(seed.data_type, seed.value)
        if computed is not None:
            seed.value_sha256 = computed
            return
        problems_before = len(self.problems)
        path = self._local_file(seed.value, where)
        if len(self.problems) > problems_before:
            return
        if path is None:
            # Left for the caller: uploaded files, or a stored blob named by value_sha256.
            return
        try:
            size = path.stat().st_size
            if size > self.max_media_bytes:
                self.problem(f"{where}.value", f"media file larger than {self.max_media_bytes} B")
                return
            seed.value_sha256 = rules.bytes_sha256(path.read_bytes())
        except OSError as exc:
            self.problem(f"{where}.value", f"cannot read media file: {exc}")
            return
        seed.media_path = path
        seed.value = str(path)

    def _groups(self, seeds: list[LoadedSeed]) -> list[LoadedGroup]:
        by_id: dict[uuid.UUID, LoadedGroup] = {}
        for seed in seeds:
            group = by_id.get(seed.prompt_group_id)
            if group is None:
                group = by_id[seed.prompt_group_id] = LoadedGroup(
                    seed.prompt_group_id, seed.prompt_group_alias, []
                )
            group.seeds.append(seed)
        for group in by_id.values():
            for error in rules.group_errors(group.seeds):
                at = group.seeds[error.index].index if error.index is not None else None
                label = f"group {group.alias!r}" if group.alias else "group"
                where = f"seeds[{at}]" if at is not None else label
                self.problem(where, f"{label}: {error.message}")
            rules.fill_roles(group.seeds)
            group.seeds = rules.canonical_order(group.seeds)
        return list(by_id.values())


def simulated_value(seed: LoadedSeed | Any) -> str:
    """A SeedSimulatedConversation's value: compact sorted JSON of its configuration."""
    config = {
        "num_turns": seed.num_turns,
        "sequence": seed.sequence or 0,
        "adversarial_chat_system_prompt_path": seed.adversarial_chat_system_prompt_path,
        "simulated_target_system_prompt_path": seed.simulated_target_system_prompt_path,
        "next_message_system_prompt_path": seed.next_message_system_prompt_path or None,
        "pyrit_version": seed.pyrit_version,
    }
    return json.dumps(config, sort_keys=True, separators=(",", ":"))


def media_file_name(value: str) -> str:
    """The file name a media value ends with (for matching uploaded files)."""
    return PurePosixPath(value.replace("\\", "/")).name
