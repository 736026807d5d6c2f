"""The run command's environment (scripts/console_env.sh, sourced by scripts/run_console.sh): the console a
user runs looks like production (no debug pages) and links in messages follow the port it serves."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRINT = "from django.conf import settings; print(settings.DEBUG, settings.CONSOLE_BASE_URL)"


def run_console_settings(print_code: str = PRINT, **env_changes) -> str:
    """DEBUG and CONSOLE_BASE_URL as the run command's processes see them."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DJANGO_", "EMAIL_")) and k not in ("CONSOLE_BASE_URL", "WEB_PORT")}
    env.update(env_changes)
    script = f'set -euo pipefail; . scripts/console_env.sh; "{sys.executable}" manage.py shell -c "{print_code}"'
    result = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip().splitlines()[-1]


def test_the_run_command_serves_without_debug_pages_and_links_follow_its_port():
    assert run_console_settings(WEB_PORT="8100") == "False http://127.0.0.1:8100"
    assert run_console_settings() == "False http://127.0.0.1:8000"
    # Debug pages only when asked for; an explicit site address (a proxy's) wins over the port.
    assert run_console_settings(DJANGO_DEBUG="true", CONSOLE_BASE_URL="https://kb.example.com/") == \
        "True https://kb.example.com"
    script = (ROOT / "scripts" / "run_console.sh").read_text()
    assert ". scripts/console_env.sh" in script and "DJANGO_DEBUG" not in script


def test_the_run_command_writes_mail_to_files_in_var_mail_unless_told_otherwise():
    """Issue 29 (10): the demo's notifications land where the README says (var/mail), not nowhere."""
    show = "from django.conf import settings; print(settings.EMAIL_BACKEND, settings.EMAIL_FILE_PATH)"
    assert run_console_settings(show) == \
        f"django.core.mail.backends.filebased.EmailBackend {ROOT / 'var' / 'mail'}"
    smtp = "django.core.mail.backends.smtp.EmailBackend"
    assert run_console_settings(show, EMAIL_BACKEND=smtp).startswith(smtp + " ")
