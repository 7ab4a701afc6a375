"""Who may see and do what: the one place access to ingested data is decided.

Every ingested row belongs to one operation (an engagement). A caller's `Scope` lists the
operations it may read and its role in each:

- a browser user: their memberships (OperationMembership); a superuser: every operation;
- an API key: the key's operations that its user may still read (revoking the user's
  membership revokes the key's access too); a superuser's key: the key's operations;
- a management command: `Scope.everything()`, narrowed by its `--operation` options.

Views never filter by hand: every scoped model's manager has `visible_to(scope)` (memory's
models define what "in an operation" means for each, see `ScopedQuerySet`), and
`scope_for(request)` gives the request's scope. A row outside the scope is a 404, never a
403 that would confirm it exists.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar

from django.db import connections, models, router
from django.db.models import Q

from redteam.common.dbutil import from_db, quoted_column
from redteam.common.models import (
    ApiKey,
    Operation,
    OperationMembership,
    OperationRole,
)
from redteam.common.typing import User

if TYPE_CHECKING:
    from django.http import HttpRequest

# Each role includes every right of the roles before it.
ROLE_RANK: dict[str, int] = {
    OperationRole.READ_ONLY: 0,
    OperationRole.REVIEWER: 1,
    OperationRole.ADJUDICATOR: 2,
    OperationRole.LEAD: 3,
}
_SCOPE_ATTR = "_redteam_scope"

M = TypeVar("M", bound=models.Model)


@dataclass(frozen=True)
class Scope:
    """The operations a caller may read, with the caller's role in each.

    `everything` is for superusers and trusted commands: every operation, as lead.
    """

    roles: Mapping[int, str] = field(default_factory=dict)
    archived: frozenset[int] = frozenset()
    everything: bool = False
    # The account reading (a session's user, an API key's owner; None for commands): blind
    # double review shows a reviewer other humans' pending verdicts only once they recorded
    # their own (memory.models.ScoreQuerySet.visible_to).
    viewer_id: int | None = None

    @classmethod
    def everything_scope(cls) -> Scope:
        """Every operation (superusers, management commands)."""
        return cls(everything=True)

    @classmethod
    def nothing(cls) -> Scope:
        """No operation (anonymous callers, accounts without a membership)."""
        return cls()

    @property
    def operation_ids(self) -> frozenset[int]:
        """The readable operations' ids (meaningless when `everything`)."""
        return frozenset(self.roles)

    @property
    def any(self) -> bool:
        """True when the caller may read at least one operation (or all)."""
        return self.everything or bool(self.roles)

    def role(self, operation_id: int | None) -> str | None:
        """The caller's role in an operation, None when it may not read it."""
        if self.everything:
            return OperationRole.LEAD
        return self.roles.get(operation_id) if operation_id is not None else None

    def may_read(self, operation_id: int | None) -> bool:
        """True when rows of this operation are visible."""
        return self.everything or (operation_id is not None and operation_id in self.roles)

    def _at_least(self, operation_id: int | None, role: str) -> bool:
        held = self.role(operation_id)
        if held is None or operation_id in self.archived:
            return False
        return ROLE_RANK[held] >= ROLE_RANK[role]

    def may_record_verdicts(self, operation_id: int | None) -> bool:
        """Reviewers, adjudicators and leads of a live (not archived) operation."""
        return self._at_least(operation_id, OperationRole.REVIEWER)

    def may_adjudicate(self, operation_id: int | None) -> bool:
        """Adjudicators and leads of a live operation."""
        return self._at_least(operation_id, OperationRole.ADJUDICATOR)

    def is_lead(self, operation_id: int | None) -> bool:
        """Leads (and superusers) of an operation, archived or not."""
        held = self.role(operation_id)
        return held is not None and ROLE_RANK[held] >= ROLE_RANK[OperationRole.LEAD]

    def verdict_operation_ids(self) -> frozenset[int] | None:
        """Operations where the caller may record verdicts (None: every live one)."""
        if self.everything:
            return None
        return frozenset(
            op
            for op, role in self.roles.items()
            if op not in self.archived and ROLE_RANK[role] >= ROLE_RANK[OperationRole.REVIEWER]
        )

    def records_any_verdicts(self) -> bool:
        """True when the caller may record verdicts in at least one operation."""
        allowed = self.verdict_operation_ids()
        return allowed is None or bool(allowed)

    def q(self, path: str) -> Q:
        """A filter keeping rows whose operation (reached by `path`) is readable."""
        if self.everything:
            return Q()
        return Q(**{f"{path}__in": sorted(self.roles)})

    def operations(self) -> models.QuerySet[Operation]:
        """The readable Operation rows, by name."""
        if self.everything:
            return Operation.objects.all()
        return Operation.objects.filter(pk__in=sorted(self.roles))


