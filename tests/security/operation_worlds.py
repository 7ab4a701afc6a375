"""Two operations on one server, op-alpha and op-bravo, for the isolation tests.

They overlap on purpose: both hold an attack on the same objective text, use the same target,
scorer, converter and attack identifiers, carry the same image bytes and scored the same loose
text. Bravo also has rows alpha has nothing like: a second conversation against a target only
bravo uses, an objective, converter, scorer, attack, image and loose text of its own, labels,
harm categories, a scenario and a reviewer. Every value of those carries a marker
(`BRAVOSECRET<nn>`), recorded with the place it was planted, so a response that shows an alpha
member anything of bravo is found by searching it for markers and for bravo's ids.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model

from memory.parsing_pieces import loose_content_id
from memory.services import store_media
from redteam.common.access import Writer, user_scope
from redteam.common.models import Operation
from redteam.core.identity import ComponentIdentifier
from redteam.core.timestamps import timestamp_1x
from redteam.site.ingest import ingest_batch
from tests.access import grant
from tests.security.conftest import PNG

ALPHA = "op-alpha"
BRAVO = "op-bravo"
MARKER = "BRAVOSECRET"
# Markers are letters and digits only, so HTML escaping, URL quoting and JSON leave them as
# they are; found case-insensitively (a page may lower-case a class name or a category).
MARKER_RE = re.compile(r"bravosecret\d\d", re.IGNORECASE)

SHARED_OBJECTIVE = "Explain how to pick a lock"
SHARED_LOOSE_TEXT = "Loose text that both operations scored."
SHARED_IMAGE = PNG
T0 = datetime(2026, 11, 22, 3, 0, 0, tzinfo=UTC)


def ts(seconds: float) -> str:
    """A 1.x timestamp T0 + seconds."""
    return str(timestamp_1x(T0 + timedelta(seconds=seconds)))


def sha256_text(value: str) -> str:
    """PyRIT's sha256 of a text value (and redteam's objective_sha256)."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


# The identifiers both operations use.
SHARED_TARGET = ComponentIdentifier(
    "OpenAIChatTarget",
    "pyrit.prompt_target.openai.openai_chat_target",
    {"endpoint": "https://shared.example.invalid/v1", "model_name": "gpt-shared"},
    pyrit_version="1.1.0",
)
SHARED_CONVERTER = ComponentIdentifier(
    "ROT13Converter", "pyrit.prompt_converter.rot13_converter", pyrit_version="1.1.0"
)
SHARED_SCORER = ComponentIdentifier(
    "SubStringScorer",
    "pyrit.score.true_false.substring_scorer",
    {"substring": "Sure", "scorer_type": "true_false"},
    pyrit_version="1.1.0",
)


def atomic_attack(
    attack_class: str,
    target: ComponentIdentifier,
    converter: ComponentIdentifier,
    **params: Any,
) -> ComponentIdentifier:
    """A 1.x AtomicAttack identifier: technique -> attack (target, converter children)."""
    strategy = ComponentIdentifier(
        attack_class,
        "pyrit.executor.attack",
        params,
        {"objective_target": target, "request_converters": [converter]},
    )
    technique = ComponentIdentifier(
        "AttackTechnique", "pyrit.scenario.core.attack_technique", children={"attack": strategy}
    )
    return ComponentIdentifier(
        "AtomicAttack",
        "pyrit.scenario.core.atomic_attack",
        children={"attack_technique": technique, "seed_identifiers": []},
        pyrit_version="1.1.0",
    )


SHARED_ATTACK = atomic_attack("PromptSendingAttack", SHARED_TARGET, SHARED_CONVERTER)


@dataclass
class Planted:
    """The markers planted in bravo's rows: marker -> where it was planted."""

    places: dict[str, str] = field(default_factory=dict)

    def plant(self, where: str) -> str:
        """A new marker for one place."""
        marker = f"{MARKER}{len(self.places) + 1:02d}"
        self.places[marker] = where
        return marker

    def describe(self, marker: str) -> str:
        """The marker and where it was planted."""
        return f"{marker.upper()} ({self.places.get(marker.upper(), 'unknown place')})"


