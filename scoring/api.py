"""REST API of scorer calibration: GET /api/v1/scorer-metrics/.

One object per scorer configuration (eval hash) of the caller's operations, with PyRIT's
metric field names (scoring.calibration). NaN (an undefined metric, e.g. accuracy over no
responses or a t-statistic of a constant bias) is answered as JSON null.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from redteam.common.access import scope_for
from scoring.calibration import CalibrationFilterError, calibration_query, scorer_calibrations


class ConfusionOut(serializers.Serializer[Any]):
    """The confusion matrix of a true/false scorer against the people's majority."""

    tp = serializers.IntegerField()
    fp = serializers.IntegerField()
    tn = serializers.IntegerField()
    fn = serializers.IntegerField()


class ScorerIdentifierUseOut(serializers.Serializer[Any]):
    """One identifier under the eval hash and the responses it scored that people rated."""

    class_name = serializers.CharField()
    hash = serializers.CharField()
    num_responses = serializers.IntegerField()


class ScorerMetricsOut(serializers.Serializer[Any]):
    """One scorer configuration against human verdicts.

    `metrics` holds PyRIT's ObjectiveScorerMetrics fields (num_responses, num_human_raters,
    num_scorer_trials, accuracy, accuracy_standard_error, f1_score, precision, recall; plus
    cohen_kappa) or HarmScorerMetrics fields (mean_absolute_error, mae_standard_error,
    t_statistic, p_value, krippendorff_alpha_combined, krippendorff_alpha_humans and
    krippendorff_alpha_model when there is more than one rater / trial); null for NaN.
    """

    eval_hash = serializers.CharField()
    scorer_type = serializers.ChoiceField(choices=["true_false", "float_scale"])
    scorer_identifier = serializers.DictField(
        help_text="The most used identifier's flat dump (PyRIT's model_dump), without eval_hash."
    )
    num_responses = serializers.IntegerField()
    num_human_raters = serializers.IntegerField()
    metrics = serializers.DictField(child=serializers.FloatField(allow_null=True))
    confusion = ConfusionOut(required=False, help_text="true_false scorers only.")
    identifiers = ScorerIdentifierUseOut(many=True)


class ScorerMetricsListOut(serializers.Serializer[Any]):
    """Every scorer configuration, by eval hash."""

    results = ScorerMetricsOut(many=True)


def _repeatable(name: str, description: str) -> OpenApiParameter:
    return OpenApiParameter(name, OpenApiTypes.STR, many=True, description=description)


class ScorerMetricsView(APIView):
    """How far each scorer configuration agrees with the human verdicts of the caller's
    operations: one object per eval hash, computed on request."""

    @extend_schema(
        operation_id="scorer_metrics",
        summary="Scorer calibration against human verdicts, per eval hash",
        parameters=[
            OpenApiParameter("eval_hash", OpenApiTypes.STR, description="One eval hash."),
            _repeatable("scorer", "Scorer identifier hash or class name (any of them)."),
            _repeatable("label", "key=value (or key:value) of the scored result; AND across keys."),
            _repeatable("harm_category", "A harm category of the scored result (any)."),
            OpenApiParameter("after", OpenApiTypes.STR, description="Date or ISO datetime."),
            OpenApiParameter("before", OpenApiTypes.STR, description="Date or ISO datetime."),
        ],
        responses=ScorerMetricsListOut,
    )
    def get(self, request: Request) -> Response:
        """Queries: the caller's operations, then the calibration's 7 at any table size."""
        scope = scope_for(request)
        try:
            query = calibration_query(scope, request.query_params)
        except CalibrationFilterError as exc:
            raise ValidationError(exc.errors) from None
        return Response({"results": [c.api_dict() for c in scorer_calibrations(query)]})