def _membership_select(alias: str, *, key: str | None, user: str) -> str:
    """A user's memberships with their operations' archived flag (columns: operation, role,
    archived), only those in a key's operations when `key` is given; `key` and `user` are SQL
    for the key's and the user's ids (a parameter, or a column of an outer query)."""
    quote = connections[alias].ops.quote_name

    def col(model: type[models.Model], name: str) -> str:
        return quoted_column(model, name, alias)

    operation = col(OperationMembership, "operation")
    sql = (
        f"SELECT m.{operation} AS operation, m.{col(OperationMembership, 'role')} AS role, "
        f"o.{col(Operation, 'archived')} AS archived "
        f"FROM {quote(OperationMembership._meta.db_table)} m "
        f"JOIN {quote(Operation._meta.db_table)} o ON o.{col(Operation, 'id')} = m.{operation}"
    )
    if key is not None:
        through = ApiKey.operations.through
        sql += (
            f" JOIN {quote(through._meta.db_table)} ko ON ko.{col(through, 'operation')} = "
            f"m.{operation} AND ko.{col(through, 'apikey')} = {key}"
        )
    return sql + f" WHERE m.{col(OperationMembership, 'user')} = {user}"


@functools.cache
def _membership_sql(alias: str, *, by_key: bool) -> str:
    """_membership_scope's statement for database `alias` (built once per process; its
    parameters: [key,] user)."""
    return _membership_select(alias, key="%s" if by_key else None, user="%s")


def _key_operations_select(alias: str, *, key: str) -> str:
    """A key's operations as a superuser's key sees them (columns: operation, role, archived):
    every one of them as lead, membership or not; `key` is SQL for the key's id."""
    quote = connections[alias].ops.quote_name
    through = ApiKey.operations.through
    operation = quoted_column(through, "operation", alias)
    return (
        f"SELECT ko.{operation} AS operation, '{OperationRole.LEAD.value}' AS role, "
        f"o.{quoted_column(Operation, 'archived', alias)} AS archived "
        f"FROM {quote(through._meta.db_table)} ko "
        f"JOIN {quote(Operation._meta.db_table)} o "
        f"ON o.{quoted_column(Operation, 'id', alias)} = ko.{operation} "
        f"WHERE ko.{quoted_column(through, 'apikey', alias)} = {key}"
    )


def key_memberships_sql(alias: str, key: str, user: str, superuser: str) -> str:
    """A scalar subquery for an outer query over API keys (`key`, `user`, `superuser`: its
    columns of the key's id, its user's id and whether that user is a superuser): the scope
    rows key_scope needs, as JSON text, so the statement that authenticates a key brings them
    along (see attach_key_memberships). A superuser's key reads its operations as lead, as
    _operations_scope does; anyone else's, the memberships its operations grant."""
    rows = (
        f"{_membership_select(alias, key=key, user=user)} AND NOT {superuser} "
        f"UNION ALL {_key_operations_select(alias, key=key)} AND {superuser}"
    )
    if connections[alias].vendor == "postgresql":
        return (
            "(SELECT COALESCE(json_agg(json_build_array(s.operation, s.role, s.archived)), "
            f"'[]')::text FROM ({rows}) s)"
        )
    return f"(SELECT json_group_array(json_array(s.operation, s.role, s.archived)) FROM ({rows}) s)"


# Where attach_key_memberships leaves an authenticated key's memberships for key_scope.
_KEY_MEMBERSHIPS_ATTR = "_redteam_memberships"


def attach_key_memberships(api_key: ApiKey, memberships_json: str) -> None:
    """Keep the memberships key_memberships_sql read with the key, for key_scope (same
    request, same rows it would query)."""
    rows = [
        (int(op), str(role), bool(archived)) for op, role, archived in json.loads(memberships_json)
    ]
    setattr(api_key, _KEY_MEMBERSHIPS_ATTR, rows)


