"""Export the embedding model to ONNX (plain, optimised, int8) once, from the shipped weights."""
from django.core.management.base import BaseCommand

from articles.embeddings import onnx_export


class Command(BaseCommand):
    help = "Export the embedding model to ONNX into EMBEDDING_ONNX_DIR (done on first use otherwise)."

    def handle(self, *args, **options):
        for variant, path in onnx_export().items():
            self.stdout.write(f"{variant}: {path} ({path.stat().st_size / 1e6:.1f} MB)")
