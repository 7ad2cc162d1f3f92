"""`manage.py routes`: the route inventory (config/routes.py) as the Markdown table of docs/security.md."""

from config.commands import ConcordCommand
from config.routes import counts, markdown_table


class Command(ConcordCommand):
    help = "Print every route with its access rule, the data it serves and its audit action (Markdown)."

    def add_arguments(self, parser):
        parser.add_argument("--counts", action="store_true", help="print the counts only")

    def handle(self, *args, **options):
        if options.get("counts"):
            for name, n in counts().items():
                self.stdout.write(f"{name}: {n}")
            return
        self.stdout.write(markdown_table())
