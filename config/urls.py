from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from annotation.views.language import javascript_catalog
from config.docs_site import docs_file

urlpatterns = [
    # The rating loop's API first: Django tries patterns in order, and every pattern tried before the
    # match costs CPU on the requests that come most often (a tenth of the loop's CPU behind the pages).
    path("api/", include("annotation.workspace_api_urls")),
    path("", include("annotation.urls")),
    path("judges/", include("judges.urls")),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("django-admin/", admin.site.urls),
    # The workspace script's strings in the active language (static/js/workspace.js uses gettext()).
    path("jsi18n/<str:lang>/", javascript_catalog, name="javascript-catalog"),
    path("api/", include("annotation.api_urls")),
    path("api/judges/", include("judges.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # A page for people: signed out, it sends to the sign-in page and back (the schema stays 403 for clients).
    # The split view serves Swagger UI's initialiser as a script file of its own: the CSP allows no inline script.
    path("api/docs/", login_required(SpectacularSwaggerSplitView.as_view(url_name="schema")), name="api-docs"),
    # The documentation site built by `make docs` (config/docs_site.py), for signed-in users.
    re_path(r"^docs/(?P<name>.*)$", docs_file, name="docs"),
]

handler400 = "config.errors.bad_request"
handler403 = "config.errors.permission_denied"
handler404 = "config.errors.not_found"
handler500 = "config.errors.server_error"
