"""Judges as platform data: configurations, runs, scores and the response cache.

A run keeps a snapshot of its judge's configuration, so editing a judge never changes
what an earlier run meant. Scores are written with INSERT ... ON CONFLICT DO NOTHING
against a unique (run, item, output, criterion), so a redelivered task is a no-op.
"""

from __future__ import annotations

import os

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models import Item, Output, Study
from judges.masking import mask_url, scrub_text, secret_values


class JudgeConfig(models.Model):
    class Backend(models.TextChoices):
        OPENAI = "openai", "OpenAI-compatible HTTP"
        TRANSFORMERS = "transformers", "Local transformers"

    class Mode(models.TextChoices):
        GENERATE = "generate", "Generate and parse"
        LOGPROBS = "logprobs", "Score-token probabilities (G-Eval)"

    name = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    provider = models.CharField(max_length=20, blank=True, default="",
                                help_text="Provider profile of an HTTP judge (judges/providers); empty for local models.")
    backend = models.CharField(max_length=20, choices=Backend.choices, default=Backend.OPENAI)
    model = models.CharField(max_length=200)
    endpoint = models.CharField(max_length=500, blank=True, help_text="Base URL of the OpenAI-compatible server.")
    api_key_env = models.CharField(
        max_length=100, blank=True, help_text="NAME of the environment variable that holds the key (never the key)."
    )
    method = models.CharField(max_length=40, default="per_criterion")
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.GENERATE)
    criteria = models.JSONField(default=list, blank=True, help_text="Criterion keys to judge; empty: all judgeable.")
    sampling = models.JSONField(default=dict, blank=True, help_text="temperature, top_p, max_tokens, seed, ...")
    concurrency = models.PositiveSmallIntegerField(default=8)
    price_in_per_m = models.FloatField(default=0.0, help_text="USD per 1M input tokens.")
    price_out_per_m = models.FloatField(default=0.0, help_text="USD per 1M output tokens.")
    queue = models.CharField(max_length=60, default="judges", help_text="Celery queue (e.g. one per GPU node).")
    prompt_overrides = models.JSONField(default=dict, blank=True)
    backend_options = models.JSONField(default=dict, blank=True, help_text="timeout_s, max_retries, ...")
    method_options = models.JSONField(default=dict, blank=True, help_text="chunk_size, rules, samples, ...")
    structured_output = models.BooleanField(default=False, help_text="Hold answers to a JSON schema from the rubric.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.CheckConstraint(condition=Q(concurrency__gte=1), name="judge_concurrency_positive")]

    def __str__(self) -> str:
        return self.name

    @property
    def endpoint_shown(self) -> str:
        return mask_url(self.endpoint)


class JudgeRun(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        DONE_WITH_ERRORS = "done_with_errors", "Done with errors"  # every slot has its row, some of them errors
        CANCELLED = "cancelled", "Cancelled"
        FAILED = "failed", "Failed"  # no call succeeded (or the run could not go on): left out of reports
        PAUSED = "paused", "Paused"

    ACTIVE = (Status.QUEUED, Status.RUNNING)
    FINISHED = (Status.DONE, Status.DONE_WITH_ERRORS)  # ended with verdicts: what reports and reuse read
    OPEN = (Status.QUEUED, Status.RUNNING, Status.PAUSED)  # not ended: one per judge and study

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="judge_runs")
    judge = models.ForeignKey(JudgeConfig, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    config = models.JSONField(help_text="Snapshot of the judge's configuration when the run started.")
    criteria = models.JSONField(default=list, help_text="Criterion keys this run scores per output.")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    n_outputs = models.PositiveIntegerField(default=0)
    n_expected = models.PositiveIntegerField(default=0, help_text="(output, criterion) pairs to score.")
    # Live: each chunk adds the scores it inserted, in the same transaction (judges.services.runs
    # add_to_totals); recounted from the scores after other writes and when the run ends.
    n_scored = models.PositiveIntegerField(default=0)
    n_unparsed = models.PositiveIntegerField(default=0)
    n_refusal = models.PositiveIntegerField(default=0)
    n_error = models.PositiveIntegerField(default=0)
    n_truncated = models.PositiveIntegerField(default=0, help_text="Answers cut off by the token cap.")
    tokens_in = models.PositiveBigIntegerField(default=0)
    tokens_out = models.PositiveBigIntegerField(default=0)
    cost_usd = models.FloatField(default=0.0)
    error = models.TextField(blank=True)
    # Budget (judges.services.budget).
    cost_cap_usd = models.FloatField(null=True, blank=True, help_text="Most USD this run may spend; empty: no cap.")
    cost_reserved_usd = models.FloatField(default=0.0, help_text="What chunks (or batches) under way may still spend.")
    pause_reason = models.TextField(blank=True)
    n_rate_limited = models.PositiveIntegerField(default=0, help_text="429 answers the provider gave this run.")
    estimate = models.JSONField(default=dict, blank=True, help_text="judges.services.estimate, made at the start.")
    # What made the scores (judges.services.run_keys): a run with the key of a finished one reuses its scores.
    key = models.CharField(max_length=64, blank=True, db_index=True)
    key_parts = models.JSONField(default=dict, blank=True)
    reused_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                                    help_text="The finished run with the same key whose scores this run copied.")
    n_reused = models.PositiveIntegerField(default=0, help_text="Scores copied from reused_from (no model was asked).")
    # A stopped run that goes on (resumed, its cap raised) starts a new attempt; its chunk messages carry theirs, and
    # a chunk of an earlier one that a worker still held for a retry does nothing when it comes back.
    attempt = models.PositiveIntegerField(default=0, db_default=0,
                                          help_text="How many times the run went on after it stopped.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["study", "status"])]

    def __str__(self) -> str:
        return f"run {self.pk} of {self.config.get('name', '?')} on {self.study.slug}"

    @property
    def name(self) -> str:
        return self.config.get("name", "")

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE

    @property
    def error_shown(self) -> str:
        """The error as pages and the API show it: a key the provider echoed back is masked."""
        return scrub_text(self.error, secret_values(self.config, os.environ)) if self.error else ""

    @property
    def n_done(self) -> int:
        """Slots with their one score, whatever its status."""
        return self.n_scored + self.n_unparsed + self.n_refusal + self.n_error + self.n_truncated


class JudgeScore(models.Model):
    class Status(models.TextChoices):
        SCORED = "scored", "Scored"
        UNPARSED = "unparsed", "Unparsed"
        REFUSAL = "refusal", "Refusal"
        ERROR = "error", "Error"
        TRUNCATED = "truncated", "Cut off by the token cap"

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="scores")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="judge_scores")
    output = models.ForeignKey(Output, null=True, blank=True, on_delete=models.CASCADE, related_name="judge_scores")
    criterion = models.CharField(max_length=80)
    value = models.JSONField(null=True, blank=True)
    score = models.FloatField(null=True, blank=True, help_text="Numeric value for statistics, when there is one.")
    status = models.CharField(max_length=10, choices=Status.choices)
    raw_text = models.TextField(blank=True, help_text="The judge's answer(s) as returned, kept even when unparsed.")
    reasoning = models.TextField(blank=True)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    cost_usd = models.FloatField(default=0.0)
    doubt = models.JSONField(default=dict, blank=True, help_text="Signals for sending the output to humans.")
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            # output is null only for item-level criteria (e.g. a pairwise preference).
            models.UniqueConstraint(
                fields=["run", "item", "output", "criterion"], name="judge_score_unique", nulls_distinct=False
            )
        ]
        indexes = [models.Index(fields=["run", "status"])]

    def __str__(self) -> str:
        return f"{self.criterion}={self.value} ({self.status})"


