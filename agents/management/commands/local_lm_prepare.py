"""Make the local model ready: assemble and de-quantize a GGUF once into LOCAL_LM_CACHE_DIR (a no-op afterwards).

    python manage.py local_lm_prepare

scripts/bootstrap.sh runs it, so the IGD tests and the playground load a converted model in seconds.
"""
from __future__ import annotations

import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from agents.igd.local_model import resolve_model_folder


class Command(BaseCommand):
    help = "Convert the local model (LOCAL_LM_PATH, default Gemma 3 270M) once for fast loads."
    requires_system_checks: list = []

    def handle(self, *args, **options) -> None:
        started = time.perf_counter()
        try:
            folder = resolve_model_folder(path=settings.LOCAL_LM_PATH, cache_dir=Path(settings.LOCAL_LM_CACHE_DIR))
        except (FileNotFoundError, ValueError) as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"local model ready in {folder} ({time.perf_counter() - started:.0f}s)")