def _membership_scope(user: Any, key: ApiKey | None = None) -> Scope:
    """The user's memberships (only those in `key`'s operations, when given): one query, none
    when the key's authentication brought them (attach_key_memberships).

    Written in SQL because every API request asks it (through key_scope): compiling the ORM's
    join cost the request more than the database spent answering it.
    """
    attached = getattr(key, _KEY_MEMBERSHIPS_ATTR, None) if key is not None else None
    if attached is not None:
        rows: list[tuple[int, str, bool]] = attached
    else:
        alias = router.db_for_read(OperationMembership)
        archived_field = Operation._meta.get_field("archived")
        assert isinstance(archived_field, models.Field)
        sql = _membership_sql(alias, by_key=key is not None)
        params = [user.pk] if key is None else [key.pk, user.pk]
        with connections[alias].cursor() as cursor:
            cursor.execute(sql, params)
            rows = [
                (op_id, role, bool(from_db(archived_field, is_archived, alias)))
                for op_id, role, is_archived in cursor.fetchall()
            ]
    roles: dict[int, str] = {}
    archived: set[int] = set()
    for op_id, role, is_archived in rows:
        roles[op_id] = role
        if is_archived:
            archived.add(op_id)
    return Scope(roles=roles, archived=frozenset(archived), viewer_id=user.pk)


def _operations_scope(operations: models.QuerySet[Operation], viewer_id: int | None) -> Scope:
    """Every one of these operations as lead (a superuser's API key): one query."""
    rows = list(operations.values_list("pk", "archived"))
    return Scope(
        roles={pk: OperationRole.LEAD for pk, _ in rows},
        archived=frozenset(pk for pk, archived in rows if archived),
        viewer_id=viewer_id,
    )


def add_operation_option(parser: Any, help_text: str) -> None:
    """A command's repeatable `--operation NAME` (into `options["operations"]`), which
    `command_scope` reads."""
    parser.add_argument(
        "--operation",
        dest="operations",
        action="append",
        default=[],
        metavar="NAME",
        help=help_text,
    )


def command_scope(operation_names: Iterable[str] = ()) -> Scope:
    """A management command's scope: every operation, or only the named ones (as lead).

    Commands are trusted, so no membership is consulted; naming an operation narrows what
    they read. Raises LookupError naming the operations that do not exist (one query).
    """
    names = sorted({n.strip() for n in operation_names if n.strip()})
    if not names:
        return Scope.everything_scope()
    rows = list(Operation.objects.filter(name__in=names).values_list("name", "pk", "archived"))
    unknown = sorted(set(names) - {name for name, _, _ in rows})
    if unknown:
        raise LookupError(f"no such operation: {', '.join(unknown)}")
    return Scope(
        roles={pk: OperationRole.LEAD for _, pk, _ in rows},
        archived=frozenset(pk for _, pk, archived in rows if archived),
    )


def user_scope(user: User | None) -> Scope:
    """A signed-in user's scope: memberships, or everything for a superuser."""
    if user is None or not user.is_authenticated or not user.is_active:
        return Scope.nothing()
    if user.is_superuser:
        archived = Operation.objects.filter(archived=True).values_list("pk", flat=True)
        return Scope(everything=True, archived=frozenset(archived), viewer_id=user.pk)
    return _membership_scope(user)


def key_scope(api_key: ApiKey) -> Scope:
    """An API key's scope: its operations, as far as its user may still read them (one query:
    the key's operations joined with the user's memberships, or for a superuser's key the
    key's operations; none when the key's authentication brought those rows)."""
    if api_key.user.is_superuser and getattr(api_key, _KEY_MEMBERSHIPS_ATTR, None) is None:
        return _operations_scope(
            Operation.objects.filter(api_keys=api_key), viewer_id=api_key.user.pk
        )
    return _membership_scope(api_key.user, key=api_key)


def scope_for(request: HttpRequest | Any) -> Scope:
    """The scope of a request (browser session or API key), computed once per request."""
    cached = getattr(request, _SCOPE_ATTR, None)
    if isinstance(cached, Scope):
        return cached
    auth = getattr(request, "auth", None)
    user = getattr(request, "user", None)
    scope = key_scope(auth) if isinstance(auth, ApiKey) else user_scope(user)
    # DRF wraps Django's request: cache on the underlying one too, so page helpers that
    # receive either find the same answer.
    setattr(request, _SCOPE_ATTR, scope)
    inner = getattr(request, "_request", None)
    if inner is not None:
        setattr(inner, _SCOPE_ATTR, scope)
    return scope


class ScopedQuerySet(models.QuerySet[M]):
    """A queryset of a model whose rows belong to operations.

    The model names how a row reaches its operation with `scope_path` (e.g. "operation" or
    "conversation__operation"), or overrides `scope_filter` when visibility is derived
    (identifiers and loose content are visible through the rows that use them).
    """

    scope_path: ClassVar[str] = "operation"

    def visible_to(self, scope: Scope) -> Self:
        """Only the rows the scope may read."""
        if scope.everything:
            return self
        if not scope.roles:
            return self.none()
        return self.filter(self.scope_filter(scope))

    def scope_filter(self, scope: Scope) -> Q:
        """The condition for rows of the scope's operations."""
        return scope.q(getattr(self.model, "scope_path", self.scope_path))


