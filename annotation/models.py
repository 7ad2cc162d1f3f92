import json
import uuid

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, models
from django.db.models import F, Func, Q

from annotation.db import instance_from_row, prepared_cursor, select_columns
from rubrics.models import RubricVersion


class Study(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        OPEN = "open", "Open"
        PAUSED = "paused", "Paused"
        CLOSED = "closed", "Closed"

    class Presentation(models.TextChoices):
        SUCCESSION = "succession", "One response at a time"
        SIDE_BY_SIDE = "side_by_side", "Side by side"

    slug = models.SlugField(max_length=80, unique=True)
    name = models.CharField(max_length=200)
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="studies")
    instructions = models.TextField(blank=True, help_text="Markdown, shown to raters beside the rubric's guide.")
    raters_per_item = models.PositiveSmallIntegerField(default=3)
    presentation = models.CharField(max_length=20, choices=Presentation.choices, default=Presentation.SIDE_BY_SIDE)
    language = models.CharField(
        max_length=8, blank=True, default="", choices=settings.LANGUAGES,
        help_text="Language of the rater's pages (workspace, training, crowd pages); empty: the rater's browser "
                  "chooses. The rubric's and items' own texts stay as written."
    )
    randomize_items = models.BooleanField(default=True)
    randomize_outputs = models.BooleanField(
        default=True, help_text="Show each rater the responses in a random order (with counterbalancing: random "
                                "within each counterbalancing cell)."
    )
    counterbalance = models.BooleanField(
        default=True, help_text="Across an item's raters, show each response in each position equally often "
                                "(Williams design; exactly balanced per as many raters as responses)."
    )
    consensus_min_raters = models.PositiveSmallIntegerField(
        default=2, help_text="Evaluators an output needs before it enters consensus or preference pairs (seed 002)."
    )
    attention_check_rate = models.FloatField(default=0.0, help_text="Share of a rater's items that are gold checks.")
    training_pass_mark = models.FloatField(
        null=True, blank=True, help_text="Share of the training items a rater must answer as expected before rating "
                                         "(empty: no training phase). One retry."
    )
    attention_fail_pause = models.PositiveSmallIntegerField(
        default=0, help_text="Pause a rater after this many failed checks (0: never)."
    )
    assignment_expiry_minutes = models.PositiveIntegerField(
        null=True, blank=True, help_text="Minutes a rater holds an item before it goes back to the pool "
                                         "(empty: the site's ASSIGNMENT_TTL_SECONDS)."
    )
    deadline = models.DateTimeField(null=True, blank=True, help_text="When it passes, the study closes.")
    # annotation.services.participant_data.participant_ids_purge, run by Celery beat.
    retention_days = models.PositiveIntegerField(
        null=True, blank=True, help_text="Days after a crowd participant started before their panel and session "
                                         "ids are purged (empty: kept).")
    # The participant's way through the study besides training and rating: consent, questionnaires,
    # instructions with a comprehension check, the attention policy, screen-out payment
    # (validated by annotation.questionnaires.phases_validate; {} means none of them).
    phases = models.JSONField(default=dict, blank=True)
    # How raters' effort is spent (annotation.services.sampling_policy.policy_clean): {} is the uniform design
    # (raters_per_item for every item, the balanced pairs); {"name": "adaptive_redundancy", ...} or
    # {"name": "active_pairs", ...} (issue 58 §2, §3).
    sampling_policy = models.JSONField(default=dict, blank=True, db_default={})
    # Which OTLP traces reach the raters (annotation.traces.sampling.rule_clean): {} keeps every trace;
    # {"rate": 0.2, "flags": ["unacceptable"]} every flagged one and a fifth of the rest (issue 56 §2).
    trace_sampling = models.JSONField(default=dict, blank=True, db_default={})
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "studies"
        constraints = [
            models.CheckConstraint(condition=Q(raters_per_item__gte=1), name="study_raters_per_item_positive"),
            models.CheckConstraint(
                condition=Q(attention_check_rate__gte=0) & Q(attention_check_rate__lte=1),
                name="study_attention_rate_fraction",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def rubric(self) -> dict:
        return self.rubric_version.definition

    @property
    def is_open(self) -> bool:
        return self.status == self.Status.OPEN


class StudyMember(models.Model):
    """A user's role in one study. Site admins (is_staff) manage every study."""

    class Role(models.TextChoices):
        ANNOTATOR = "annotator", "Annotator"
        RESEARCHER = "researcher", "Researcher"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="members")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="study_memberships")
    role = models.CharField(max_length=12, choices=Role.choices)
    paused = models.BooleanField(default=False, help_text="A paused (or removed) rater gets no new work.")
    # Removal keeps the row, so that the rater's ratings stay attributable and can be told apart.
    removed_at = models.DateTimeField(null=True, blank=True, help_text="Removed from the study; ratings kept.")
    # Where this rater's walk through the study's items stands (annotation.services.assignments._pick).
    pick_cursor = models.BigIntegerField(null=True, blank=True)
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["study", "user"], name="study_member_unique")]

    def __str__(self) -> str:
        return f"{self.user} in {self.study} as {self.role}"

    @property
    def status(self) -> str:
        """'active', 'paused' or 'removed', as shown on the manage page."""
        if self.removed_at is not None:
            return "removed"
        return "paused" if self.paused else "active"