@dataclass
class OperationData:
    """One operation's ingest payload and the ids of what it holds (known before ingest)."""

    name: str
    payload: dict[str, list[dict[str, Any]]]
    conversation_ids: list[str] = field(default_factory=list)
    attack_result_ids: list[str] = field(default_factory=list)
    piece_ids: list[str] = field(default_factory=list)
    score_ids: list[str] = field(default_factory=list)
    scenario_ids: list[str] = field(default_factory=list)
    content_ids: list[str] = field(default_factory=list)
    objective_sha256s: list[str] = field(default_factory=list)
    # Identifiers (every node of every tree) only this operation uses.
    own_identifiers: list[ComponentIdentifier] = field(default_factory=list)
    media: dict[str, tuple[bytes, str]] = field(default_factory=dict)  # sha256 -> bytes, name
    # A bravo image piece PyRIT left without a sha256 (an upload names it by id).
    unlinked_image_piece: str | None = None
    # Filter values that would select this operation's own rows (for the bravo list probes).
    filter_values: dict[str, list[str]] = field(default_factory=dict)
    # The human verdict recorded on the main result: reviewer's username, rationale.
    reviewer_name: str = ""
    verdict_rationale: str = ""

    @property
    def main_conversation(self) -> str:
        """The conversation of the attack on the shared objective."""
        return self.conversation_ids[0]

    @property
    def main_result(self) -> str:
        """The attack result on the shared objective."""
        return self.attack_result_ids[0]


def _nodes(identifier: ComponentIdentifier) -> list[ComponentIdentifier]:
    """The identifier and every node below it."""
    found = [identifier]
    for child in identifier.children.values():
        for item in child if isinstance(child, list) else [child]:
            found.extend(_nodes(item))
    return found