class WriteRefused(Exception):
    """An item may not be stored in the operation it names or falls into (per-item error)."""


@dataclass
class Writer:
    """Who is ingesting, and into which operations (one per batch, see ingest_batch).

    - `writable`: the operations items may be stored in (None: any, for trusted callers).
    - `default_name` / `default_id`: where items that name no operation go.
    - `create_missing`: trusted callers (management commands) create the operations labels
      name; API callers may only write into operations that exist and are theirs.
    - `revise`: None, or the sender's stamp for this batch (the API's `?revise=STAMP`, what
      `redteam.client follow` sends): an item whose id is stored with other content is then
      the newer version of a row PyRIT's memory updates in place (an attack result finishing,
      a scenario's run state, a conversation's retries, a piece's labels or metadata) and
      replaces the stored row's changeable fields, unless the stored version carries a larger
      stamp (a request that arrived late: answered unchanged, the newer version kept).
    """

    user: User | None = None
    writable: frozenset[int] | None = None
    default_name: str | None = None
    default_id: int | None = None
    create_missing: bool = False
    revise: int | None = None
    _by_name: dict[str, Operation | None] = field(default_factory=dict)

    @classmethod
    def trusted(cls, user: User | None = None, default: str | None = None) -> Writer:
        """A management command or in-process caller: any operation, created on demand;
        unlabelled items go to `default` (else the `unassigned` operation)."""
        from redteam.core.operations import UNASSIGNED

        return cls(user=user, default_name=default or UNASSIGNED, create_missing=True)

    @classmethod
    def for_request(cls, request: Any, default_name: str | None = None) -> Writer:
        """An API caller: a key writes into its (live) operations, a staff session into its
        memberships (a superuser into any existing operation)."""
        auth = getattr(request, "auth", None)
        user = getattr(request, "user", None)
        scope = scope_for(request)
        writable = (
            None
            if scope.everything
            else frozenset(op for op in scope.roles if op not in scope.archived)
        )
        writer = cls(user=user, writable=writable, default_name=default_name)
        if default_name is None and isinstance(auth, ApiKey) and auth.default_operation_id:
            writer.default_id = auth.default_operation_id
        return writer

    def load(self, names: Iterable[str]) -> None:
        """Look up (trusted: create) the named operations and the default: one query, two
        more the first time a trusted caller names a new operation."""
        wanted = {n for n in names if n not in self._by_name}
        if self.default_name is not None and self.default_name not in self._by_name:
            wanted.add(self.default_name)
        if not wanted:
            return
        found = {op.name: op for op in Operation.objects.filter(name__in=sorted(wanted))}
        missing = sorted(wanted - set(found))
        if missing and self.create_missing:
            # One by one (rare: the first time a trusted import names an operation), so the
            # creation is saved like any other (signals, audit).
            for name in missing:
                found[name] = Operation.objects.get_or_create(name=name)[0]
        for name in wanted:
            self._by_name[name] = found.get(name)

    def supersedes(self, stored_revision: int | None) -> bool:
        """True when this batch's version of a row may replace one stored with that stamp."""
        return self.revise is not None and (
            stored_revision is None or self.revise >= stored_revision
        )

    def may_write(self, operation_id: int | None) -> bool:
        """True when items may be stored in (or added to rows of) this operation."""
        if operation_id is None:
            return False
        return self.writable is None or operation_id in self.writable

    def named(self, name: str) -> int:
        """The id of the operation a label names, if this writer may write there."""
        self.load([name])
        op = self._by_name.get(name)
        if op is None or (self.writable is not None and op.pk not in self.writable):
            raise WriteRefused(f"names operation {name!r}, which this sender may not write to")
        if op.archived:
            raise WriteRefused(f"names operation {name!r}, which is archived")
        return op.pk

    def default(self) -> int:
        """The id of the operation unlabelled items go to."""
        if self.default_id is not None:
            if not self.may_write(self.default_id):
                raise WriteRefused("the sender's default operation is archived or not writable")
            return self.default_id
        if self.default_name is not None:
            self.default_id = self.named(self.default_name)
            return self.default_id
        raise WriteRefused(
            "names no operation: label it with `operation`, or send it with a key bound to a "
            "default operation (or ?operation=NAME)"
        )