class StudyChange(models.Model):
    """One entry of a study's change log: who changed which setting (or the status), when, from what to what."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="changes")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="+")
    at = models.DateTimeField(auto_now_add=True)
    field = models.CharField(max_length=80)
    old = models.TextField(blank=True)
    new = models.TextField(blank=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.study}: {self.field} {self.old!r} -> {self.new!r}"


class StudyLink(models.Model):
    """What every way into a study by link has: an unguessable token (secrets.token_urlsafe), an
    expiry, a revocation, who made it and when."""

    token = models.CharField(max_length=64, unique=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True
        ordering = ["-created_at"]


class StudyInvitation(StudyLink):
    """A link that creates an annotator account on first visit and adds it to the study;
    `max_uses` null means any number of uses."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="invitations")
    role = models.CharField(max_length=12, choices=StudyMember.Role.choices, default=StudyMember.Role.ANNOTATOR)
    max_uses = models.PositiveIntegerField(null=True, blank=True)
    uses = models.PositiveIntegerField(default=0)

    class Meta(StudyLink.Meta):
        constraints = [
            models.CheckConstraint(condition=Q(max_uses__isnull=True) | Q(uses__lte=F("max_uses")),
                                   name="invitation_uses_within_max"),
        ]

    def __str__(self) -> str:
        return f"invitation to {self.study}"