def piece_dict(
    conversation_id: str,
    sequence: int,
    role: str,
    value: str,
    *,
    seconds: float,
    data_type: str = "text",
    sha256: str | None = None,
    converted: str | None = None,
    converters: tuple[ComponentIdentifier, ...] = (),
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A 1.x MessagePiece.model_dump(mode="json")."""
    piece_id = str(uuid.uuid4())
    text_sha = sha256_text(value) if data_type == "text" else sha256
    converted_value = converted if converted is not None else value
    return {
        "id": piece_id,
        "role": role,
        "conversation_id": conversation_id,
        "sequence": sequence,
        "timestamp": ts(seconds),
        "original_value": value,
        "original_value_data_type": data_type,
        "original_value_sha256": text_sha,
        "converted_value": converted_value,
        "converted_value_data_type": data_type,
        "converted_value_sha256": sha256_text(converted_value) if data_type == "text" else sha256,
        "response_error": "none",
        "original_prompt_id": piece_id,
        "prompt_metadata": metadata or {},
        "converter_identifiers": [c.model_dump() for c in converters],
    }


def score_dict(
    scorer: ComponentIdentifier,
    rationale: str,
    categories: list[str],
    objective: str,
    *,
    piece: dict[str, Any] | None = None,
    loose_text: str | None = None,
    value: str = "true",
) -> dict[str, Any]:
    """A 1.x Score.model_dump(mode="json") on a piece or on loose text."""
    scorable: dict[str, Any]
    if piece is not None:
        scorable = {"scorable_type": "message", "message_piece_ids": [piece["id"]]}
    else:
        scorable = {"scorable_type": "content", "value": loose_text, "data_type": "text"}
    return {
        "id": str(uuid.uuid4()),
        "score_value": value,
        "status": "complete",
        "score_value_description": "",
        "score_type": "true_false",
        "score_category": categories,
        "score_rationale": rationale,
        "score_metadata": {},
        "scorer_class_identifier": scorer.model_dump(),
        "message_piece_id": piece["id"] if piece is not None else None,
        "scorable": scorable,
        "timestamp": ts(30),
        "objective": objective,
    }


def attack_result_dict(
    conversation_id: str,
    objective: str,
    attack: ComponentIdentifier,
    labels: dict[str, str],
    harm: list[str],
    *,
    outcome: str,
    related: list[dict[str, Any]] | None = None,
    scenario_id: str | None = None,
    collection: str | None = None,
) -> dict[str, Any]:
    """A 1.x AttackResult.model_dump(mode="json")."""
    return {
        "conversation_id": conversation_id,
        "objective": objective,
        "attack_result_id": str(uuid.uuid4()),
        "atomic_attack_identifier": attack.model_dump(),
        "last_response": None,
        "last_score": None,
        "executed_turns": 1,
        "execution_time_ms": 10,
        "outcome": outcome,
        "outcome_reason": None,
        "timestamp": ts(40),
        "related_conversations": related or [],
        "metadata": {},
        "labels": labels,
        "targeted_harm_categories": harm,
        "error_message": None,
        "error_type": None,
        "error_traceback": None,
        "retry_events": [],
        "total_retries": 0,
        "attribution_parent_id": scenario_id,
        "attribution_data": {"parent_collection": collection} if collection else None,
    }


def _legacy_piece(
    conversation_id: str, value: str, labels: dict[str, str], harm: list[str]
) -> dict[str, Any]:
    """A 0.13 MessagePiece.to_dict() (0.13 pieces carry their own labels)."""
    piece_id = str(uuid.uuid4())
    return {
        "id": piece_id,
        "role": "user",
        "conversation_id": conversation_id,
        "sequence": 0,
        "timestamp": (T0 + timedelta(seconds=50)).isoformat(),
        "labels": labels,
        "targeted_harm_categories": harm,
        "prompt_metadata": {},
        "converter_identifiers": [],
        "prompt_target_identifier": None,
        "attack_identifier": None,
        "scorer_identifier": None,
        "original_value_data_type": "text",
        "original_value": value,
        "original_value_sha256": None,
        "converted_value_data_type": "text",
        "converted_value": value,
        "converted_value_sha256": None,
        "response_error": "none",
        "originator": "undefined",
        "original_prompt_id": piece_id,
        "scores": [],
    }


def scenario_identifier(name: str, target: ComponentIdentifier) -> ComponentIdentifier:
    """A scenario's identifier (its class name is the scenario's name)."""
    return ComponentIdentifier(
        name,
        "pyrit.scenario.scenarios.encoding",
        {"version": 2, "max_concurrency": 2},
        {"objective_target": target, "objective_scorer": SHARED_SCORER},
        pyrit_version="1.1.0",
    )


def _scenario(
    identifier: ComponentIdentifier,
    description: str,
    labels: dict[str, str],
    collection: str,
    display_group: str,
    results: list[dict[str, Any]],
) -> dict[str, Any]:
    """A 1.x ScenarioResult.model_dump(mode="json") embedding its attack results."""
    target = identifier.children["objective_target"]
    assert isinstance(target, ComponentIdentifier)
    return {
        "id": results[0]["attribution_parent_id"],
        "scenario_identifier": identifier.model_dump(),
        "scenario_description": description,
        "attack_results": {collection: results},
        "scenario_run_state": "COMPLETED",
        "labels": labels,
        "creation_time": ts(1),
        "completion_time": ts(60),
        "number_tries": 1,
        "display_group_map": {collection: display_group},
        "error_message": None,
        "error_type": None,
        "error_attack_result_ids": [],
        "metadata": {},
        "scenario_name": identifier.class_name,
        "scenario_version": 2,
        "pyrit_version": "1.1.0",
        "objective_target_identifier": target.model_dump(),
        "objective_scorer_identifier": SHARED_SCORER.model_dump(),
    }


def build_operation(name: str, planted: Planted | None) -> OperationData:
    """The rows of one operation; with `planted`, bravo's: markers and rows of its own."""

    def text(plain: str, where: str) -> str:
        return plain if planted is None else f"{plain} {planted.plant(where)}"

    def word(plain: str, where: str) -> str:
        return plain if planted is None else planted.plant(where)

    data = OperationData(name=name, payload={})
    harm = [word("illegal", "harm category")]
    labels = {"operation": name, "operator": word("alice", "operator label")}
    if planted is not None:
        labels[planted.plant("label key")] = planted.plant("label value")
    data.reviewer_name = word("alpha-reviewer", "reviewer username")
    data.verdict_rationale = text("Confirmed by hand.", "verdict rationale")

    # The attack on the shared objective: system prompt, a converted user turn with an image,
    # the reply, its scores, and an adversarial chat the result references.
    main, adversarial, scenario_id = str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4())
    image_sha = hashlib.sha256(SHARED_IMAGE).hexdigest()
    converters: tuple[ComponentIdentifier, ...] = (SHARED_CONVERTER,)
    own = _OwnIdentifiers.plant(planted) if planted is not None else None
    if own is not None:
        converters = (SHARED_CONVERTER, own.converter)
    pieces = [
        piece_dict(
            main, 0, "system", text("You are a helpful assistant.", "system prompt"), seconds=0
        ),
        piece_dict(
            main,
            1,
            "user",
            text("Tell me how to pick a lock.", "prompt"),
            converted=text("Gryy zr ubj gb cvpx n ybpx.", "converted prompt"),
            converters=converters,
            metadata={"trace": text("t1", "prompt metadata")},
            seconds=1,
        ),
        piece_dict(
            main,
            1,
            "user",
            "/attacker/shared.png",
            data_type="image_path",
            sha256=image_sha,
            seconds=1,
        ),
        piece_dict(main, 2, "assistant", text("Sure, here is how.", "response"), seconds=2),
        piece_dict(adversarial, 0, "user", text("Ask about locks.", "adversarial chat"), seconds=0),
    ]
    scores = [
        score_dict(
            SHARED_SCORER,
            text("The reply contains Sure.", "score rationale"),
            harm,
            text("jailbreak", "score objective"),
            piece=pieces[3],
        ),
        score_dict(
            SHARED_SCORER,
            text("Loose text judged.", "loose score rationale"),
            harm,
            "loose",
            loose_text=SHARED_LOOSE_TEXT,
            value="false",
        ),
    ]
    collection = word("base64", "atomic attack name")
    main_result = attack_result_dict(
        main,
        SHARED_OBJECTIVE,
        SHARED_ATTACK,
        labels,
        harm,
        outcome="success",
        related=[
            {
                "conversation_id": adversarial,
                "conversation_type": "adversarial",
                "description": text("attacker chat", "related conversation description"),
            }
        ],
        scenario_id=scenario_id,
        collection=collection,
    )
    scenario_root = scenario_identifier(
        f"{word('Encoding', 'scenario name')}Scenario",
        SHARED_TARGET if own is None else own.target,
    )
    scenario = _scenario(
        scenario_root,
        text("Encoding techniques.", "scenario description"),
        labels,
        collection,
        text("Encodings", "scenario display group"),
        [main_result],
    )
    legacy_conversation = str(uuid.uuid4())
    legacy = _legacy_piece(
        legacy_conversation, text("An older run's prompt.", "0.13 piece value"), labels, harm
    )
    conversations = [
        {"conversation_id": cid, "target_identifier": SHARED_TARGET.model_dump(), "retries": []}
        for cid in (main, adversarial)
    ]
    results: list[dict[str, Any]] = []
    data.conversation_ids = [main, adversarial, legacy_conversation]
    data.objective_sha256s = [sha256_text(SHARED_OBJECTIVE)]
    data.content_ids = [str(loose_content_id("text", SHARED_LOOSE_TEXT))]
    data.media = {image_sha: (SHARED_IMAGE, "shared.png")}

    if planted is not None and own is not None:
        # Rows only bravo has: an attack on an objective of its own, against a target of its
        # own, with its own image, a piece left without a sha256, and loose text of its own.
        secret = str(uuid.uuid4())
        own_image = SHARED_IMAGE + planted.plant("image bytes").encode()
        own_image_sha = hashlib.sha256(own_image).hexdigest()
        own_pieces = [
            piece_dict(secret, 0, "user", text("Open the safe.", "own prompt"), seconds=5),
            piece_dict(
                secret,
                0,
                "user",
                f"/attacker/{planted.plant('image path')}.png",
                data_type="image_path",
                sha256=own_image_sha,
                seconds=5,
            ),
            piece_dict(
                secret,
                0,
                "user",
                f"/attacker/{planted.plant('unhashed image path')}.png",
                data_type="image_path",
                seconds=5,
            ),
            piece_dict(secret, 1, "assistant", text("I cannot.", "own response"), seconds=6),
        ]
        data.unlinked_image_piece = own_pieces[2]["id"]
        own_objective = text("Open the vault at", "own objective")
        loose_text = text("Loose text only bravo scored:", "own loose text")
        scores += [
            score_dict(
                own.scorer,
                text("Refused.", "own score rationale"),
                harm,
                own_objective,
                piece=own_pieces[3],
                value="false",
            ),
            score_dict(
                own.scorer,
                text("Judged.", "own loose score rationale"),
                harm,
                "loose",
                loose_text=loose_text,
            ),
        ]
        results.append(
            attack_result_dict(secret, own_objective, own.attack, labels, harm, outcome="failure")
        )
        conversations.append(
            {"conversation_id": secret, "target_identifier": own.target.model_dump(), "retries": []}
        )
        pieces += own_pieces
        data.conversation_ids.append(secret)
        data.objective_sha256s.append(sha256_text(own_objective))
        data.content_ids.append(str(loose_content_id("text", loose_text)))
        data.media[own_image_sha] = (own_image, f"{planted.plant('media file name')}.png")
        shared = {n.hash for root in (SHARED_ATTACK, SHARED_SCORER) for n in _nodes(root)}
        data.own_identifiers = [
            n
            for root in (own.attack, own.scorer, scenario_root)
            for n in _nodes(root)
            if n.hash not in shared
        ]

    data.payload = {
        "conversations": conversations,
        "message_pieces": [*pieces, legacy],
        "scores": scores,
        "attack_results": results,
        "scenario_results": [scenario],
    }
    data.piece_ids = [*(p["id"] for p in pieces), legacy["id"]]
    data.score_ids = [s["id"] for s in scores]
    data.attack_result_ids = [main_result["attack_result_id"]] + [
        r["attack_result_id"] for r in results
    ]
    data.scenario_ids = [scenario_id]
    if own is not None:
        data.filter_values = own.filter_values(data, labels, harm, pieces, scenario_root)
    return data


