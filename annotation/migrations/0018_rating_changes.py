"""Per-block change counts of each study's ratings, kept by triggers (annotation.reports.rating_changes).

Statement-level triggers with transition tables: one upsert per statement and block stripe touched,
however many rows it wrote (a bulk load of ten million ratings is one join, not ten million calls).
A block is a.id >> 16 (rating_changes.CHANGE_BLOCK_BITS); each server process (pg_backend_pid) adds to
its own row of a block, so concurrent writers never wait for each other's row lock (one backend runs
one transaction at a time), however long one of them stays open.
"""

from django.db import migrations, models

_COUNTS = "annotation_ratingchanges"
_ADD = (f"ON CONFLICT (study_id, block, stripe) DO UPDATE SET changes = c.changes + EXCLUDED.changes")


def _upsert(select_ids: str) -> str:
    """Adds one per row of `select_ids` (columns study_id, id: the assignment's) to its block stripe."""
    return (f"INSERT INTO {_COUNTS} AS c (study_id, block, stripe, changes)"
            f" SELECT study_id, id >> 16, pg_backend_pid(), count(*) FROM ({select_ids}) AS changed GROUP BY 1, 2, 3 {_ADD};")


def _ratings(rows: str) -> str:
    return f"SELECT a.study_id, a.id FROM {rows} r JOIN annotation_assignment a ON a.id = r.assignment_id"


def _submitted(rows: str) -> str:
    return f"SELECT study_id, id FROM {rows} WHERE status = 'submitted'"


def _function(name: str, changed) -> str:
    """A trigger function adding the rows `changed(transition table)` selects, before and after."""
    return f"""
CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        {_upsert(changed("new_rows"))}
    ELSIF TG_OP = 'UPDATE' THEN
        {_upsert(changed("new_rows") + " UNION ALL " + changed("old_rows"))}
    ELSE
        {_upsert(changed("old_rows"))}
    END IF;
    RETURN NULL;
END $$;
"""


# Only assignments submitted before or after the change are in a report: drafts, new and expired
# assignments of the annotator loop add nothing.
_FUNCTIONS = {"rating": ("concord_rating_changes", _ratings), "assignment": ("concord_assignment_changes", _submitted)}
_REFERENCING = {"insert": "NEW TABLE AS new_rows", "update": "OLD TABLE AS old_rows NEW TABLE AS new_rows",
                "delete": "OLD TABLE AS old_rows"}
_TRIGGERS = [(table, event) for table in _FUNCTIONS for event in _REFERENCING]

FORWARD = "".join(_function(name, changed) for name, changed in _FUNCTIONS.values()) + "".join(
    f"CREATE TRIGGER {table}_changes_{event} AFTER {event.upper()} ON annotation_{table}"
    f" REFERENCING {_REFERENCING[event]} FOR EACH STATEMENT EXECUTE FUNCTION {_FUNCTIONS[table][0]}();\n"
    # ALWAYS: they fire in session_replication_role = replica too (bulk loads that skip foreign key
    # checks, logical replication), where ordinary triggers do not.
    f"ALTER TABLE annotation_{table} ENABLE ALWAYS TRIGGER {table}_changes_{event};\n" for table, event in _TRIGGERS)

BACKWARD = "".join(f"DROP TRIGGER {table}_changes_{event} ON annotation_{table};\n" for table, event in _TRIGGERS) + "".join(
    f"DROP FUNCTION {name}();\n" for name, _ in _FUNCTIONS.values())


class Migration(migrations.Migration):

    dependencies = [
        ("annotation", "0017_assignment_rater_counts_index"),
    ]

    operations = [
        migrations.CreateModel(
            name="RatingChanges",
            fields=[
                ("pk", models.CompositePrimaryKey("study_id", "block", "stripe", blank=True, editable=False,
                                                  primary_key=True, serialize=False)),
                ("study_id", models.BigIntegerField()),
                ("block", models.BigIntegerField()),
                ("stripe", models.IntegerField()),
                ("changes", models.BigIntegerField(default=0)),
            ],
        ),
        migrations.RunSQL(FORWARD, BACKWARD),
    ]