class Item(models.Model):
    """What is rated: a context (review, question, source sentence, challenge) and its outputs."""

    class ContextKind(models.TextChoices):
        TEXT = "text", "Text"
        MARKDOWN = "markdown", "Markdown"
        CODE = "code", "Code"
        HTML = "html", "HTML"
        CONVERSATION = "conversation", "Conversation"
        TRAJECTORY = "trajectory", "Trajectory"

    # No index of its own: item_external_id_unique (study, external_id) leads with it.
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="items", db_index=False)
    external_id = models.CharField(max_length=200)
    context = models.TextField(blank=True)
    context_kind = models.CharField(max_length=20, choices=ContextKind.choices, default=ContextKind.TEXT)
    metadata = models.JSONField(default=dict, blank=True)
    gold = models.JSONField(default=dict, blank=True, help_text="Gold answers per criterion key.")
    is_attention_check = models.BooleanField(default=False)
    # A training item is also an attention check (so it is left out of every statistic and export),
    # shown only in a rater's training phase, with its gold answer and this explanation after it.
    is_training = models.BooleanField(default=False, db_default=False)
    explanation = models.TextField(blank=True, db_default="", help_text="Why the gold answer is right (training).")
    # Active + submitted assignments: a hint that lets the assignment engine skip full items through
    # an index. The engine recounts under the item's row lock, so a stale hint never over-assigns.
    # db_default because item import writes rows with COPY.
    slots_taken = models.PositiveIntegerField(default=0, db_default=0)
    # Adaptive redundancy: how many raters the item wants now (null: the policy's minimum); set after each
    # rating from the item's posterior (annotation.services.sampling_policy).
    slots_wanted = models.PositiveSmallIntegerField(null=True, blank=True)
    # Active inference: the probability with which the item was drawn for humans (null: not drawn yet),
    # copied into each of its assignments so that exports can reweight (annotation.services.active_inference).
    sampling_probability = models.FloatField(null=True, blank=True)
    # Routing (judges.services.routing): items judges or raters are unsure about are served first.
    priority = models.SmallIntegerField(default=0, db_default=0)
    # The item's place in the study's random order: raters walk it through an index, each from their
    # own starting point, so picking an item never sorts or hashes the open items.
    pick_key = models.BigIntegerField(
        db_default=Func(template="(floor((random() - 0.5) * 18446744073709551615.0))::bigint"), editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["study", "external_id"], name="item_external_id_unique")]
        indexes = [
            models.Index(fields=["study", "slots_taken"], condition=Q(is_attention_check=False),
                         name="item_open_slots_idx"),
            # The assignment engine's walks: in random order, in upload order, and the routed items.
            models.Index(fields=["study", "pick_key"], condition=Q(is_attention_check=False, priority=0),
                         name="item_pick_random_idx"),
            models.Index(fields=["study", "id"], condition=Q(is_attention_check=False, priority=0),
                         name="item_pick_upload_idx"),
            models.Index(fields=["study", "-priority", "pick_key"], condition=Q(priority__gt=0),
                         name="item_pick_routed_idx"),
            # A study's few training items, found without reading its other (up to millions of) items.
            models.Index(fields=["study"], condition=Q(is_training=True), name="item_training_idx"),
        ]

    def __str__(self) -> str:
        return self.external_id

    def load_outputs(self) -> "Item":
        """Read the outputs once, into the cache `item.outputs.all()` reads (the screen and the submit
        both use them). One plain statement: prefetch_related's machinery cost more CPU than it."""
        if "outputs" not in self.__dict__.get("_prefetched_objects_cache", {}):
            with prepared_cursor() as cursor:
                cursor.execute(f"SELECT {select_columns(Output, 'o')} FROM {Output._meta.db_table} o"
                               " WHERE o.item_id = %s ORDER BY o.position", [self.pk])
                self.set_outputs([instance_from_row(Output, row) for row in cursor.fetchall()])
        return self

    def set_outputs(self, outputs: list["Output"]) -> None:
        """Put outputs read elsewhere into the cache `item.outputs.all()` reads."""
        for output in outputs:
            output.item = self
        found = self.outputs.all()
        found._result_cache, found._prefetch_done = outputs, True
        self.__dict__.setdefault("_prefetched_objects_cache", {})["outputs"] = found


class Output(models.Model):
    """One response to an item, from one system. `system` must never reach an annotator."""

    class Kind(models.TextChoices):
        TEXT = "text", "Text"
        MARKDOWN = "markdown", "Markdown"
        CODE = "code", "Code"
        HTML = "html", "HTML"
        DIFF = "diff", "Diff"
        CONVERSATION = "conversation", "Conversation"
        TRAJECTORY = "trajectory", "Trajectory"

    # No index of its own: output_position_unique (item, position) leads with the item and serves
    # every read by item and the cascade; a second index cost each import write and storage.
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="outputs", db_index=False)
    position = models.PositiveSmallIntegerField(help_text="Order in the uploaded file, 0-based.")
    system = models.CharField(max_length=200)
    content = models.TextField()
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.TEXT)
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["item_id", "position"]
        constraints = [models.UniqueConstraint(fields=["item", "position"], name="output_position_unique")]
        indexes = [models.Index(fields=["system"])]

    def __str__(self) -> str:
        return f"{self.item.external_id}#{self.position}"


