# redteam: `make run` serves the demo on SQLite, `make test` runs the whole suite.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export DEBUG ?= 1

.PHONY: run test serve bench lint typecheck check install demo clean browser-deps screenshots

$(STAMP): pyproject.toml | .env
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

# A per-checkout secret so `.venv/bin/python manage.py ...` works without exporting anything
# (settings read .env; a SECRET_KEY set in the environment, as in production, wins).
.env:
	umask 077 && $(PYTHON) -c "import secrets; print('# written by make for this checkout\nSECRET_KEY=' + secrets.token_urlsafe(50))" > $@

install: $(STAMP)

demo: $(STAMP)
	$(PY) manage.py migrate --noinput
	$(PY) manage.py load_demo

run: demo
	$(PY) manage.py runserver 127.0.0.1:8000

# Production: DEBUG off (SECRET_KEY and ALLOWED_HOSTS must be set), migrations and static files
# first, then gunicorn with workers/bind from the environment (redteam/gunicorn_conf.py).
serve: $(STAMP)
	DEBUG=0 $(PY) manage.py migrate --noinput
	DEBUG=0 $(PY) manage.py collectstatic --noinput
	DEBUG=0 exec $(VENV)/bin/gunicorn redteam.wsgi:application -c python:redteam.gunicorn_conf

# pytest-xdist workers, each with its own test database and server: one per CPU plus one, since
# the suite waits on browsers, servers and PostgreSQL often enough to leave a CPU idle (on two
# CPUs, three workers took the PostgreSQL run from 13:45 to 11:41 with the same CPU time).
TEST_WORKERS ?= $(shell $(PYTHON) -c "import os; print((os.cpu_count() or 1) + 1)")
test: $(STAMP)
	$(PY) -m pytest -n $(TEST_WORKERS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

typecheck: $(STAMP)
	$(VENV)/bin/mypy .

check: $(STAMP) lint typecheck
	$(PY) manage.py check
	$(PY) manage.py makemigrations --check --dry-run

# Every bench/*.py script against PostgreSQL (each recreates its own scratch database, whose
# name must start with "bench"); all run, and the target fails if any missed its budget.
# bench/pages.py goes first and loads 10M pieces into <db>_pages; bench/ingest.py then measures
# its large size on a file copy of that database instead of loading 10M pieces again. Both
# 10M databases (about 26 GB) are dropped at the end unless BENCH_KEEP=1 (to rerun
# bench/ingest.py --large-from <db>_pages without loading again).
BENCH_URL ?= postgres://postgres@127.0.0.1:5432/bench
bench: $(STAMP)
	@status=0; url="$${DATABASE_URL:-$(BENCH_URL)}"; db="$${url##*/}"; \
	echo "== bench/pages.py"; \
	DATABASE_URL="$${url}_pages" $(PY) bench/pages.py || status=1; \
	echo "== bench/ingest.py"; \
	DATABASE_URL="$$url" $(PY) bench/ingest.py --large 10000000 --large-from "$${db}_pages" || status=1; \
	for f in bench/*.py; do \
		case $$f in bench/pages.py|bench/ingest.py|bench/_common.py) continue;; esac; \
		echo "== $$f"; \
		DATABASE_URL="$$url" $(PY) $$f || status=1; \
	done; \
	if [ -z "$$BENCH_KEEP" ]; then \
		echo "== dropping the 10M databases (BENCH_KEEP=1 keeps them)"; \
		$(PY) bench/_common.py drop "$${url}_pages" "$${url}_large" || status=1; \
	fi; exit $$status

clean:
	rm -rf $(VENV) var .pytest_cache

# README pictures (docs/screenshots/): the demo data in a scratch SQLite database, served from
# the command's own process and photographed with Debian's chromium. Rerun after page changes.
SHOTS_DB := $(CURDIR)/var/screenshots.sqlite3
screenshots: $(STAMP)
	mkdir -p var && rm -f $(SHOTS_DB)
	DATABASE_URL=sqlite:///$(SHOTS_DB) $(PY) manage.py migrate --noinput -v 0
	DATABASE_URL=sqlite:///$(SHOTS_DB) $(PY) manage.py load_demo --password screenshots-only
	DATABASE_URL=sqlite:///$(SHOTS_DB) $(PY) manage.py refresh_dashboard
	DATABASE_URL=sqlite:///$(SHOTS_DB) $(PY) manage.py screenshots --password screenshots-only --out docs/screenshots
