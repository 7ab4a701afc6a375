"""Production settings: `check --deploy` is clean and the security defaults hold with DEBUG off.

Settings are computed from the environment at import, so each case runs in a fresh
interpreter with production-like variables rather than overriding values in this process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, django
from django.conf import settings
django.setup()
from django.core.management import call_command
call_command("check", deploy=True, fail_level="WARNING", verbosity=0)
print(json.dumps({
    "debug": settings.DEBUG,
    "hsts": settings.SECURE_HSTS_SECONDS,
    "hsts_subdomains": settings.SECURE_HSTS_INCLUDE_SUBDOMAINS,
    "ssl_redirect": settings.SECURE_SSL_REDIRECT,
    "session_secure": settings.SESSION_COOKIE_SECURE,
    "csrf_secure": settings.CSRF_COOKIE_SECURE,
    "csp_script": settings.CONTENT_SECURITY_POLICY["DIRECTIVES"]["script-src"],
    "static_backend": settings.STORAGES["staticfiles"]["BACKEND"],
    "media_backend": settings.STORAGES["default"]["BACKEND"],
    "media_options": settings.STORAGES["default"].get("OPTIONS", {}),
    "axes_first": settings.AUTHENTICATION_BACKENDS[0],
    "axes_middleware_last": settings.MIDDLEWARE[-1],
}))
"""


def _production_env(**extra: str) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "MEDIA_", "SECURE_"))
    }
    env.pop("DEBUG", None)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "redteam.settings",
            "SECRET_KEY": "x" * 20 + "-production-test-key-" + "y" * 30,
            "ALLOWED_HOSTS": "redteam.example.org",
            "DATABASE_URL": "",
            # Production reads the environment only, never a checkout's .env.
            "ENV_FILE": "",
        }
    )
    env.update(extra)
    return env


SETUP = "import django; django.setup()"


def _python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter at the repository root with exactly `env`."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def _probe(**extra: str) -> subprocess.CompletedProcess[str]:
    return _python(PROBE, _production_env(**extra))


def test_check_deploy_is_clean_with_production_settings() -> None:
    result = _probe()
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout.strip().splitlines()[-1])
    assert values["debug"] is False
    assert values["hsts"] >= 31_536_000
    assert values["hsts_subdomains"] is True
    assert values["ssl_redirect"] is True
    assert values["session_secure"] is True
    assert values["csrf_secure"] is True
    assert values["csp_script"] == ["'self'"]
    assert values["static_backend"] == "whitenoise.storage.CompressedManifestStaticFilesStorage"
    assert values["media_backend"] == "django.core.files.storage.FileSystemStorage"
    assert values["axes_first"] == "axes.backends.AxesStandaloneBackend"
    assert values["axes_middleware_last"] == "axes.middleware.AxesMiddleware"


def test_production_refuses_to_start_without_secret_key() -> None:
    env = _production_env()
    env.pop("SECRET_KEY")
    result = _python(SETUP, env)
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


def test_media_storage_s3_selects_django_storages_with_private_objects() -> None:
    result = _probe(MEDIA_STORAGE="s3", MEDIA_S3_BUCKET="redteam-media")
    # check --deploy does not import the storage backend, so this passes without boto3.
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout.strip().splitlines()[-1])
    assert values["media_backend"] == "storages.backends.s3.S3Storage"
    assert values["media_options"]["bucket_name"] == "redteam-media"
    assert values["media_options"]["default_acl"] == "private"
    assert values["media_options"]["file_overwrite"] is False


def test_unknown_media_storage_is_refused() -> None:
    env = _production_env(MEDIA_STORAGE="ftp")
    result = _python(SETUP, env)
    assert result.returncode != 0
    assert "MEDIA_STORAGE" in result.stderr


def test_a_checkout_env_file_supplies_the_key_and_the_environment_wins(tmp_path: Path) -> None:
    """`make` writes .env with a random key so manage.py works in a development checkout."""
    env_file = tmp_path / "dotenv"
    env_file.write_text("SECRET_KEY=from-the-env-file-" + "k" * 40 + "\n")
    show_key = SETUP + "; from django.conf import settings; print(settings.SECRET_KEY)"

    def secret_key(**extra: str) -> str:
        env = _production_env(ENV_FILE=str(env_file), **extra)
        if "SECRET_KEY" not in extra:
            env.pop("SECRET_KEY")
        result = _python(show_key, env)
        assert result.returncode == 0, result.stderr
        return result.stdout.strip()

    assert secret_key() == "from-the-env-file-" + "k" * 40
    assert (
        secret_key(SECRET_KEY="from-the-environment-" + "e" * 40)
        == "from-the-environment-" + "e" * 40
    )