class AssignmentQuerySet(models.QuerySet):
    def with_item(self, **where) -> "Assignment | None":
        """The one assignment matching `where` (columns of its table) with its item loaded, or None.

        One plain statement: the rating loop reads an assignment this way on every request, and
        compiling the ORM's select_related join cost more CPU than the query itself."""
        clause = " AND ".join(f"a.{self.model._meta.get_field(k).column} = %s" for k in where)
        with prepared_cursor() as cursor:
            cursor.execute(f"SELECT {assignment_item_columns('a', 'i')} FROM {self.model._meta.db_table} a"
                           f" JOIN {Item._meta.db_table} i ON i.id = a.item_id WHERE {clause}", list(where.values()))
            row = cursor.fetchone()
        return assignment_from_row(row) if row else None


def assignment_item_columns(assignment: str, item: str) -> str:
    """The select list of assignment_from_row: every column of an assignment, then of its item, then
    the item's outputs as one JSON array. The rating loop shows or submits every assignment it
    reads, so the outputs come in the same statement rather than a round trip of their own."""
    outputs = (f"(SELECT json_agg(json_build_array({select_columns(Output, 'o')}) ORDER BY o.position)::text"
               f" FROM {Output._meta.db_table} o WHERE o.item_id = {item}.id)")
    return f"{select_columns(Assignment, assignment)}, {select_columns(Item, item)}, {outputs}"


def _outputs_from_json(text: str | None) -> list["Output"]:
    # Each column of Output reads back as itself from JSON (numbers, text, JSON); a date or a decimal
    # column would not (tests/test_assignment_reads.py checks the field types).
    if text is None:
        return []
    names = [f.attname for f in Output._meta.concrete_fields]
    return [Output.from_db(DEFAULT_DB_ALIAS, names, values) for values in json.loads(text)]


def assignment_from_row(row) -> "Assignment":
    """An Assignment with its item and the item's outputs, from a row selected by assignment_item_columns."""
    n, m = len(Assignment._meta.concrete_fields), len(Item._meta.concrete_fields)
    assignment = instance_from_row(Assignment, row[:n])
    assignment.item = instance_from_row(Item, row[n:n + m])
    assignment.item.set_outputs(_outputs_from_json(row[n + m]))
    return assignment