@dataclass
class _OwnIdentifiers:
    """The identifiers only bravo uses (each with markers in its class name and params)."""

    target: ComponentIdentifier
    converter: ComponentIdentifier
    scorer: ComponentIdentifier
    attack: ComponentIdentifier

    @classmethod
    def plant(cls, planted: Planted) -> _OwnIdentifiers:
        """New identifiers, their names and params marked."""
        target = ComponentIdentifier(
            f"{planted.plant('target class name')}Target",
            "pyrit.prompt_target.openai.openai_chat_target",
            {
                "endpoint": f"https://{planted.plant('target endpoint')}.example.invalid/v1",
                "system_prompt": f"You are {planted.plant('target system prompt')}",
            },
            pyrit_version="1.1.0",
        )
        converter = ComponentIdentifier(
            f"{planted.plant('converter class name')}Converter",
            "pyrit.prompt_converter.custom",
            {"template": planted.plant("converter param")},
            pyrit_version="1.1.0",
        )
        scorer = ComponentIdentifier(
            f"{planted.plant('scorer class name')}Scorer",
            "pyrit.score.custom",
            {"rubric": planted.plant("scorer param"), "scorer_type": "true_false"},
            pyrit_version="1.1.0",
        )
        attack = atomic_attack(
            f"{planted.plant('attack class name')}Attack",
            target,
            converter,
            system_prompt=planted.plant("attack system prompt"),
        )
        return cls(target=target, converter=converter, scorer=scorer, attack=attack)

    def filter_values(
        self,
        data: OperationData,
        labels: dict[str, str],
        harm: list[str],
        pieces: list[dict[str, Any]],
        scenario_root: ComponentIdentifier,
    ) -> dict[str, list[str]]:
        """Values of every list filter that would select bravo's rows."""
        technique = self.attack.children["attack_technique"]
        assert isinstance(technique, ComponentIdentifier)
        attack = technique.children["attack"]
        assert isinstance(attack, ComponentIdentifier)
        own_hashes = [n.hash for n in data.own_identifiers]
        own_prompt = next(p for p in pieces if p["conversation_id"] == data.conversation_ids[-1])
        return {
            "q": [MARKER, MARKER_RE.findall(own_prompt["original_value"])[0], "safe"],
            "operation": [data.name],
            "operator": [labels["operator"]],
            "label": [f"{k}:{v}" for k, v in labels.items()] + [f"operation={data.name}"],
            "target": [self.target.hash, self.target.class_name],
            "attack": [attack.class_name, self.attack.hash],
            "converter": [self.converter.class_name, self.converter.hash],
            "harm_category": harm,
            "score_category": harm,
            "objective": [MARKER, "vault"],
            "objective_sha256": data.objective_sha256s[1:],
            "conversation_id": data.conversation_ids,
            "scenario_result_id": data.scenario_ids,
            "id": data.piece_ids + data.score_ids,
            "original_prompt_id": data.piece_ids,
            "message_piece_id": data.piece_ids,
            "attack_result_id": data.attack_result_ids,
            "converted_value_sha256": [
                p["converted_value_sha256"]
                for p in pieces
                if p["converted_value_sha256"] and MARKER in p["original_value"]
            ],
            "scorer": [self.scorer.hash, self.scorer.class_name, "HumanReviewScorer"],
            "scenario_name": [scenario_root.class_name, MARKER],
            "class_name": [n.class_name for n in data.own_identifiers],
            "class_module": ["pyrit.score.custom", "pyrit.prompt_converter.custom"],
            "eval_hash": own_hashes,
            "hash_prefix": [h[:16] for h in own_hashes],
            "label_key": [k for k in labels if k not in ("operation", "operator")],
        }


def populate(data: OperationData, reviewer: Any) -> None:
    """Ingest an operation's rows (a trusted writer, the operation as default), upload its
    media, and record its reviewer's verdict on the main result."""
    from memory.models import AttackResult
    from scoring.services import record_verdict

    operation, _ = Operation.objects.get_or_create(name=data.name)
    report = ingest_batch(data.payload, writer=Writer.trusted(default=data.name))
    rejected = [o for o in report.outcomes if o.status == "rejected"]
    assert report.errors == 0, rejected[:3]
    for content, filename in data.media.values():
        store_media(content, filename=filename)
    grant(reviewer, operation, "reviewer")
    record_verdict(
        attack_result=AttackResult.objects.get(pk=data.main_result),
        reviewer=reviewer,
        scope=user_scope(reviewer),
        value=True,
        score_type="true_false",
        rationale=data.verdict_rationale,
    )


def make_reviewer(data: OperationData) -> Any:
    """The operation's own reviewer (bravo's is named with a marker)."""
    return get_user_model().objects.create_user(data.reviewer_name)
