import importlib
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

from django.urls import get_resolver  # noqa: E402  (settings must be loaded first)

from config.checks import require_secret_key  # noqa: E402

require_secret_key()
# Every view now rather than in each worker's first request (with gunicorn.conf.py's preload_app, once, in the
# master); and what the views import only when they compute (reports, exports, plans, routing: pandas, SciPy,
# matplotlib, pyarrow), which `make run` and manage.py commands start without.
get_resolver().url_patterns  # noqa: B018
PRELOADED = (
    "annotation.reports.downloads", "annotation.reports.paper", "annotation.datasets.formatters",
    "annotation.comparison_table", "annotation.planning.plan", "annotation.planning.plots",
    "annotation.planning.active", "annotation.stats.active_design", "annotation.stats.adaptive_redundancy",
    "annotation.stats.active_pairs", "annotation.stats.raters", "judges.services.routing", "judges.routing_plot",
    "judges.score_table", "judges.services.gold",
)
for _module in PRELOADED:
    importlib.import_module(_module)