class Assignment(models.Model):
    """One rater's slot on one item. A rater never holds two slots of the same item."""

    class Status(models.TextChoices):
        ACTIVE = "active", "In progress"
        SUBMITTED = "submitted", "Submitted"
        EXPIRED = "expired", "Expired"

    # study and item have no index of their own: the (study, rater, status) index and the
    # (item, rater) constraint lead with them. Every index is paid on each submit (a non-HOT update).
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="assignments", db_index=False)
    # Addresses the assignment in annotator URLs; reveals nothing about the item's systems.
    token = models.UUIDField(default=uuid.uuid4, db_default=Func(function="gen_random_uuid"), unique=True,
                             editable=False)
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="assignments", db_index=False)
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ACTIVE)
    permutation = models.JSONField(default=list, help_text="Output positions in the order shown (Response 1..K).")
    # Which of the item's raters_per_item places this assignment holds (null for attention checks and
    # expired rows); unique per item among live assignments, so the database refuses over-assignment.
    slot = models.PositiveSmallIntegerField(null=True, blank=True)
    # Active comparisons: the probability with which this pair was chosen, and whether it was drawn uniformly
    # ("random") or chosen by the fit ("active"); active inference: the item's draw probability ("active").
    # Null and "" under the uniform design.
    sampling_probability = models.FloatField(null=True, blank=True)
    sampling = models.CharField(max_length=8, blank=True, default="", db_default="")
    is_attention_check = models.BooleanField(default=False)
    attention_passed = models.BooleanField(null=True, blank=True, help_text="Gold check result, when one.")
    draft = models.JSONField(default=dict, blank=True)
    ignored = models.BooleanField(default=False)
    ignore_reason = models.TextField(blank=True)
    comment = models.TextField(blank=True)
    time_on_task_ms = models.PositiveBigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)

    objects = AssignmentQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["item", "rater"], name="assignment_item_rater_unique"),
            models.UniqueConstraint(
                fields=["item", "slot"], condition=Q(slot__isnull=False) & ~Q(status="expired"),
                name="assignment_item_slot_unique",
            ),
        ]
        indexes = [
            # Carries the check flag so that a rater's attention counts read index entries only
            # (assignments._ATTENTION_COUNTS); as a key column, not INCLUDE, which would turn off the
            # deduplication that keeps this index at a few bytes a row.
            models.Index(fields=["study", "rater", "status", "is_attention_check"],
                         name="assignment_rater_counts_idx"),
            models.Index(fields=["item", "status"]),
            models.Index(fields=["study", "expires_at"], condition=Q(status="active"), name="assignment_expiry_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.rater} on {self.item}"


class Rating(models.Model):
    """One criterion's answer for one output (or for the whole item when output is null)."""

    # No index of its own: rating_unique (assignment, output, criterion) leads with it.
    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="ratings", db_index=False)
    output = models.ForeignKey(Output, null=True, blank=True, on_delete=models.CASCADE, related_name="ratings")
    criterion = models.CharField(max_length=80)
    value = models.JSONField(help_text="Number, label, text, or a list of spans {start, end, text, label}.")
    score = models.FloatField(null=True, blank=True, help_text="Numeric value for statistics, when the kind has one.")
    reasoning = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["assignment", "output", "criterion"], name="rating_unique", nulls_distinct=False
            )
        ]

    def __str__(self) -> str:
        return f"{self.criterion}={self.value}"


class RatingChanges(models.Model):
    """How many times a study's ratings changed, per block of assignment ids (a.id >> CHANGE_BLOCK_BITS),
    written only by the database's triggers (migration 0018) in the writer's own transaction: a rating
    inserted, updated or deleted, or an assignment submitted before or after the change inserted,
    updated or deleted, adds to its block. The sum only grows, so a block whose sum is the same as
    before has not changed; reports check that instead of reading every rating
    (annotation.reports.rating_changes). Each server process writes its own row of a block (stripe =
    its pid), so concurrent writers never wait for each other's lock; readers fold old rows into
    stripe -1 now and then (the sums stay the same)."""

    pk = models.CompositePrimaryKey("study_id", "block", "stripe")
    # No foreign key: the triggers add rows while a study's ratings are being deleted with it.
    study_id = models.BigIntegerField()
    block = models.BigIntegerField()
    stripe = models.IntegerField()
    changes = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"study {self.study_id} block {self.block}.{self.stripe}: {self.changes}"


class DatasetRelease(models.Model):
    """A frozen, versioned dataset file of a study (seed 002: semantic versions, a changelog,
    older versions stay downloadable). Once ready it never changes: (study, version, format)
    is unique, the file is written once under a name holding the version, and a database
    trigger refuses any update of a ready release."""

    class Status(models.TextChoices):
        PENDING = "pending", "Queued"
        BUILDING = "building", "Building"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"

    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="releases")
    version = models.CharField(max_length=64, help_text="Semantic version, MAJOR.MINOR.PATCH.")
    changelog = models.TextField(blank=True)
    format = models.CharField(max_length=20)
    delta = models.FloatField(null=True, blank=True, help_text="Preference pairs: minimum score difference.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    progress = models.FloatField(default=0.0)
    error = models.TextField(blank=True)
    file_path = models.CharField(max_length=500, blank=True, help_text="Relative to MEDIA_ROOT.")
    license = models.CharField(max_length=40, blank=True,
                               help_text="The dataset's license, chosen at release (the Hugging Face card's id).")
    sha256 = models.CharField(max_length=64, blank=True)
    size = models.PositiveBigIntegerField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "format"]
        constraints = [
            models.UniqueConstraint(fields=["study", "version", "format"], name="dataset_release_unique"),
            models.CheckConstraint(condition=Q(progress__gte=0) & Q(progress__lte=1),
                                   name="dataset_release_progress_fraction"),
        ]

    def __str__(self) -> str:
        return f"{self.study.slug} {self.version} ({self.format})"


