# One image for the web server, the default worker and the judge workers.
# Judge workers that run local Hugging Face models build with: --build-arg EXTRAS=local-models
FROM python:3.11-slim

ARG EXTRAS=""
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1

WORKDIR /app
RUN useradd --create-home --uid 1000 concord
COPY pyproject.toml ./
COPY config ./config
COPY rubrics ./rubrics
COPY annotation ./annotation
COPY judges ./judges
RUN pip install ".${EXTRAS:+[$EXTRAS]}"
COPY . .
# Static files are collected, hashed and compressed (gzip, Brotli) once, here; gunicorn serves them through
# WhiteNoise. collectstatic needs no database and no SECRET_KEY.
RUN python manage.py collectstatic --noinput -v0
# The documentation site of this version, which /docs/ serves to signed-in users (config/docs_site.py):
# MkDocs at the dev extra's pins, built offline (no database, no SECRET_KEY) into /app/site.
RUN pip install $(grep -o '"mkdocs[a-z-]*==[^"]*"' pyproject.toml | tr -d '"') \
    && NO_MKDOCS_2_WARNING=1 mkdocs build --strict --quiet

USER concord
EXPOSE 8000
# No access log: the HTTPS proxy in front logs every request, and gunicorn's own line cost about 150 µs of CPU a
# request (docs/scaling.md, 2026-11-28). Add "--access-logfile", "-" to have it anyway.
CMD ["gunicorn", "config.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "4", "--threads", "4", "--worker-class", "gthread"]
