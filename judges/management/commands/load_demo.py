
from django.contrib.auth import get_user_model
from django.db.models import Q

from annotation.background_requests import no_background_requests
from annotation.demo import demo_install
from annotation.demo_traffic import TRAFFIC_SLUG
from annotation.models import Study
from config.commands import ConcordCommand
from judges.demo_active import demo_active_install
from judges.simulation import demo_judges_and_release, demo_provider_judges


class Command(ConcordCommand):
    help = ("Create the demo accounts and one simulated demo study per seed preset, with ratings, judge runs "
            "and a release (idempotent: existing demo studies are kept); print the accounts. Judge chunks and "
            "release builds run in this process, so no worker is needed yet.")

    def handle(self, *args, **options):
        with no_background_requests():  # the same demo whether workers run beside the loader or not
            accounts = demo_install(judges_hook=demo_judges_and_release)
            demo_active_install(admin=get_user_model().objects.get(username="admin"))
        hosted = demo_provider_judges()
        studies = Study.objects.filter(Q(slug__startswith="demo-") | Q(slug__startswith="policy-")
                                       | Q(slug=TRAFFIC_SLUG)).order_by("slug")
        self.stdout.write("\nDemo studies:")
        for study in studies:
            self.stdout.write(f"  {study.slug:<22} {study.items.count():>3} items  {study.get_status_display()}")
        self.stdout.write(f"\nHosted judges (configured, not run; see manage.py judge_request): {', '.join(hosted)}")
        self.stdout.write("\nDemo accounts (local use only):")
        for username, password, role in accounts:
            self.stdout.write(f"  {role:<10} {username:<11} password: {password}")