class CrowdLink(StudyLink):
    """An entry link for a paid crowd (Prolific, MTurk or any panel that appends participant ids to a
    URL): the first visit creates or resumes a rater without a password (annotation.services.crowd)."""

    class Provider(models.TextChoices):
        PROLIFIC = "prolific", "Prolific"
        MTURK = "mturk", "Amazon Mechanical Turk"
        GENERIC = "generic", "Other (participant and session in the URL)"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="crowd_links")
    provider = models.CharField(max_length=10, choices=Provider.choices, default=Provider.PROLIFIC)
    completion_code = models.CharField(max_length=64, blank=True)
    completion_url = models.URLField(max_length=500, blank=True, help_text="Where a participant goes when done.")
    time_limit_minutes = models.PositiveIntegerField(null=True, blank=True)
    items_per_participant = models.PositiveIntegerField(null=True, blank=True)
    # Off (the rule): a panel id is a rater of this study only, a new account per study. On (a site
    # admin's deliberate choice): the same panel id is one rater across every study whose link has
    # it on, e.g. a longitudinal panel; docs/security.md says what that links.
    shared_identity = models.BooleanField(
        default=False, help_text="The same panel id is one rater in every study whose crowd link has this on.")


class CrowdParticipant(models.Model):
    """One crowd participant of a link: who they are at the provider, their rater account, their time."""

    link = models.ForeignKey(CrowdLink, on_delete=models.CASCADE, related_name="participants")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="crowd_entries")
    participant_id = models.CharField(max_length=64)
    session_id = models.CharField(max_length=64, blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    deadline = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    returned_at = models.DateTimeField(null=True, blank=True)
    # Set when the retention period replaced participant_id and session_id by a random id.
    ids_purged_at = models.DateTimeField(null=True, blank=True)
    # The browser that holds the participant (annotation.services.crowd): a hash of its cookie's key, and
    # its session, which another browser's takeover (after CROWD_BROWSER_IDLE_MINUTES) signs out.
    browser_key_hash = models.CharField(max_length=64, blank=True)
    session_key = models.CharField(max_length=40, blank=True)
    seen_at = models.DateTimeField(null=True, blank=True, help_text="The holding browser's latest entry.")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["link", "participant_id"], name="crowd_participant_unique")]
        indexes = [models.Index(fields=["deadline"], condition=Q(finished_at__isnull=True, returned_at__isnull=True),
                                name="crowd_open_deadline")]


