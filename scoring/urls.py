"""Review pages of the scoring app: conversation review, attack results, queue, dashboard."""

from __future__ import annotations

from django.urls import path, re_path

import redteam.common.idpath  # noqa: F401  (registers the storedid and sha256 converters)
from scoring import (
    adjudication_views,
    calibration_views,
    human_label_views,
    live,
    my_verdicts,
    queue_admin_views,
    queue_views,
    views,
)

app_name = "scoring"

urlpatterns = [
    path(
        "conversations/<storedid:conversation_id>/",
        views.conversation_detail,
        name="conversation_detail",
    ),
    path(
        "conversations/<storedid:conversation_id>/reveal/",
        views.reveal_piece,
        name="reveal_piece",
    ),
    path("attack-results/", views.attack_result_list, name="attack_result_list"),
    # The list's verdict-backed results as PyRIT's human-labeled CSV.
    path(
        "attack-results/human-labels.csv",
        human_label_views.human_labels,
        name="human_labels",
    ),
    path(
        "attack-results/<uuid:attack_result_id>/",
        views.attack_result_detail,
        name="attack_result_detail",
    ),
    path(
        "attack-results/<uuid:attack_result_id>/verdict/",
        views.verdict,
        name="verdict",
    ),
    path("objectives/<sha256:objective_sha256>/", views.objective_detail, name="objective_detail"),
    path("review/", queue_views.review_queue, name="review_queue"),
    # My recent verdicts (before any "review/<slug>/" route: "mine" is no queue's slug).
    path("review/mine/", my_verdicts.my_verdicts, name="my_verdicts"),
    path(
        "review/mine/<uuid:submission>/edit/",
        my_verdicts.edit_verdict,
        name="edit_verdict",
    ),
    path(
        "review/mine/<uuid:submission>/undo/",
        my_verdicts.undo_verdict,
        name="undo_verdict",
    ),
    # Blind double review: disputed results, deciding one, the reviewers' agreement.
    path(
        "review/adjudication/",
        adjudication_views.adjudication_queue,
        name="adjudication_queue",
    ),
    path(
        "review/adjudication/<uuid:attack_result_id>/",
        adjudication_views.adjudication_item,
        name="adjudication_item",
    ),
    path("review/reviewers/", adjudication_views.reviewers, name="reviewers"),
    # Save the results list's filter as a queue.
    path("review/queues/new/", queue_admin_views.save_queue, name="save_queue"),
    path("review/<slug:slug>/", queue_views.queue_detail, name="queue_detail"),
    re_path(
        r"^review/(?P<slug>[-a-zA-Z0-9_]+)/(?P<direction>next|previous)/$",
        queue_views.queue_step,
        name="queue_step",
    ),
    path(
        "review/<slug:slug>/skip/<uuid:attack_result_id>/",
        queue_views.queue_skip,
        name="queue_skip",
    ),
    path("dashboard/", views.dashboard, name="dashboard"),
    # Live pages (scoring/live.py): has anything arrived since the page was rendered?
    path(
        "live/conversations/<storedid:conversation_id>/",
        live.live_conversation,
        name="live_conversation",
    ),
    path("live/review/<slug:slug>/", live.live_queue, name="live_queue"),
    path("live/dashboard/", live.live_dashboard, name="live_dashboard"),
    path("scorers/", calibration_views.scorer_list, name="scorer_list"),
    path("scorers/<sha256:eval_hash>/", calibration_views.scorer_detail, name="scorer_detail"),
]
