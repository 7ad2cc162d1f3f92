"""The items page's query: search and filters with keyset pagination on the item id, so a page
costs the same at item 100 and at item 100,000 (no OFFSET, no COUNT over the whole study).

A text search (a substring of the context or of an output, or the start of the item's id) has no
index to use, so a page reads at most SEARCH_WINDOW items in id order: the matches among them,
and a link that searches on from where the window ended. A rare word no longer makes one page
read all 2,000,000 items of a study (13 s); it makes several pages that each read 10,000.
(pg_trgm's GIN index would serve ILIKE, but the embedded PostgreSQL of `make run` ships no
pg_trgm; full-text search would change what matches: words, not substrings.)"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.core.cache import cache
from django.db import connection
from django.db.models import Count, Exists, F, IntegerField, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce

from annotation.models import Assignment, Item, Output, Study
from annotation.services.sampling_policy import items_wanted_default, wanted_expression
from config.parsers import whole_number

PAGE_SIZE = 50
SEARCH_WINDOW = 10_000  # items a search page reads at most
STATUSES = {
    "unrated": "No ratings yet",
    "in_progress": "Some ratings",
    "complete": "Complete",
    "open_now": "Open on a rater's screen",
}
FLAGGED = {"yes": "Flagged as unsuitable", "no": "Not flagged"}


@dataclass
class ItemFilters:
    q: str = ""
    status: str = ""
    ratings: int | None = None
    system: str = ""
    flagged: str = ""
    after: int | None = None
    before: int | None = None
    errors: dict = field(default_factory=dict)

    @classmethod
    def from_query(cls, params) -> "ItemFilters":
        f = cls(q=params.get("q", "").strip()[:200], system=params.get("system", "").strip())
        f.status = params.get("status", "") if params.get("status", "") in STATUSES else ""
        f.flagged = params.get("flagged", "") if params.get("flagged", "") in FLAGGED else ""
        for name in ("ratings", "after", "before"):
            raw = params.get(name, "").strip()
            if raw:
                value = whole_number(raw)
                if value is None or value < 0:
                    f.errors[name] = f"{name}: give a whole number ≥ 0, not {raw[:40]!r}."
                else:
                    setattr(f, name, value)
        return f

    def query(self, **override) -> dict:
        """The filter part of the URL (for the pager), without positions."""
        out = {"q": self.q, "status": self.status, "system": self.system, "flagged": self.flagged,
               "ratings": "" if self.ratings is None else self.ratings}
        out.update(override)
        return {k: v for k, v in out.items() if v not in ("", None)}


@dataclass
class ItemPage:
    rows: list[dict]
    has_next: bool
    has_prev: bool
    next_after: int | None = None   # the pager's `after` and `before` positions
    prev_before: int | None = None
    searched_to: int | None = None  # a search that stopped at its window: the item id it read up to

def _ratings_subquery():
    return Coalesce(Subquery(
        Assignment.objects.filter(item=OuterRef("pk"), status=Assignment.Status.SUBMITTED)
        .order_by().values("item").annotate(n=Count("id")).values("n"),
        output_field=IntegerField()), Value(0))


def items_page(study: Study, f: ItemFilters, *, size: int = PAGE_SIZE) -> ItemPage:
    # Filters are conditions of the WHERE clause; what a row shows (ratings, open, flagged) is read
    # afterwards for the page's items only. As columns of the SELECT they were subplans that
    # PostgreSQL hashed over every assignment of the table before returning the first row (250 ms
    # a page at 2,000,000 items), though only 50 rows needed them.
    submitted, active = Assignment.Status.SUBMITTED, Assignment.Status.ACTIVE
    qs = Item.objects.filter(study=study)
    window_end = _search_window_end(study, f) if f.q else None
    if f.q:
        # The outputs' search is bounded by the window too: whether PostgreSQL looks them up item by
        # item or hashes the matching outputs first (its choice depends on the table's size), it reads
        # the window's outputs only.
        outputs = Output.objects.filter(item=OuterRef("pk"), content__icontains=f.q)
        if f.before is not None:
            outputs = outputs.filter(item_id__lt=f.before)
        elif f.after is not None:
            outputs = outputs.filter(item_id__gt=f.after)
        if window_end is not None:
            outputs = outputs.filter(**{"item_id__gte" if f.before is not None else "item_id__lte": window_end})
        qs = qs.filter(Q(external_id__istartswith=f.q) | Q(context__icontains=f.q) | Exists(outputs))
    if f.system:
        qs = qs.filter(Exists(Output.objects.filter(item=OuterRef("pk"), system=f.system)))
    # An item is complete at the raters its sampling policy wants now (raters_per_item under the uniform design).
    wanted = wanted_expression(study)
    if f.status in ("in_progress", "complete") or f.ratings is not None:
        qs = qs.annotate(n_ratings=_ratings_subquery(), wanted=wanted)
    if f.status == "unrated":
        qs = qs.exclude(Exists(Assignment.objects.filter(item=OuterRef("pk"), status=submitted)))
    elif f.status == "in_progress":
        qs = qs.filter(n_ratings__gt=0, n_ratings__lt=F("wanted"))
    elif f.status == "complete":
        qs = qs.filter(n_ratings__gte=F("wanted"))
    elif f.status == "open_now":
        qs = qs.filter(Exists(Assignment.objects.filter(item=OuterRef("pk"), status=active)))
    if f.ratings is not None:
        qs = qs.filter(n_ratings=f.ratings)
    if f.flagged:
        flagged = Exists(Assignment.objects.filter(item=OuterRef("pk"), status=submitted, ignored=True))
        qs = qs.filter(flagged) if f.flagged == "yes" else qs.exclude(flagged)
    fields = ("pk", "external_id", "context", "is_attention_check", "slots_wanted")
    if f.before is not None:  # the page before: walk backwards from `before`, then show in id order
        if window_end is not None:
            qs = qs.filter(pk__gte=window_end)
        rows = list(qs.filter(pk__lt=f.before).order_by("-pk").values(*fields)[:size + 1])
        has_prev = len(rows) > size or window_end is not None
        rows = rows[:size][::-1]
        searched_on = len(rows) < size and window_end is not None  # the window ended before the page filled
        prev_before = window_end if searched_on else (rows[0]["pk"] if rows else None)
        page = ItemPage(rows=rows, has_next=True, has_prev=has_prev, prev_before=prev_before,
                        next_after=rows[-1]["pk"] if rows else f.before - 1, searched_to=window_end)
    else:
        if f.after is not None:
            qs = qs.filter(pk__gt=f.after)
        if window_end is not None:
            qs = qs.filter(pk__lte=window_end)
        rows = list(qs.order_by("pk").values(*fields)[:size + 1])
        has_next = len(rows) > size or window_end is not None
        rows = rows[:size]
        searched_on = len(rows) < size and window_end is not None  # the window ended before the page filled
        next_after = window_end if searched_on else (rows[-1]["pk"] if rows else None)
        page = ItemPage(rows=rows, has_next=has_next, has_prev=f.after is not None, next_after=next_after,
                        prev_before=rows[0]["pk"] if rows else (f.after or 0) + 1, searched_to=window_end)
    if window_end is None:  # without a window, a page with no rows has nowhere to lead
        page.has_next, page.has_prev = page.has_next and bool(rows), page.has_prev and bool(rows)
    ids = [r["pk"] for r in rows]
    default = items_wanted_default(study)
    counts = dict(Output.objects.filter(item_id__in=ids).values("item_id")
                  .annotate(n=Count("id")).values_list("item_id", "n"))
    states = {item_id: (n, is_open, is_flagged) for item_id, n, is_open, is_flagged in (
        Assignment.objects.filter(item_id__in=ids).values("item_id").annotate(
            n=Count("id", filter=Q(status=submitted)),
            is_open=Count("id", filter=Q(status=active)),
            is_flagged=Count("id", filter=Q(status=submitted, ignored=True)))
        .values_list("item_id", "n", "is_open", "is_flagged"))}
    for r in rows:
        n, is_open, is_flagged = states.get(r["pk"], (0, 0, 0))
        r["n_ratings"], r["open_now"], r["flagged"] = n, is_open > 0, is_flagged > 0
        r["wanted"] = min(study.raters_per_item, default if r["slots_wanted"] is None else r["slots_wanted"])
        r["n_outputs"] = counts.get(r["pk"], 0)
        r["context_short"] = r["context"][:140] + ("…" if len(r["context"]) > 140 else "")
        r["locked"] = r["n_ratings"] > 0 or r["open_now"]
    return page


def _search_window_end(study: Study, f: ItemFilters) -> int | None:
    """The id of the SEARCH_WINDOW-th item from the page's position in its direction, or None when
    fewer are left (the search then reads to the end of the study)."""
    ids = Item.objects.filter(study=study)
    if f.before is not None:
        ids = ids.filter(pk__lt=f.before).order_by("-pk")
    else:
        ids = (ids.filter(pk__gt=f.after) if f.after is not None else ids).order_by("pk")
    return ids.values_list("pk", flat=True)[SEARCH_WINDOW - 1:SEARCH_WINDOW].first()


def study_systems(study: Study, limit: int = 200) -> list[str]:
    """The systems of the study's outputs, for the filter menu. Finding them reads every output of
    the study (3 s at 2,000,000 items, on every page): kept in the cache until an upload or a
    deletion changes the study's outputs (forget_study_systems), at most SYSTEMS_CACHE_S."""
    key = _systems_key(study)
    systems = cache.get(key)
    if systems is None:
        systems = list(Output.objects.filter(item__study=study).order_by("system").values_list("system", flat=True)
                       .distinct()[:limit])
        cache.set(key, systems, SYSTEMS_CACHE_S)
    return systems


SYSTEMS_CACHE_S = 24 * 3600


def _systems_key(study: Study) -> str:
    # The database's name and the study's creation time: a cache shared by several databases (tests,
    # benches) or a study id used again never hands one study another's systems.
    return (f"concord:study-systems:{connection.settings_dict['NAME']}:{study.pk}:"
            f"{study.created_at.timestamp() if study.created_at else ''}")


def forget_study_systems(study: Study) -> None:
    """Call once the study's outputs changed (after the commit: a reader in between would cache the old list)."""
    cache.delete(_systems_key(study))