class TrainingAttempt(models.Model):
    """One pass of a rater through a study's training items (at most two: one retry)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="training_attempts")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="training_attempts")
    number = models.PositiveSmallIntegerField()
    n_items = models.PositiveIntegerField()
    n_answered = models.PositiveIntegerField(default=0)
    n_correct = models.PositiveIntegerField(default=0)
    answers = models.JSONField(default=dict, blank=True, help_text="Training item external id -> answered as expected.")
    passed = models.BooleanField(null=True, blank=True, help_text="Empty until every training item is answered.")
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # A retry replaces this attempt's answers (one assignment per item and rater); the time spent on them
    # is paid time on task all the same, so it is kept here (annotation.payments adds it).
    time_on_task_ms = models.BigIntegerField(
        default=0, help_text="Time on task of this attempt's answers, kept when a retry replaced them.")

    class Meta:
        ordering = ["study", "rater", "number"]
        constraints = [models.UniqueConstraint(fields=["study", "rater", "number"], name="training_attempt_unique")]

    def __str__(self) -> str:
        return f"{self.rater} training {self.number} on {self.study}"


# ---------------------------------------------------------------- participants' data and the audit log


class AuditEntry(models.Model):
    """One admin action (annotation.audit.audit_record): who, what, when, on which study and target.
    The actor's name is kept as text too, so an entry outlives the account."""

    class Action(models.TextChoices):
        DATA_DOWNLOAD = "data_download", "Data download"
        PAYMENT_DOWNLOAD = "payment_download", "Payment sheet download"
        PARTICIPANT_DOWNLOAD = "participant_download", "Participant's data download"
        PARTICIPANT_ERASE = "participant_erase", "Participant's data erased"
        IDS_PURGE = "ids_purge", "Panel ids purged (retention)"
        MEMBER_CHANGE = "member_change", "Member change"
        SETTING_CHANGE = "setting_change", "Setting change"
        RELEASE = "release", "Dataset release"
        PAGE_VIEW = "personal_page", "Page with participants' data viewed"

    at = models.DateTimeField(auto_now_add=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="+")
    actor_name = models.CharField(max_length=150, blank=True, help_text="Empty: the system (a scheduled task).")
    action = models.CharField(max_length=32, choices=Action.choices)
    study = models.ForeignKey(Study, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_entries")
    target = models.CharField(max_length=200, blank=True, help_text="What was acted on: a rater, a file, a setting.")
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["study", "-at"], name="audit_study_at_idx"),
                   models.Index(fields=["-at"], name="audit_at_idx")]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor_name or 'system'} {self.action} {self.target}"


class ParticipantErasure(models.Model):
    """The record of one erasure: the admin's choice, who made it, when, and what it touched. It names
    the participant only by the random id their kept data now carries (or had, when deleted)."""

    class Mode(models.TextChoices):
        DELETE = "delete", "Delete their ratings"
        PSEUDONYMISE = "pseudonymise", "Keep their ratings under a random id, panel ids removed"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="erasures")
    pseudonym = models.CharField(max_length=40, unique=True)
    mode = models.CharField(max_length=12, choices=Mode.choices)
    by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                           related_name="+")
    by_name = models.CharField(max_length=150, blank=True)
    at = models.DateTimeField(auto_now_add=True)
    assignments = models.PositiveIntegerField(default=0)
    ratings = models.PositiveIntegerField(default=0)
    releases = models.JSONField(default=list, blank=True,
                                help_text="Ready releases made while their data was in the study (immutable).")

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.pseudonym} ({self.mode}) in {self.study}"


class PhaseRecord(models.Model):
    """A participant's answer to one phase of a study (annotation.services.phases): consent given or
    declined, a questionnaire's answers, the instructions read (and their comprehension check)."""

    class Phase(models.TextChoices):
        CONSENT = "consent", "Consent"
        PRE = "pre", "Pre-study questionnaire"
        INSTRUCTIONS = "instructions", "Instructions"
        POST = "post", "Post-study questionnaire"

    class Outcome(models.TextChoices):
        AGREED = "agreed", "Agreed"
        DECLINED = "declined", "Declined"
        ANSWERED = "answered", "Answered"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="phase_records")
    rater = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="phase_records")
    phase = models.CharField(max_length=12, choices=Phase.choices)
    outcome = models.CharField(max_length=10, choices=Outcome.choices)
    answers = models.JSONField(default=dict, blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "rater", "at"]
        constraints = [models.UniqueConstraint(fields=["study", "rater", "phase"], name="phase_record_unique")]

    def __str__(self) -> str:
        return f"{self.rater} {self.phase} {self.outcome} on {self.study}"