class JudgeBatch(models.Model):
    """One provider batch (OpenAI Batch API or Anthropic Message Batches) of a run's requests."""

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="batches")
    api = models.CharField(max_length=20)
    provider_id = models.CharField(max_length=200, blank=True)
    input_file_id = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=30, default="created", help_text="The provider's own state word.")
    ended = models.BooleanField(default=False, help_text="Results read in (or the batch failed whole).")
    n_requests = models.PositiveIntegerField(default=0)
    counts = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    polled_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["run", "ended"])]

    def __str__(self) -> str:
        return f"{self.api} batch {self.provider_id or self.pk} ({self.status})"


class JudgeBatchRequest(models.Model):
    """One request of a batch run, keyed by its custom_id (the sha256 of what is asked); its answer
    is written once (a second result for the same custom_id changes nothing)."""

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for a batch"
        SUBMITTED = "submitted", "In a batch"
        SUCCEEDED = "succeeded", "Answered"
        FAILED = "failed", "Failed for good"

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="batch_requests")
    custom_id = models.CharField(max_length=64)
    batch = models.ForeignKey(JudgeBatch, null=True, blank=True, on_delete=models.SET_NULL, related_name="requests")
    request = models.JSONField(help_text="The JudgeRequest, to build the provider's body from.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    response = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "custom_id"], name="judge_batch_request_unique")]
        indexes = [models.Index(fields=["run", "status"])]

    def __str__(self) -> str:
        return f"{self.custom_id[:12]} ({self.status})"


class JudgeCacheEntry(models.Model):
    """One backend answer, keyed by sha256 of (backend identity, prompt, sampling incl. seed)."""

    key = models.CharField(max_length=64, unique=True)
    response = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "judge cache entries"

    def __str__(self) -> str:
        return self.key[:12]


class StudyRouting(models.Model):
    """Routing inside one study (judges.services.routing): items judges or raters are unsure about are
    served to raters first, under a budget of human-rated items; the study pauses when the budget is
    spent or every system comparison the researcher named is decided."""

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="routing")
    enabled = models.BooleanField(default=True)
    human_budget = models.PositiveIntegerField(null=True, blank=True,
                                               help_text="Most human-rated items; empty: no limit.")
    comparisons = models.JSONField(default=list, blank=True, help_text='[["system A", "system B"], ...] to decide.')
    criterion = models.CharField(max_length=80, blank=True, help_text="The criterion comparisons are decided on.")
    auto_pause = models.BooleanField(default=True, help_text="Pause the study when the budget is spent or every "
                                                             "comparison is decided.")
    state = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"routing of {self.study.slug}"
